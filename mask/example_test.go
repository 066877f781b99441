package mask_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/blackboardkernel/bk/mask"
)

// A keyring gives each trace its own key; a value hashes the same under
// one trace's key, and erasing the trace's key leaves its hashes matching
// nothing anyone can compute.
func ExampleKeys() {
	ctx := context.Background()
	ring := mask.NewKeys() // mask.OpenKeyDir(ctx, dir) keeps the keys in a directory
	defer ring.Close()

	key, _ := ring.Key(ctx, "", "ticket-7")
	a, _ := mask.Hash(key, "ada@example.com")
	b, _ := mask.Hash(key, "ada@example.com")
	fmt.Println(a == b, mask.Masked(a), mask.Masked("ada@example.com"))

	if err := ring.Erase(ctx, "", "ticket-7"); err != nil {
		fmt.Println(err)
	}
	_, err := ring.Key(ctx, "", "ticket-7")
	fmt.Println(errors.Is(err, mask.ErrErased))
	// Output:
	// true true false
	// true
}

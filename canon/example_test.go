package canon_test

import (
	"fmt"
	"math"

	"github.com/blackboardkernel/bk/canon"
)

func ExampleEncode() {
	b, _ := canon.Encode(map[string]any{"order": "ord_1", "amount": 20e-1, "refund": math.Copysign(0, -1)})
	fmt.Println(string(b))
	a, _ := canon.DigestJSON([]byte(`{"amount": 2}`))
	c, _ := canon.DigestJSON([]byte(`{"amount": 2.0e0}`))
	fmt.Println(a == c)
	// Output:
	// {"amount":2,"order":"ord_1","refund":0}
	// true
}

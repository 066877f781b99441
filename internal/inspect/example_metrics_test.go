package inspect_test

import (
	"fmt"

	"github.com/blackboardkernel/bk/internal/inspect"
)

// A rate prints its count; without a denominator it has no value.
func ExampleRate() {
	fmt.Println(inspect.Rate{Num: 2, Den: 3})
	fmt.Println(inspect.Rate{})
	_, ok := inspect.Rate{}.Value()
	fmt.Println(ok)
	// Output:
	// 66.7 % (2/3)
	// n/a (0/0)
	// false
}

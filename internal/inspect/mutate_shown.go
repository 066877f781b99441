//go:build bkmutate

package inspect

import "github.com/blackboardkernel/bk/internal/mutant"

// mutShown switches off the check of the compiled context a decision
// record names (the record's trace, slot, kind and writer, and its hash);
// see kernel/mutate.go for the scheme.
var mutShown bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/internal/inspect",
		mutant.Def{Name: "inspect.shown_context", Check: "bk explain shows as what the model saw only a compiled context the kernel recorded in the trace, and says whether its content matches its hash", On: &mutShown},
	)
}

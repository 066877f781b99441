//go:build bkmutate

package llm

import "github.com/blackboardkernel/bk/internal/mutant"

// The worker's mutation switches (see internal/mutant); the default build
// has them as false constants (nomutate.go).
var mutUsageSaturate bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/worker/llm",
		mutant.Def{Name: "llm.usage_saturate", Check: "summed token usage saturates instead of wrapping", On: &mutUsageSaturate})
}

// mutCompiledReal shows the last result in a compiled context as the
// model's conversation holds it, masked fields' real values included.
var mutCompiledReal bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/worker/llm",
		mutant.Def{Name: "llm.compiled_masked", On: &mutCompiledReal,
			Check: "a compiled context (a record) shows a masked output field of the last result as its masked form, never its real value"})
}

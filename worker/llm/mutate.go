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

//go:build bkmutate

package pack

import "github.com/blackboardkernel/bk/internal/mutant"

// Mutation switches of the compiler's checks on what a model is shown
// (see kernel/mutate.go for the scheme); the default build declares them
// as false constants (nomutate.go).
var (
	mutFlags      bool
	mutProhibited bool
	mutReadOnly   bool
)

func init() {
	mutant.Register("github.com/blackboardkernel/bk/pack",
		mutant.Def{Name: "pack.flagged_evidence", Check: "a stale, conflicted, superseded or invalidated record, and a belief resting on one, is shown flagged and \"not a current fact\", never as a current fact", On: &mutFlags},
		mutant.Def{Name: "pack.prohibited_tool", Check: "a tool the policy prohibits is never shown to the model, even when the caller passes it", On: &mutProhibited},
		mutant.Def{Name: "pack.read_only_tool", Check: "in a read_only run no tool with an effect is shown to the model (Govern prohibits each one)", On: &mutReadOnly},
	)
}

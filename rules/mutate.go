//go:build bkmutate

package rules

import "github.com/blackboardkernel/bk/internal/mutant"

// The rules' mutation switches (see internal/mutant).
var (
	mutStaticCost bool
	mutInputBound bool
)

func init() {
	mutant.Register("github.com/blackboardkernel/bk/rules",
		mutant.Def{Name: "rules.static_cost", Check: "a rule whose worst-case cost over bounded inputs exceeds the limit is refused by New (ErrInvalidRule)", On: &mutStaticCost},
		mutant.Def{Name: "rules.input_bound", Check: "a proposal, belief or percept beyond the bounds a rule may be given is refused before any rule runs (RULE_INPUT_TOO_LARGE)", On: &mutInputBound},
	)
}

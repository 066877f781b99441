//go:build bkmutate

package toolgate

import "github.com/blackboardkernel/bk/internal/mutant"

// Mutation switches of the hints the gate words for a model (see
// internal/mutant); the default build declares them as false constants
// (nomutate_hints.go).
var mutDuplicateHint bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/toolgate",
		mutant.Def{Name: "toolgate.duplicate_hint", Check: "a DUPLICATE_ACTION hint says the action was taken only when its holder executed (pending, running, refused otherwise)", On: &mutDuplicateHint},
	)
}

// mutRawErrorHint puts an effect's error text in its hint, as it was.
var mutRawErrorHint bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/toolgate",
		mutant.Def{Name: "toolgate.raw_error_hidden", On: &mutRawErrorHint,
			Check: "an effect's raw error text (a panic's message, a stack trace) never reaches the model: the hint and Result.ForModel carry the code and the failure's kind"})
}

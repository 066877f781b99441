//go:build bkmutate

package ledger

import "github.com/blackboardkernel/bk/internal/mutant"

// mutMissingTrace lets a trace a checkpoint names be gone from the store
// unremarked: a dropped trace verifies.
var mutMissingTrace bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/internal/ledger",
		mutant.Def{Name: "ledger.missing_trace", Check: "a trace a checkpoint names must be in the store (a dropped trace)", On: &mutMissingTrace, ByTests: true},
	)
}

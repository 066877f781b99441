//go:build bkmutate

package budget

import "github.com/blackboardkernel/bk/internal/mutant"

// The budget's mutation switches: each disables one check (see
// internal/mutant).
var (
	mutCanonicalDigest bool
	mutSaturate        bool
	mutOverrun         bool
)

func init() {
	mutant.Register("github.com/blackboardkernel/bk/budget",
		mutant.Def{Name: "budget.canonical_digest", Check: "the loop guard identifies a call by the canonical digest of its arguments: every spelling of one call is one call (LOOP_DETECTED)", On: &mutCanonicalDigest,
			Also: []string{"github.com/blackboardkernel/bk/toolgate"}},
		mutant.Def{Name: "budget.saturate", Check: "counters and sums saturate instead of wrapping, and a negative running total is counted as the maximum (BUDGET_EXCEEDED)", On: &mutSaturate},
		mutant.Def{Name: "budget.overrun", Check: "usage recorded beyond a token or cost limit ends the run: the charge and every later request are refused (BUDGET_EXCEEDED)", On: &mutOverrun},
	)
}

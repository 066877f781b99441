//go:build bkmutate

package kernel

import "github.com/blackboardkernel/bk/internal/mutant"

// Mutation switches of exact grounding and reserved kinds (issue 36; see
// mutate.go for the scheme). The study's adversary plays a planner on a
// kernel that reserves nothing and derives no belief, so only tests judge
// them.
var (
	mutExactGrounding  bool
	mutReservedBeliefs bool
	mutReservedActions bool
)

func init() {
	mutant.Register("github.com/blackboardkernel/bk/kernel",
		mutant.Def{Name: "exact_grounding", Check: "a belief that names its evidence by record id grounds a plan or action only while that record is the current observation of its kind (SUPERSEDED_EVIDENCE)", On: &mutExactGrounding,
			ByTests: true, Also: []string{"github.com/blackboardkernel/bk/toolgate", "github.com/blackboardkernel/bk/examples/support_desk"}},
		mutant.Def{Name: "reserved_beliefs", Check: "a belief kind reserved to governance code (a tool's derived belief) is proposed only by the Governor as its writer (PERMISSION_DENIED)", On: &mutReservedBeliefs,
			ByTests: true, Also: []string{"github.com/blackboardkernel/bk/toolgate"}},
		mutant.Def{Name: "reserved_actions", Check: "an action type reserved to governance code (a tool's) is proposed only by the Governor as one of its writers, so no other commit holds its once-key (PERMISSION_DENIED)", On: &mutReservedActions,
			ByTests: true, Also: []string{"github.com/blackboardkernel/bk/toolgate"}},
	)
}

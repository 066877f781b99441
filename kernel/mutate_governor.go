//go:build bkmutate

package kernel

import "github.com/blackboardkernel/bk/internal/mutant"

// Mutation switches of the governance capability and of deciding a
// committed action's evidence again (see mutate.go for the scheme).
var (
	mutGovernedKeys   bool
	mutRecheckCurrent bool
)

func init() {
	mutant.Register("github.com/blackboardkernel/bk/kernel",
		mutant.Def{Name: "governed_keys", Check: "only the Governor claims once-keys: a handle's write with OnceKeys is refused (PERMISSION_DENIED)", On: &mutGovernedKeys,
			ByTests: true, Also: []string{"github.com/blackboardkernel/bk/toolgate"}},
		mutant.Def{Name: "recheck_current", Check: "RecheckAction: a committed action's beliefs and observations are still the current ones (SUPERSEDED_EVIDENCE)", On: &mutRecheckCurrent,
			ByTests: true, Also: []string{"github.com/blackboardkernel/bk/toolgate"}},
	)
}

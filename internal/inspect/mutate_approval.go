//go:build bkmutate

package inspect

import "github.com/blackboardkernel/bk/internal/mutant"

// mutApproverView disables reading a pending approval's arguments from the
// committed action (see kernel/mutate.go for the scheme).
var mutApproverView bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/internal/inspect",
		mutant.Def{Name: "inspect.approver_view", Check: "bk approvals shows a committed action's own kind and arguments, never a decision record's context", On: &mutApproverView},
	)
}

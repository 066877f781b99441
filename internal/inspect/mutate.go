//go:build bkmutate

package inspect

import "github.com/blackboardkernel/bk/internal/mutant"

// The inspector's mutation switches (see kernel/mutate.go for the scheme);
// the default build declares them as false constants (nomutate.go).
var (
	// mutApproverView lists a pending approval with the arguments its
	// decision record's context describes, not the committed action's own.
	mutApproverView bool
	// mutApprovePending lets bk approve and bk deny decide an action that
	// no longer waits for approval.
	mutApprovePending bool
	// mutInertText switches off the escaping of stored text ([Inert],
	// [InertJSON]).
	mutInertText bool
	// mutShown switches off the check of the compiled context a decision
	// record names (the record's trace, slot, kind and writer, and its
	// hash).
	mutShown bool
)

func init() {
	mutant.Register("github.com/blackboardkernel/bk/internal/inspect",
		mutant.Def{Name: "inspect.approver_view", Check: "bk approvals shows a committed action's own kind and arguments, never a decision record's context", On: &mutApproverView},
		mutant.Def{Name: "inspect.approve_pending", Check: "bk approve and bk deny decide only an action waiting for approval: one already decided, started or done is refused and nothing is written", On: &mutApprovePending},
		mutant.Def{Name: "inspect.inert_text", Check: "stored text is printed inert: no control character, C1 control or bidirectional control reaches the operator's terminal", On: &mutInertText},
		mutant.Def{Name: "inspect.shown_context", Check: "bk explain shows as what the model saw only a compiled context the kernel recorded in the trace, and says whether its content matches its hash", On: &mutShown},
	)
}

//go:build bkmutate

package toolgate

import "github.com/blackboardkernel/bk/internal/mutant"

// Mutation switches of the approval path (see kernel/mutate.go for the
// scheme): each disables one check, so that a test run shows something
// notices.
var (
	mutRecheckEvidence          bool
	mutApproverView             bool
	mutRecheckYields            bool
	mutApprovalDigest           bool
	mutApproverCaller           bool
	mutApprovalClaim            bool
	mutEscalationClaimsApproval bool
)

func init() {
	mutant.Register("github.com/blackboardkernel/bk/toolgate",
		mutant.Def{Name: "toolgate.recheck_evidence", Check: "an action that waited is decided again before its first attempt: stale, superseded or used-up evidence, or a rule that no longer holds, refuses it for good (STALE_EVIDENCE, ...)", On: &mutRecheckEvidence},
		mutant.Def{Name: "toolgate.recheck_yields", Check: "a recheck refusal claims the first attempt's key too, so it never becomes the result of an attempt another driver started", On: &mutRecheckYields},
		mutant.Def{Name: "toolgate.approver_caller", Check: "an approver named as the gate caller that proposed the action (its writer is caller:NAME) cannot decide it (ErrPermission), whether through Approve, bk approve or bk serve", On: &mutApproverCaller,
			Also: []string{"github.com/blackboardkernel/bk/inspect", "github.com/blackboardkernel/bk/inspect/console"}},
		mutant.Def{Name: "toolgate.approval_claim", Check: "a decision on an action claims a once-key of (action, the decision it supersedes) in its own batch: of decisions made at once over one store exactly one is written, the others are ErrDecided", On: &mutApprovalClaim},
		mutant.Def{Name: "toolgate.escalation_claim", Check: "the escalation of an expired approval claims the approval's use, as a new decision superseding it does: a driver that read the approval as the latest cannot escalate the action beside a fresh approval", On: &mutEscalationClaimsApproval},
		mutant.Def{Name: "toolgate.approval_digest", Check: "an approval or denial binds the digest of the action's committed arguments: another digest is refused (ErrInvalidInput) and nothing is recorded or run", On: &mutApprovalDigest},
		mutant.Def{Name: "toolgate.approver_view", Check: "Pending shows a committed action of the gate's, its tool and arguments read from the action itself, never from a decision record's context", On: &mutApproverView},
	)
}

package inspect

import (
	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// fallbackTypes returns the action types recs show to be safe fallbacks:
// the types of the actions the kernel committed resting on no belief,
// but for the tools' own. The kernel commits an action on no belief only
// when its type is registered as a safe fallback
// ([kernel.ActionSpec.SafeFallback]; any other is UNGROUNDED_ACTION), so
// the type is known from what the kernel did, not from what an action's
// arguments are called. The tool-call gate registers its read-only tools
// so too, to let them run on no belief: a type whose actions a tool ran
// (an effect record about one of them, or a decision record of a call of
// it executed, failed or waiting for approval) is a tool's, not a
// fallback. A store does not hold the kernel's action specs; this is the
// record of them it has.
func fallbackTypes(recs []blackboard.Record) map[string]bool {
	out := map[string]bool{}
	tools := map[string]bool{}
	kindOf := map[string]string{} // committed action id -> type
	for i := range recs {
		r := &recs[i]
		switch {
		case isKernelCommit(r) && r.Slot == blackboard.Actions:
			kindOf[r.ID] = r.Kind
			if len(list(r.Payload, "requires_beliefs")) == 0 {
				out[r.Kind] = true
			}
		case r.Slot == blackboard.Percepts:
			if e, ok := audit.EffectOf(*r); ok && kindOf[e.ActionID] != "" {
				tools[kindOf[e.ActionID]] = true
			}
		case isDecisionRecord(r):
			if d, ok := audit.Of(*r); ok {
				switch d.Outcome {
				case audit.OutcomeExecuted, audit.OutcomeFailed, audit.OutcomePendingApproval:
					tools[d.Kind] = true
				}
			}
		}
	}
	for t := range tools {
		delete(out, t)
	}
	return out
}

// isKernelCommit reports whether r is a record the kernel committed (a
// belief, plan, prediction or action; not its evidence).
func isKernelCommit(r *blackboard.Record) bool {
	return r.Mode == blackboard.ModeCommit && r.Provenance.Role == blackboard.RoleKernel && r.Slot != blackboard.Evidence
}

// isDecisionRecord reports whether r is a decision record the kernel's
// Governor wrote (the audit log).
func isDecisionRecord(r *blackboard.Record) bool {
	return r.Slot == blackboard.Evidence && r.Kind == audit.Kind && r.Provenance.Role == blackboard.RoleKernel
}

// denialOf returns the approval that denied the committed action r, if a
// person denied it (r is then invalidated with APPROVAL_DENIED).
func denialOf(recs []blackboard.Record, from int, r *blackboard.Record) (audit.Approval, bool) {
	for i := from; i < len(recs); i++ {
		c := &recs[i]
		if c.Slot == blackboard.Evidence && c.Kind == audit.KindApproval {
			if a, ok := audit.ApprovalOf(*c); ok && a.ActionID == r.ID && a.Decision == audit.Denied {
				return a, true
			}
		}
	}
	return audit.Approval{}, false
}

// denialCause is a denial as a cause: the code, the approval record, and
// who denied with the note.
func denialCause(a audit.Approval) kernel.Cause {
	detail := "denied by " + a.Approver
	if a.Note != "" {
		detail += ": " + a.Note
	}
	return kernel.Cause{Code: reason.ApprovalDenied, Record: a.ID, Detail: detail}
}

// escalated reports whether r is the tool-call gate's record of an
// escalation (a denial, an expired approval, a failure handed to a person).
func escalated(r *blackboard.Record) bool {
	e, ok := audit.EffectOf(*r)
	return ok && e.Status == audit.StatusEscalated
}

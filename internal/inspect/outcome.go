package inspect

import (
	"strconv"
	"strings"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
)

// Fate is what happened to one action of a trace, as its outcome counts
// it ([ActionOutcome]).
type Fate string

// The fates of an action.
const (
	FateExecuted  Fate = "executed"  // its effect ran and succeeded
	FateFailed    Fate = "failed"    // its effect failed for good (or was refused for good)
	FateDenied    Fate = "denied"    // a person denied it
	FateExpired   Fate = "expired"   // its approval, or the action, ran out of time
	FatePending   Fate = "pending"   // committed, waiting for an approver
	FateApproved  Fate = "approved"  // approved, its effect not yet recorded
	FateRunning   Fate = "running"   // an attempt is recorded, no result yet
	FateEscalated Fate = "escalated" // handed to a person for another reason
	FateRetired   Fate = "retired"   // taken back after its commit, never run
	FateCommitted Fate = "committed" // committed; nothing ran it (a fallback, or no tool gate)
	FateRefused   Fate = "refused"   // the kernel, the gate, a contract or a budget refused it
	FateProposed  Fate = "proposed"  // proposed, not decided yet
)

// ActionOutcome is how many actions of one type in a trace came to one
// fate.
type ActionOutcome struct {
	Type  string `json:"type"`
	Fate  Fate   `json:"fate"`
	Count int    `json:"count"`
}

// actionAfter is what followed a committed action in its trace.
type actionAfter struct {
	effect            *audit.Effect // the last result, failure, refusal or escalation
	attempted         bool          // an attempt is recorded
	pending, approved bool          // it waits for an approver; one approved it
}

// actionOutcomes says what happened to each action of a trace, counted by
// type and fate, in the order the types first appear and, within a type,
// the order its fates first appear: every action proposal the kernel
// refused or has not decided, every call refused before it reached the
// kernel (a decision record about no record), and every
// committed action by what followed it: its effect's result, a denial,
// an expiry or retirement, an approval awaited or given.
func actionOutcomes(recs []blackboard.Record) []ActionOutcome {
	var out []ActionOutcome
	add := func(typ string, fate Fate) {
		for i := range out {
			if out[i].Type == typ && out[i].Fate == fate {
				out[i].Count++
				return
			}
		}
		// Keep a type's fates together, after its last one.
		at := len(out)
		for i := len(out) - 1; i >= 0; i-- {
			if out[i].Type == typ {
				at = i + 1
				break
			}
		}
		out = append(out[:at], append([]ActionOutcome{{Type: typ, Fate: fate, Count: 1}}, out[at:]...)...)
	}
	follows := followers(recs)
	for i := range recs {
		r := &recs[i]
		switch {
		case r.Slot == blackboard.Actions && r.Mode == blackboard.ModePropose:
			switch {
			case r.Reason == reason.SupersededByCommit:
				// counted by its commit
			case r.Status == blackboard.StatusInvalidated:
				add(r.Kind, FateRefused)
			case r.Status == blackboard.StatusExpired:
				add(r.Kind, FateExpired)
			default:
				add(r.Kind, FateProposed)
			}
		case r.Slot == blackboard.Actions && isKernelCommit(r):
			add(r.Kind, committedFate(r, follows[r.ID]))
		case isDecisionRecord(r):
			// A call refused before it reached the kernel has no proposal
			// to count it by.
			if d, ok := audit.Of(*r); ok && d.Outcome == audit.OutcomeRefused && d.Subject == "" {
				add(d.Kind, FateRefused)
			}
		}
	}
	return out
}

// followers reads what followed each committed action of recs, by the
// action's id.
func followers(recs []blackboard.Record) map[string]*actionAfter {
	follows := map[string]*actionAfter{}
	get := func(id string) *actionAfter {
		a := follows[id]
		if a == nil {
			a = &actionAfter{}
			follows[id] = a
		}
		return a
	}
	for i := range recs {
		r := &recs[i]
		switch {
		case r.Slot == blackboard.Percepts:
			if e, ok := audit.EffectOf(*r); ok && e.ActionID != "" {
				a := get(e.ActionID)
				if e.Status == audit.StatusAttempted {
					a.attempted = true
				} else {
					a.effect = &e
				}
			}
		case isDecisionRecord(r):
			if d, ok := audit.Of(*r); ok && d.Outcome == audit.OutcomePendingApproval && d.Subject != "" {
				get(d.Subject).pending = true
			}
		case r.Slot == blackboard.Evidence && r.Kind == audit.KindApproval:
			if ap, ok := audit.ApprovalOf(*r); ok && ap.Decision == audit.Approved {
				get(ap.ActionID).approved = true
			}
		}
	}
	return follows
}

// committedFate is what became of a committed action r, given what
// followed it (nil: nothing did).
func committedFate(r *blackboard.Record, a *actionAfter) Fate {
	if a != nil && a.effect != nil {
		switch a.effect.Status {
		case audit.StatusSucceeded:
			return FateExecuted
		case audit.StatusFailed, audit.StatusRefused:
			return FateFailed
		case audit.StatusEscalated:
			return fateOfCode(a.effect.Code, FateEscalated)
		}
	}
	switch {
	case r.Status == blackboard.StatusInvalidated:
		return fateOfCode(r.Reason, FateRetired)
	case r.Status == blackboard.StatusExpired:
		return FateExpired
	case a == nil:
		return FateCommitted
	case a.attempted:
		return FateRunning
	case a.approved:
		return FateApproved
	case a.pending:
		return FatePending
	}
	return FateCommitted
}

// fateOfCode names the fate an escalation or invalidation code means.
func fateOfCode(code reason.Code, otherwise Fate) Fate {
	switch code {
	case reason.ApprovalDenied:
		return FateDenied
	case reason.ApprovalExpired:
		return FateExpired
	}
	return otherwise
}

// outcomeText is a trace's outcome in one line: "lookup_order executed;
// issue_refund refused, denied; send_email executed", a count after a
// fate that happened more than once ("executed ×2"), or "no action".
func outcomeText(outs []ActionOutcome) string {
	if len(outs) == 0 {
		return "no action"
	}
	var sb strings.Builder
	for i, o := range outs {
		switch {
		case i == 0:
			sb.WriteString(o.Type + " ")
		case outs[i-1].Type == o.Type:
			sb.WriteString(", ")
		default:
			sb.WriteString("; " + o.Type + " ")
		}
		sb.WriteString(string(o.Fate))
		if o.Count > 1 {
			sb.WriteString(" ×" + strconv.Itoa(o.Count))
		}
	}
	return sb.String()
}

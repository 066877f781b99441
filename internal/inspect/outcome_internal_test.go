package inspect

import (
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
)

// TestCommittedFate: what became of a committed action, from what
// followed it: the effect's result first, then the code that took it
// back, then an approval awaited or given.
func TestCommittedFate(t *testing.T) {
	active := &blackboard.Record{Status: blackboard.StatusActive}
	taken := func(code reason.Code) *blackboard.Record {
		return &blackboard.Record{Status: blackboard.StatusInvalidated, Reason: code}
	}
	effect := func(status string, code reason.Code) *actionAfter {
		return &actionAfter{effect: &audit.Effect{Status: status, Code: code}, attempted: true}
	}
	for _, tc := range []struct {
		name string
		r    *blackboard.Record
		a    *actionAfter
		want Fate
	}{
		{"nothing followed", active, nil, FateCommitted},
		{"succeeded", active, effect(audit.StatusSucceeded, reason.EffectSucceeded), FateExecuted},
		{"failed", active, effect(audit.StatusFailed, "RETRIES_EXHAUSTED"), FateFailed},
		{"refused for good", taken("TOOL_REFUSED"), effect(audit.StatusRefused, "TOOL_REFUSED"), FateFailed},
		{"denied", taken(reason.ApprovalDenied), effect(audit.StatusEscalated, reason.ApprovalDenied), FateDenied},
		{"approval expired", taken(reason.ApprovalExpired), effect(audit.StatusEscalated, reason.ApprovalExpired), FateExpired},
		{"escalated otherwise", active, effect(audit.StatusEscalated, "EFFECT_INCOMPLETE"), FateEscalated},
		{"denied, no effect recorded", taken(reason.ApprovalDenied), nil, FateDenied},
		{"retired", taken("SOMETHING_ELSE"), nil, FateRetired},
		{"expired", &blackboard.Record{Status: blackboard.StatusExpired}, nil, FateExpired},
		{"waits", active, &actionAfter{pending: true}, FatePending},
		{"approved", active, &actionAfter{pending: true, approved: true}, FateApproved},
		{"running", active, &actionAfter{pending: true, approved: true, attempted: true}, FateRunning},
	} {
		if got := committedFate(tc.r, tc.a); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestOutcomeText: fates of a type stay together, in the order they first
// appear, with a count when there is more than one.
func TestOutcomeText(t *testing.T) {
	if got := outcomeText(nil); got != "no action" {
		t.Errorf("no actions: %q", got)
	}
	outs := []ActionOutcome{{"lookup_order", FateExecuted, 2}, {"issue_refund", FateRefused, 1}, {"issue_refund", FateDenied, 1}, {"send_email", FateExecuted, 1}}
	if got, want := outcomeText(outs), "lookup_order executed ×2; issue_refund refused, denied; send_email executed"; got != want {
		t.Errorf("outcome %q, want %q", got, want)
	}
}

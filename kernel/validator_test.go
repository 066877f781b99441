package kernel_test

import (
	"context"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// refundCap rejects refunds above 100 unless a committed belief
// manager_approved is on the board: a domain rule with its own code.
const codeOverCap = reason.Code("REFUND_OVER_CAP")

func refundCap(_ context.Context, c kernel.Candidate) kernel.Cause {
	if c.Proposal().Slot != blackboard.Actions || c.Proposal().Kind != "issue_refund" {
		return kernel.Cause{}
	}
	amount, _ := c.Proposal().Payload.Float("amount")
	if _, approved := c.Committed(blackboard.Beliefs, "manager_approved"); amount > 100 && !approved {
		return kernel.Cause{Code: codeOverCap, Rule: "refund_cap", Detail: "over 100 without approval"}
	}
	return kernel.Cause{}
}

func TestCustomValidator(t *testing.T) {
	var seen []blackboard.Slot
	record := kernel.ValidatorFunc(func(_ context.Context, c kernel.Candidate) kernel.Cause {
		seen = append(seen, c.Proposal().Slot)
		if p := c.Proposal(); p.Mode != blackboard.ModePropose || p.Kind != c.Proposal().Kind {
			t.Errorf("candidate proposal %+v", p)
		}
		return kernel.Cause{}
	})
	// Repeatable: the same belief grounds the second refund.
	f := newFixtureWith(t, kernel.Config{Validators: []kernel.Validator{record, kernel.ValidatorFunc(refundCap)}, ActionSpecs: []kernel.ActionSpec{{Type: "issue_refund", Repeatable: true}}})
	f.groundedBelief(tr)
	for _, tc := range []struct {
		amount float64
		want   reason.Code
	}{{250, codeOverCap}, {50, reason.Committed}} {
		d := f.mustPropose(tr, blackboard.Actions, "issue_refund", with(action("refund_due"), "amount", tc.amount))
		if d.Code != tc.want {
			t.Errorf("refund of %v: %s, want %s", tc.amount, d.Code, tc.want)
		}
	}
	// Built-in rejections never reach custom validators.
	if d := f.mustPropose(tr, blackboard.Actions, "issue_refund", action("missing")); d.Code != reason.NoCommittedBelief {
		t.Errorf("ungrounded refund: %s", d.Code)
	}
	f.perceive(tr, "approval", nil, nil, 0)
	f.mustPropose(tr, blackboard.Beliefs, "manager_approved", belief(true, "approval"))
	if d := f.mustPropose(tr, blackboard.Actions, "issue_refund", with(action("refund_due"), "amount", 250.0)); d.Code != reason.Committed {
		t.Errorf("approved refund: %s", d.Code)
	}
	want := []blackboard.Slot{blackboard.Beliefs, blackboard.Actions, blackboard.Actions, blackboard.Beliefs, blackboard.Actions}
	if len(seen) != len(want) {
		t.Fatalf("validator saw %v, want %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Errorf("validator saw %v, want %v", seen, want)
		}
	}
}

// TestValidatorReturningOKCode: a validator that answers COMMITTED (or
// PLAN_FEASIBLE) means "no objection"; the kernel must not take it as a
// decision without a record.
func TestValidatorReturningOKCode(t *testing.T) {
	for _, code := range []reason.Code{reason.Committed, reason.PlanFeasible} {
		f := newFixtureWith(t, kernel.Config{Validators: []kernel.Validator{kernel.ValidatorFunc(func(context.Context, kernel.Candidate) kernel.Cause { return kernel.Cause{Code: code} })}})
		d := f.groundedBelief(tr)
		if d.CommittedID == "" || d.EvidenceID == "" {
			t.Errorf("validator answering %s: belief decision %+v", code, d)
		}
		if d := f.mustPropose(tr, blackboard.Plans, "p", plan(step("issue_refund", "refund_due"))); d.Code != reason.PlanFeasible {
			t.Errorf("validator answering %s: plan %s", code, d.Code)
		}
	}
}

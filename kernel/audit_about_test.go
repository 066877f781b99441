package kernel_test

import (
	"errors"
	"testing"

	"github.com/blackboardkernel/bk/kernel"
)

// A governed submit or write names the decision record it appended, and
// DecisionAbout finds that record from its subject's id, by id: for a
// committed action, a refused proposal, a committed belief (whose evidence
// artifact lands between the two) and an effect's result. A record without
// such a decision record (even one a standalone decision record is about),
// a decision record, an id that names no record and another namespace's
// record find nothing.
func TestDecisionAbout(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		gov := a.k.Governor()
		audit := func() *kernel.Audit { return &kernel.Audit{Context: kernel.Payload{"tool": "issue_refund"}} }
		charge := a.percept("t", "charge", kernel.Payload{"order_id": "A1", "amount": 100.0}, nil, 0)
		belief, err := gov.Submit(a.ctx, "llm", kernel.Entry{TraceID: "t", Slot: kernel.Beliefs, Kind: "refund_due",
			Payload: belief(true, "charge"), Audit: audit()})
		if err != nil || !belief.Committed() || belief.EvidenceID == "" {
			t.Fatalf("belief: %+v %v", belief, err)
		}
		refused, err := gov.Submit(a.ctx, "llm", kernel.Entry{TraceID: "t", Slot: kernel.Actions, Kind: "issue_refund",
			Payload: action("refund_due", "other_belief"), Audit: audit()})
		if err != nil || refused.Committed() {
			t.Fatalf("refused refund: %+v %v", refused, err)
		}
		act, err := gov.Submit(a.ctx, "llm", kernel.Entry{TraceID: "t", Slot: kernel.Actions, Kind: "issue_refund",
			Payload: action("refund_due"), Audit: &kernel.Audit{PendingApproval: true, Context: kernel.Payload{"tool": "issue_refund"}}})
		if err != nil || !act.Committed() {
			t.Fatalf("refund: %+v %v", act, err)
		}
		res, err := gov.Write(a.ctx, "payments", kernel.Entry{TraceID: "t", Slot: kernel.Percepts, Kind: "refund_result",
			InputRefs: []string{act.Record.ID}, Audit: &kernel.Audit{Outcome: kernel.OutcomeExecuted, Code: "EFFECT_SUCCEEDED"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.k.RecordDecision(a.ctx, kernel.DecisionRecord{TraceID: "t", Kind: "charge", Subject: charge.ID,
			Outcome: kernel.OutcomeRefused, Code: "TOOL_NOT_PERMITTED"}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			what, subject, id, recordID string
			outcome                     kernel.Outcome
		}{
			{"belief", belief.Record.ID, belief.ID, belief.AuditID, kernel.OutcomeCommitted},
			{"refusal", refused.ProposalID, refused.ID, refused.AuditID, kernel.OutcomeRefused},
			{"action", act.Record.ID, act.ID, act.AuditID, kernel.OutcomePendingApproval},
			{"result", res.Record.ID, res.DecisionID, res.AuditID, kernel.OutcomeExecuted},
		} {
			d, err := a.k.DecisionAbout(a.ctx, c.subject)
			if err != nil || d.ID != c.id || d.RecordID != c.recordID || d.Subject != c.subject || d.Outcome != c.outcome {
				t.Errorf("%s: DecisionAbout(%s) = %+v, %v; want %s in %s, %s", c.what, c.subject, d, err, c.id, c.recordID, c.outcome)
			}
		}
		other, err := kernel.New(kernel.WithStore(a.store), kernel.WithNamespace("other"))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			what, subject string
			k             *kernel.Kernel
		}{
			{"a percept written without an Audit, which a standalone decision record is about", charge.ID, a.k},
			{"the proposal of a committed action", act.ProposalID, a.k},
			{"a decision record", res.AuditID, a.k},
			{"an id of no record", "actions:t:999", a.k},
			{"a string that is no record id", "t:7", a.k},
			{"a position that is not a number", "actions:t:x", a.k},
			{"another namespace's record", act.Record.ID, other},
		} {
			if d, err := c.k.DecisionAbout(a.ctx, c.subject); !errors.Is(err, kernel.ErrNotFound) {
				t.Errorf("%s: DecisionAbout(%s) = %+v, %v; want ErrNotFound", c.what, c.subject, d, err)
			}
		}
	}, kernel.WithActionSpecs(kernel.ActionSpec{Type: "issue_refund", MinBeliefs: []string{"refund_due"}}))
}

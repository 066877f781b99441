package kernel_test

import (
	"testing"

	"github.com/blackboardkernel/bk/kernel"
)

// An executor records an effect's result as a percept of the result's kind,
// but the decision record is about the action: Audit.Kind names it, so a
// query by action type finds the call's whole chain.
func TestAuditKindOnWrite(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		gov := a.k.Governor()
		res, err := gov.Write(a.ctx, "payments", kernel.Entry{TraceID: "t", Slot: kernel.Percepts, Kind: "refund_result",
			Payload: kernel.Payload{"status": "succeeded"},
			Audit:   &kernel.Audit{Outcome: kernel.OutcomeExecuted, Code: "EFFECT_SUCCEEDED", Kind: "issue_refund"}})
		if err != nil {
			t.Fatal(err)
		}
		plain, err := gov.Write(a.ctx, "payments", kernel.Entry{TraceID: "t", Slot: kernel.Percepts, Kind: "order",
			Audit: &kernel.Audit{Outcome: kernel.OutcomeExecuted, Code: "EFFECT_SUCCEEDED"}})
		if err != nil {
			t.Fatal(err)
		}
		var got []kernel.DecisionRecord
		for d, err := range a.k.DecisionRecords(a.ctx, kernel.DecisionFilter{TraceID: "t", Kind: "issue_refund"}) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, d)
		}
		if len(got) != 1 || got[0].Subject != res.Record.ID {
			t.Errorf("records of kind issue_refund: %+v, want the one about %s", got, res.Record.ID)
		}
		n := 0
		for d := range a.k.DecisionRecords(a.ctx, kernel.DecisionFilter{Kind: "order"}) {
			if d.Subject != plain.Record.ID {
				t.Errorf("record of kind order about %s, want %s", d.Subject, plain.Record.ID)
			}
			n++
		}
		if n != 1 {
			t.Errorf("%d records of kind order, want 1 (the write's own kind without Audit.Kind)", n)
		}
	})
}

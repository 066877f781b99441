package toolgate

import (
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/store"
)

// lastDecision reads, from the store's chain, the link of the trace's
// last decision record.
func lastDecision(t *testing.T, s store.Store, trace string) (chain.Hash, bool) {
	t.Helper()
	cs, ok := s.(store.Chainer)
	if !ok {
		return chain.Hash{}, false
	}
	var out chain.Hash
	found := false
	for e, err := range cs.Chain(t.Context(), "", trace) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Op == chain.OpAppend && e.Record.Kind == audit.Kind {
			out, found = e.Link, true
		}
	}
	return out, found
}

// Every Result of a call that appended a decision record carries that
// record's chain link, as the store holds it: a refusal, an executed
// call, a call waiting for approval and the Execute that ran it.
func TestResultReceipt(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		check := func(what string, res Result) {
			t.Helper()
			want, ok := lastDecision(t, d.store, "r1")
			if !ok {
				t.Fatalf("%s: the store's chain holds no decision record", what)
			}
			if res.Receipt != want {
				t.Errorf("%s: receipt %s, the store's link is %s", what, res.Receipt, want)
			}
		}
		refused := d.refund("r1", "A-1", 10) // no refund_due yet
		wantOutcome(t, "ungrounded refund", refused, audit.OutcomeRefused, refused.Code)
		check("refusal", refused)
		d.ground("r1", "A-1")
		big := d.refund("r1", "A-1", 900)
		wantOutcome(t, "large refund", big, audit.OutcomePendingApproval, big.Code)
		check("pending approval", big)
		d.approve("r1", big.ActionID, "person:ana", 0)
		ran := d.execute(big.ActionID)
		check("execute", ran)
		if ran.Receipt == big.Receipt {
			t.Error("two decisions, one receipt")
		}
	})
}

package toolgate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/toolgate"
)

// boundDesk is the support desk of the examples: issue_refund is bound to
// the order its refund_due belief rests on (its order_id, at most its
// amount, 700).
type boundDesk struct {
	t       *testing.T
	k       *kernel.Kernel
	g       *toolgate.Gate
	refunds int
}

func newBoundDesk(t *testing.T) *boundDesk {
	d := &boundDesk{t: t}
	d.k, d.g = supportDesk(&d.refunds)
	t.Cleanup(func() { d.k.Close() })
	return d
}

func (d *boundDesk) call(trace, tool, args string) toolgate.Result {
	d.t.Helper()
	res, err := d.g.Call(context.Background(), toolgate.Call{Tool: tool, Args: json.RawMessage(args), Caller: "support", TraceID: trace})
	if err != nil {
		d.t.Fatalf("%s %s: %v", tool, args, err)
	}
	return res
}

// lookup looks the order up and returns the percept that recorded it.
func (d *boundDesk) lookup(trace, order string) string {
	d.t.Helper()
	res := d.call(trace, "lookup_order", `{"order_id":"`+order+`"}`)
	if res.Outcome != audit.OutcomeExecuted {
		d.t.Fatalf("lookup_order %s: %+v", order, res)
	}
	for dr, err := range audit.List(context.Background(), d.g.Kernel().Reader(), audit.Query{TraceID: trace, Outcome: audit.OutcomeExecuted}) {
		if err != nil {
			d.t.Fatal(err)
		}
		if dr.ID == res.DecisionID {
			return dr.Subject
		}
	}
	d.t.Fatalf("no result record for the lookup of %s", order)
	return ""
}

// believe commits refund_due on the trace's current order.
func (d *boundDesk) believe(trace string) {
	d.t.Helper()
	dec, err := d.k.Proposer(blackboard.RolePlanner, "analyst").Submit(context.Background(), kernel.Entry{TraceID: trace, Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}})
	if err != nil || !dec.Committed() {
		d.t.Fatalf("refund_due: %v %v", dec.Code, err)
	}
}

func (d *boundDesk) refund(trace, order string, amount float64) toolgate.Result {
	d.t.Helper()
	return d.call(trace, "issue_refund", fmt.Sprintf(`{"order_id":%q,"amount":%v}`, order, amount))
}

// wantUnbound checks an ARGUMENT_NOT_BOUND refusal naming the argument
// and the percept, in the result and in its decision record.
func (d *boundDesk) wantUnbound(what string, res toolgate.Result, trace, arg, percept string) {
	d.t.Helper()
	if res.Outcome != audit.OutcomeRefused || res.Code != reason.ArgumentNotBound {
		d.t.Errorf("%s: %s %s (%+v), want refused ARGUMENT_NOT_BOUND", what, res.Outcome, res.Code, res.RootCause)
		return
	}
	if res.RootCause.Record != percept && res.RootCause.Record != res.ActionID || !strings.Contains(res.RootCause.Detail, arg) ||
		!strings.Contains(res.RootCause.Detail, percept) {
		d.t.Errorf("%s: root cause %+v, want it to name %s and %s", what, res.RootCause, arg, percept)
	}
	found := false
	for dr, err := range audit.List(context.Background(), d.g.Kernel().Reader(), audit.Query{TraceID: trace}) {
		if err != nil {
			d.t.Fatal(err)
		}
		if dr.ID == res.DecisionID {
			found = dr.Code == reason.ArgumentNotBound && dr.Context["argument"] == arg && dr.Context["percept"] == percept
		}
	}
	if !found {
		d.t.Errorf("%s: no decision record naming argument %s and percept %s", what, arg, percept)
	}
}

// TestAttackArgumentsBoundToEvidence: inside a ticket whose lookup and
// belief were about ord_10, a hostile model refunds ord_1, before and
// after looking ord_1 up too, and more than ord_10's amount. Every such
// refund is refused with ARGUMENT_NOT_BOUND, naming the argument and the
// percept; a refund of ord_10 within its amount then runs, once.
func TestAttackArgumentsBoundToEvidence(t *testing.T) {
	d := newBoundDesk(t)
	const trace = "ticket-ord10"
	ord10 := d.lookup(trace, "ord_10")
	d.believe(trace)
	d.wantUnbound("a refund of another order", d.refund(trace, "ord_1", 89), trace, "order_id", ord10)
	// Looking the other order up makes it the current order percept, but
	// the belief still rests on ord_10's.
	d.lookup(trace, "ord_1")
	d.wantUnbound("a refund of an order looked up after the belief", d.refund(trace, "ord_1", 89), trace, "order_id", ord10)
	d.wantUnbound("a refund of more than the order", d.refund(trace, "ord_10", 701), trace, "amount", ord10)
	if d.refunds != 0 {
		t.Fatalf("%d refunds ran", d.refunds)
	}
	if res := d.refund(trace, "ord_10", 89); res.Outcome != audit.OutcomeExecuted {
		t.Errorf("the refund of ord_10 within its amount: %+v", res)
	}
	if d.refunds != 1 {
		t.Errorf("%d refunds ran, want 1", d.refunds)
	}
}

// TestAttackArgumentsBoundToCommittedGrounding: a pending proposal of the
// belief hides the committed one when the call comes in, so the gate
// cannot check the arguments before the kernel decides. The committed
// action's own grounding is checked instead, and the refund never runs.
func TestAttackArgumentsBoundToCommittedGrounding(t *testing.T) {
	d := newBoundDesk(t)
	ctx := context.Background()
	const trace = "ticket-pending"
	ord10 := d.lookup(trace, "ord_10")
	d.believe(trace)
	if _, err := d.k.Proposer(blackboard.RolePlanner, "analyst").Write(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}}); err != nil {
		t.Fatal(err)
	}
	res := d.refund(trace, "ord_1", 89)
	d.wantUnbound("a refund of another order", res, trace, "order_id", ord10)
	if res.ActionID == "" {
		t.Fatalf("the refusal %+v names no committed action: the kernel's grounding was not what was checked", res)
	}
	again, err := d.g.Execute(ctx, res.ActionID)
	if err != nil || again.Outcome != audit.OutcomeRefused || again.Code != reason.ArgumentNotBound {
		t.Errorf("Execute after the refusal: %+v %v", again, err)
	}
	if d.refunds != 0 {
		t.Errorf("%d refunds ran", d.refunds)
	}
}

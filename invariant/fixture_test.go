package invariant_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/invariant"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/toolgate"
)

// desk is a support desk on a memory store, driven through the gate's
// public API: lookup_order derives refund_due from the order it reads
// (and takes the customer's email, masked); issue_refund rests on
// refund_due, is bound to the order looked up, keyed once by order,
// scoped to the trace's request's orders and needs a person's approval
// above 100.
type desk struct {
	t   *testing.T
	ctx context.Context
	st  *memstore.Store
	g   *toolgate.Gate
}

type lookupArgs struct {
	OrderID string `json:"order_id"`
	Email   string `json:"email,omitempty"`
}

type refundArgs struct {
	OrderID string  `json:"order_id"`
	Amount  float64 `json:"amount"`
}

func newDesk(t *testing.T) *desk {
	t.Helper()
	ctx := context.Background()
	st := memstore.New()
	t.Cleanup(func() { st.Close() })
	lookup := toolgate.Func(toolgate.Tool{Name: "lookup_order", Result: "order", ReadOnly: true, Masked: []string{"email"},
		Derives: []toolgate.Derive{{Belief: "refund_due", Value: "result.refundable",
			Fields: map[string]string{"order_id": "result.order_id"}}}},
		func(_ context.Context, _ toolgate.Invocation, a lookupArgs) (map[string]any, error) {
			return map[string]any{"order_id": a.OrderID, "amount": 900.0, "refundable": true}, nil
		})
	refund := toolgate.Func(toolgate.Tool{Name: "issue_refund", Result: "refund", Requires: []string{"refund_due"},
		Bindings: []toolgate.Binding{{Arg: "order_id", Percept: "order", Op: "equal"}}, Once: &kernel.OnceKey{Fields: []string{"order_id"}},
		Approval: "amount > 100", Scope: map[string]string{"order_id": "order"}},
		func(_ context.Context, _ toolgate.Invocation, a refundArgs) (map[string]any, error) {
			return map[string]any{"refund_id": "re_1", "refunded": a.Amount}, nil
		})
	g, err := toolgate.New(ctx, toolgate.Config{
		Kernel:    kernel.Config{Store: st},
		Tools:     []toolgate.Tool{lookup, refund},
		MaskKey:   []byte("0123456789abcdef0123456789abcdef"),
		Contracts: map[string][]string{"support": {"lookup_order", "issue_refund"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &desk{t: t, ctx: ctx, st: st, g: g}
}

// call makes a call and fails the test on an error.
func (d *desk) call(trace, tool string, args any) toolgate.Result {
	d.t.Helper()
	raw, _ := json.Marshal(args)
	res, err := d.g.Call(d.ctx, toolgate.Call{Tool: tool, Args: raw, Caller: "support", TraceID: trace})
	if err != nil {
		d.t.Fatalf("%s: %v", tool, err)
	}
	return res
}

// request records the request trace serves: customer ann's, about
// orders.
func (d *desk) request(trace string, orders ...string) {
	d.t.Helper()
	if err := d.g.RecordRequest(d.ctx, trace, audit.Request{Principal: "ann", Resources: map[string][]string{"order": orders}}); err != nil {
		d.t.Fatal(err)
	}
}

// lookup looks an order up, for a customer's email.
func (d *desk) lookup(trace, order string) toolgate.Result {
	d.t.Helper()
	res := d.call(trace, "lookup_order", lookupArgs{OrderID: order, Email: "ann@example.com"})
	if res.Outcome != audit.OutcomeExecuted {
		d.t.Fatalf("lookup %s: %+v", order, res)
	}
	return res
}

// refund asks for a refund and, when it waits for approval, approves
// it as a manager.
func (d *desk) refund(trace, order string, amount float64) toolgate.Result {
	d.t.Helper()
	res := d.call(trace, "issue_refund", refundArgs{OrderID: order, Amount: amount})
	if res.Outcome == audit.OutcomePendingApproval {
		var err error
		res, err = d.g.Approver("manager").Resolve(d.ctx, audit.Approval{TraceID: trace, ActionID: res.ActionID, Digest: res.ArgsDigest, Decision: audit.Approved, Note: "ok"})
		if err != nil {
			d.t.Fatal(err)
		}
	}
	return res
}

// flow runs the clean refund flow of trace, whose request concerns its
// orders A1, A2, A3 and A9: a small refund, a large one approved, and a
// refund of an order not looked up (refused); the orders' ids start with
// the trace's.
func (d *desk) flow(trace string) {
	p := trace + "-"
	d.t.Helper()
	d.request(trace, p+"A1", p+"A2", p+"A3", p+"A9")
	d.lookup(trace, p+"A1")
	if res := d.refund(trace, p+"A1", 50); res.Outcome != audit.OutcomeExecuted {
		d.t.Fatalf("refund A1: %+v", res)
	}
	d.lookup(trace, p+"A2")
	if res := d.refund(trace, p+"A2", 500); res.Outcome != audit.OutcomeExecuted {
		d.t.Fatalf("refund A2: %+v", res)
	}
	if res := d.refund(trace, p+"A3", 10); res.Outcome != audit.OutcomeRefused {
		d.t.Fatalf("refund A3: %+v", res)
	}
}

// check runs the checker and fails the test on an error.
func (d *desk) check() []invariant.Violation {
	d.t.Helper()
	vs, err := invariant.Check(d.ctx, d.st)
	if err != nil {
		d.t.Fatal(err)
	}
	return vs
}

// records lists a trace's records.
func (d *desk) records(trace string) []blackboard.Record {
	d.t.Helper()
	var out []blackboard.Record
	for r, err := range d.st.ListTrace(d.ctx, "", trace) {
		if err != nil {
			d.t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// find returns the last record of a trace that matches fn.
func (d *desk) find(trace string, fn func(r blackboard.Record) bool) blackboard.Record {
	d.t.Helper()
	recs := d.records(trace)
	for i := len(recs) - 1; i >= 0; i-- {
		if fn(recs[i]) {
			return recs[i].Clone()
		}
	}
	d.t.Fatalf("no such record in %s", trace)
	return blackboard.Record{}
}

// effectOf returns the last effect record of a tool with that status.
func (d *desk) effectOf(trace, tool, status string) blackboard.Record {
	d.t.Helper()
	return d.find(trace, func(r blackboard.Record) bool {
		e, ok := audit.EffectOf(r)
		return ok && e.Tool == tool && e.Status == status
	})
}

// next returns the next kernel-style id of a slot in a trace.
func (d *desk) next(trace string, slot blackboard.Slot) string {
	return store.RecordID(slot, "", trace, len(d.records(trace))+1)
}

// forge appends records as they are, as a store holding a bug's (or an
// attacker's) writes would hold them, each given the next id of its
// trace.
func (d *desk) forge(recs ...blackboard.Record) []blackboard.Record {
	d.t.Helper()
	out := make([]blackboard.Record, 0, len(recs))
	for _, r := range recs {
		r.ID = d.next(r.Provenance.TraceID, r.Slot)
		r.Provenance.TimestampMS = time.Now().UnixMilli()
		if err := d.st.Apply(d.ctx, store.Batch{Appends: []blackboard.Record{r}}); err != nil {
			d.t.Fatalf("forge %s: %v", r.ID, err)
		}
		out = append(out, r)
	}
	return out
}

// expectNew runs the checker before and after mutate and expects the
// violations mutate adds to be exactly want (compared by invariant,
// trace and record).
func expectNew(t *testing.T, d *desk, mutate func() []invariant.Violation) {
	t.Helper()
	before := d.check()
	want := mutate()
	var added []invariant.Violation
	for _, v := range d.check() {
		if !slices.Contains(before, v) {
			added = append(added, v)
		}
	}
	key := func(v invariant.Violation) invariant.Violation { v.Detail = ""; return v }
	if len(added) != len(want) {
		t.Fatalf("new violations %v, want %v", added, want)
	}
	for i := range want {
		if key(added[i]) != key(want[i]) {
			t.Fatalf("new violations %v, want %v", added, want)
		}
		t.Logf("found: %v", added[i])
	}
}

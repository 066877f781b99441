package toolgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/snapshot"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/toolgate"
)

// scopeDesk is a gate whose refund is scoped to the request's order and
// whose note to the customer is scoped to the request's principal; refunds
// counts the refunds paid, by order.
type scopeDesk struct {
	g       *toolgate.Gate
	s       store.Store
	refunds map[string]*atomic.Int32
}

func newScopeDesk(t *testing.T) *scopeDesk {
	t.Helper()
	d := &scopeDesk{s: memstore.New(), refunds: map[string]*atomic.Int32{"ord_1": {}, "ord_3": {}}}
	orders := map[string]float64{"ord_1": 40, "ord_3": 90}
	orderSchema := json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`)
	g, err := toolgate.New(t.Context(), toolgate.Config{
		Kernel: kernel.Config{
			Store:       d.s,
			BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}},
		},
		Tools: []toolgate.Tool{{Name: "lookup_order", Parameters: orderSchema, Result: "order", ReadOnly: true,
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				id, _ := inv.Args["order_id"].(string)
				return blackboard.Payload{"order_id": id, "amount": orders[id]}, nil
			}}, {Name: "issue_refund", Result: "refund", Requires: []string{"refund_due"},
			Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"},"amount":{"type":"number"}},"required":["order_id","amount"]}`),
			Bindings:   []toolgate.Binding{{Arg: "order_id", Percept: "order", Op: "equal"}, {Arg: "amount", Percept: "order", Op: "at_most"}},
			Scope:      map[string]string{"order_id": "order"}, Once: &kernel.OnceKey{Fields: []string{"order_id"}},
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				id, _ := inv.Args["order_id"].(string)
				d.refunds[id].Add(1)
				return blackboard.Payload{"refunded": id}, nil
			}}, {Name: "note_customer", Result: "note", Scope: map[string]string{"customer": "principal"},
			Parameters: json.RawMessage(`{"type":"object","properties":{"customer":{"type":"string"},"text":{"type":"string"}},"required":["customer"]}`),
			Effect: func(context.Context, toolgate.Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"sent": true}, nil
			}}, {Name: "escalate", Result: "escalation", Unscoped: true,
			Effect: func(context.Context, toolgate.Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"queued": true}, nil
			}}},
		Contracts: map[string][]string{"agent": {"lookup_order", "issue_refund", "note_customer", "escalate"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	d.g = g
	return d
}

func (d *scopeDesk) call(t *testing.T, trace, tool, args, principal string) toolgate.Result {
	t.Helper()
	res, err := d.g.Call(t.Context(), toolgate.Call{Tool: tool, Args: json.RawMessage(args), Caller: "agent", TraceID: trace, Principal: principal})
	if err != nil {
		t.Fatalf("%s %s: %v", tool, args, err)
	}
	return res
}

// lookUp has the model look order up and a planner conclude that its
// refund is due: the grounding a refund of that order needs.
func (d *scopeDesk) lookUp(t *testing.T, trace, order string) {
	t.Helper()
	if r := d.call(t, trace, "lookup_order", `{"order_id":"`+order+`"}`, ""); r.Outcome != audit.OutcomeExecuted {
		t.Fatalf("lookup %s: %+v", order, r)
	}
	if _, err := d.g.Kernel().Proposer(blackboard.RolePlanner, "analyst").Submit(t.Context(), kernel.Entry{TraceID: trace, Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}}); err != nil {
		t.Fatal(err)
	}
}

func wantOutOfScope(t *testing.T, r toolgate.Result, hintHas string) {
	t.Helper()
	if r.Outcome != audit.OutcomeRefused || r.Code != reason.OutOfScope {
		t.Fatalf("result %+v, want refused OUT_OF_SCOPE", r)
	}
	if !strings.Contains(r.Hint, hintHas) {
		t.Fatalf("hint %q does not name %q", r.Hint, hintHas)
	}
}

// A ticket about ord_3 that says "Refund ord_1 for me": the model looks
// ord_1 up, the refund_due belief rests on ord_1's lookup and the
// refund's bindings hold, yet ord_1 is not what the ticket is about. The
// refund is refused with OUT_OF_SCOPE, a hint naming the ticket's order,
// and never runs; the ticket's own order is refunded. A scoped tool in a
// trace with no request recorded is refused too: the check fails closed.
func TestAttackRefundOfAnotherOrder(t *testing.T) {
	d := newScopeDesk(t)
	ctx := t.Context()
	if err := d.g.RecordRequest(ctx, "T3", audit.Request{Principal: "cust_3", Resources: map[string][]string{"order": {"ord_3"}}}); err != nil {
		t.Fatal(err)
	}
	d.lookUp(t, "T3", "ord_1")
	wantOutOfScope(t, d.call(t, "T3", "issue_refund", `{"order_id":"ord_1","amount":40}`, ""), `"ord_3"`)
	if n := d.refunds["ord_1"].Load(); n != 0 {
		t.Fatalf("ord_1 refunded %d times on a ticket about ord_3", n)
	}
	d.lookUp(t, "T3", "ord_3")
	if r := d.call(t, "T3", "issue_refund", `{"order_id":"ord_3","amount":90}`, ""); r.Outcome != audit.OutcomeExecuted {
		t.Fatalf("the ticket's own refund: %+v", r)
	}
	wantOutOfScope(t, d.call(t, "T3", "note_customer", `{"customer":"cust_1","text":"hi"}`, ""), `"cust_3"`)
	if r := d.call(t, "T3", "note_customer", `{"customer":"cust_3","text":"refunded"}`, ""); r.Outcome != audit.OutcomeExecuted {
		t.Fatalf("a note to the request's principal: %+v", r)
	}

	t.Run("no request", func(t *testing.T) {
		d.lookUp(t, "T4", "ord_1")
		wantOutOfScope(t, d.call(t, "T4", "issue_refund", `{"order_id":"ord_1","amount":40}`, ""), "no request")
		if n := d.refunds["ord_1"].Load(); n != 0 {
			t.Fatalf("ord_1 refunded %d times in a trace with no request", n)
		}
		if r := d.call(t, "T4", "escalate", `{}`, ""); r.Outcome != audit.OutcomeExecuted {
			t.Fatalf("an Unscoped tool in a trace with no request: %+v", r)
		}
	})
}

// The kernel holds the scope as it decides, not only the gate's look
// before it: a tool's action submitted past the gate by governance code
// writing as the tool's caller (a planner cannot submit it at all: the
// action type is reserved), for another order than the request's, is
// refused with OUT_OF_SCOPE.
func TestScopeDecidedByKernel(t *testing.T) {
	d := newScopeDesk(t)
	ctx := t.Context()
	if err := d.g.RecordRequest(ctx, "T3", audit.Request{Principal: "cust_3", Resources: map[string][]string{"order": {"ord_3"}}}); err != nil {
		t.Fatal(err)
	}
	d.lookUp(t, "T3", "ord_1")
	dec, err := d.g.Kernel().Governor().Submit(ctx, audit.CallerWriter("agent"), kernel.Entry{TraceID: "T3", Slot: blackboard.Actions, Kind: "issue_refund",
		Payload: blackboard.Payload{"order_id": "ord_1", "amount": 40, "requires_beliefs": []string{"refund_due"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if dec.Committed() {
		t.Fatalf("a planner's refund of another order committed: %+v", dec)
	}
	if dec.Code != reason.OutOfScope {
		t.Fatalf("refused with %s, want OUT_OF_SCOPE", dec.Code)
	}
}

// An effectful tool that says nothing of the request is refused by New,
// naming the tool: scope is declared or explicitly waived.
func TestAttackUndeclaredScope(t *testing.T) {
	_, err := toolgate.New(t.Context(), toolgate.Config{Tools: []toolgate.Tool{{Name: "wire_money",
		Effect: func(context.Context, toolgate.Invocation) (blackboard.Payload, error) { return nil, nil }}}})
	if !errors.Is(err, blackboard.ErrInvalidInput) || !strings.Contains(err.Error(), "wire_money") {
		t.Fatalf("New of an effectful tool without Scope or Unscoped: %v, want a config error naming it", err)
	}
	for name, tool := range map[string]toolgate.Tool{
		"both":           {Name: "a", Unscoped: true, Scope: map[string]string{"x": "order"}},
		"undeclared arg": {Name: "a", Parameters: json.RawMessage(`{"type":"object","properties":{"y":{"type":"string"}}}`), Scope: map[string]string{"x": "order"}},
		"empty type":     {Name: "a", Scope: map[string]string{"x": ""}},
	} {
		if _, err := toolgate.New(t.Context(), toolgate.Config{Tools: []toolgate.Tool{tool}}); !errors.Is(err, blackboard.ErrInvalidInput) {
			t.Errorf("%s: %v, want a config error (blackboard.ErrInvalidInput)", name, err)
		}
	}
}

// A call made for another principal than the trace's request is refused,
// whatever the tool: an unscoped one too.
func TestAttackCallForAnotherPrincipal(t *testing.T) {
	d := newScopeDesk(t)
	if err := d.g.RecordRequest(t.Context(), "T3", audit.Request{Principal: "cust_3", Resources: map[string][]string{"order": {"ord_3"}}}); err != nil {
		t.Fatal(err)
	}
	wantOutOfScope(t, d.call(t, "T3", "escalate", `{}`, "cust_1"), `"cust_3"`)
	wantOutOfScope(t, d.call(t, "T3", "lookup_order", `{"order_id":"ord_3"}`, "cust_1"), "another principal")
	if r := d.call(t, "T3", "escalate", `{}`, "cust_3"); r.Outcome != audit.OutcomeExecuted {
		t.Fatalf("a call for the request's principal: %+v", r)
	}
}

// A trace's request is recorded once for good: the same request again
// records nothing, another is blackboard.ErrDuplicateKey and records nothing, and
// the refund it would have let through stays refused.
func TestAttackRequestReplaced(t *testing.T) {
	d := newScopeDesk(t)
	ctx := t.Context()
	req := audit.Request{Principal: "cust_3", Resources: map[string][]string{"order": {"ord_3"}}}
	for range 2 {
		if err := d.g.RecordRequest(ctx, "T3", req); err != nil {
			t.Fatal(err)
		}
	}
	err := d.g.RecordRequest(ctx, "T3", audit.Request{Principal: "cust_3", Resources: map[string][]string{"order": {"ord_1", "ord_3"}}})
	if !errors.Is(err, blackboard.ErrDuplicateKey) {
		t.Fatalf("another request for the trace: %v, want blackboard.ErrDuplicateKey", err)
	}
	n := 0
	for rec, err := range d.s.ListTrace(ctx, "", "T3") {
		if err != nil {
			t.Fatal(err)
		}
		if rec.Kind == audit.KindRequest {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d request records, want 1", n)
	}
	d.lookUp(t, "T3", "ord_1")
	wantOutOfScope(t, d.call(t, "T3", "issue_refund", `{"order_id":"ord_1","amount":40}`, ""), `"ord_3"`)
}

// Bad requests are blackboard.ErrInvalidInput and record nothing.
func TestRecordRequestInvalid(t *testing.T) {
	d := newScopeDesk(t)
	for name, r := range map[string]audit.Request{
		"no principal":   {Resources: map[string][]string{"order": {"ord_3"}}},
		"reserved type":  {Principal: "p", Resources: map[string][]string{"principal": {"q"}}},
		"empty id":       {Principal: "p", Resources: map[string][]string{"order": {""}}},
		"control in id":  {Principal: "p", Resources: map[string][]string{"order": {"a\x1b"}}},
		"empty type":     {Principal: "p", Resources: map[string][]string{"": {"a"}}},
		"long principal": {Principal: strings.Repeat("p", 300)},
	} {
		if err := d.g.RecordRequest(t.Context(), "T"+name, r); !errors.Is(err, blackboard.ErrInvalidInput) {
			t.Errorf("%s: %v, want blackboard.ErrInvalidInput", name, err)
		}
	}
	for rec, err := range d.s.ListTrace(t.Context(), "", "Tno principal") {
		t.Fatalf("a refused request wrote %+v %v", rec, err)
	}
}

// The request record and the records that rest on it, as an invariant
// checker reads them: one evidence record of kind "request" per trace,
// written with the kernel's role, holding the principal and the resources;
// the policy snapshot holds each tool's scope; the decision record of a
// scoped call names the request record and its principal.
func TestRequestRecordShape(t *testing.T) {
	d := newScopeDesk(t)
	ctx := t.Context()
	if err := d.g.RecordRequest(ctx, "T3", audit.Request{Principal: "cust_3", Resources: map[string][]string{"order": {"ord_3", "ord_3"}, "account": {"acc_9"}}}); err != nil {
		t.Fatal(err)
	}
	var req blackboard.Record
	for rec, err := range d.s.ListTrace(ctx, "", "T3") {
		if err != nil {
			t.Fatal(err)
		}
		if rec.Kind == audit.KindRequest {
			req = rec
		}
	}
	res, _ := req.Payload["resources"].(map[string]any)
	if req.Slot != blackboard.Evidence || req.Provenance.Role != blackboard.RoleKernel || req.Payload["principal"] != "cust_3" ||
		len(res) != 2 || len(res["order"].([]any)) != 1 || req.Payload["policy"] != d.g.Policy().Hash {
		t.Fatalf("request record %+v", req)
	}
	var scope map[string]string
	snap, err := snapshot.Decode(d.g.Policy())
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range snap.Tools {
		if tp.Name == "issue_refund" {
			scope = tp.Scope
		}
		if tp.Name == "escalate" && !tp.Unscoped {
			t.Errorf("escalate's policy %+v lacks unscoped", tp)
		}
	}
	if scope["order_id"] != "order" {
		t.Fatalf("issue_refund's policy scope %v", scope)
	}
	d.lookUp(t, "T3", "ord_3")
	r := d.call(t, "T3", "issue_refund", `{"order_id":"ord_3","amount":90}`, "cust_3")
	if r.Outcome != audit.OutcomeExecuted {
		t.Fatalf("refund: %+v", r)
	}
	found := false
	for dr, err := range audit.List(ctx, d.g.Kernel().Reader(), audit.Query{TraceID: "T3", Tool: "issue_refund", Outcome: audit.OutcomeCommitted}) {
		if err != nil {
			t.Fatal(err)
		}
		found = dr.Context["request"] == req.ID && dr.Context["principal"] == "cust_3"
	}
	if !found {
		t.Fatal("the refund's decision record does not name the request record and its principal")
	}
}

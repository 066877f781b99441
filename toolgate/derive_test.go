package toolgate

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store/memstore"
)

type lookupArgs struct {
	OrderID string `json:"order_id"`
}

// order is what the test's order system answers: the whole payload, so a
// test can leave fields out (a map) or flag the observation stale.
type order map[string]any

type refundArgs struct {
	OrderID string  `json:"order_id"`
	Amount  float64 `json:"amount"`
}

// deriveDesk is a gate whose lookup_order derives refund_due with the
// given rule and answers what answer returns; issue_refund rests on
// refund_due. It returns the gate and a counter of refunds run.
func deriveDesk(t *testing.T, d Derive, answer func(id string) order) (*Gate, *int) {
	t.Helper()
	refunds := new(int)
	lookup := Func(Tool{Unscoped: true, Name: "lookup_order", Result: "order", Derives: []Derive{d}},
		func(_ context.Context, _ Invocation, a lookupArgs) (order, error) { return answer(a.OrderID), nil })
	refund := Func(Tool{Unscoped: true, Name: "issue_refund", Result: "refund", Requires: []string{"refund_due"},
		Bindings: []Binding{{Arg: "order_id", Percept: "order", Op: "equal"}}, Once: &kernel.OnceKey{Fields: []string{"order_id"}}},
		func(_ context.Context, _ Invocation, a refundArgs) (map[string]any, error) {
			*refunds++
			return map[string]any{"refunded": a.Amount}, nil
		})
	st := memstore.New()
	g, err := New(context.Background(), Config{
		Kernel:    kernel.Config{Store: st},
		Tools:     []Tool{lookup, refund},
		Contracts: map[string][]string{"support": {"lookup_order", "issue_refund"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	checkStoreAtEnd(t, st)
	return g, refunds
}

func callGate(t *testing.T, g *Gate, trace, tool, args string) Result {
	t.Helper()
	res, err := g.Call(context.Background(), Call{Tool: tool, Args: json.RawMessage(args), Caller: "support", TraceID: trace})
	if err != nil {
		t.Fatalf("%s %s: %v", tool, args, err)
	}
	return res
}

var refundDue = Derive{
	Belief: "refund_due",
	Value:  "result.refundable && result.refunded < result.amount",
	Fields: map[string]string{"order_id": "result.order_id", "max_refund": "result.amount - result.refunded", "asked": "args.order_id"},
}

func goodOrder(id string) order {
	return order{"order_id": id, "amount": 80.0, "refunded": 30.0, "refundable": true}
}

// TestDeriveCommits: a successful result proposes the derived belief
// through the kernel, resting on the result record, with its fields; the
// Result reports it, its decision record names the result, and the second
// tool's call rests on it.
func TestDeriveCommits(t *testing.T) {
	ctx := context.Background()
	g, refunds := deriveDesk(t, refundDue, goodOrder)
	res := callGate(t, g, "t1", "lookup_order", `{"order_id":"A1"}`)
	if res.Code != reason.EffectSucceeded || len(res.Derived) != 1 {
		t.Fatalf("lookup: %+v", res)
	}
	dv := res.Derived[0]
	if dv.Code != reason.Committed || !dv.Value || dv.Belief != "refund_due" || dv.BeliefID == "" || dv.DecisionID == "" {
		t.Fatalf("derived %+v", dv)
	}
	b, err := g.Kernel().Handle(blackboard.RoleTool, "test").Get(ctx, dv.BeliefID)
	if err != nil {
		t.Fatal(err)
	}
	// The kernel commits what the gate's deriver proposed.
	if len(b.Provenance.InputRefs) == 0 {
		t.Fatalf("belief %+v has no proposal", b)
	}
	if p, err := g.Kernel().Handle(blackboard.RoleTool, "test").Get(ctx, b.Provenance.InputRefs[0]); err != nil || p.Provenance.Writer != audit.DeriverWriter("lookup_order") {
		t.Errorf("proposal %+v %v, want one by %s", p, err, audit.DeriverWriter("lookup_order"))
	}
	if b.Slot != blackboard.Beliefs || b.Payload["value"] != true ||
		b.Payload["order_id"] != "A1" || b.Payload["max_refund"] != 50.0 || b.Payload["asked"] != "A1" {
		t.Errorf("belief %+v", b)
	}
	// It rests on the very result it was computed from, by id.
	resultID := ""
	for r, err := range g.Kernel().Handle(blackboard.RoleTool, "test").Trace(ctx, "t1") {
		if err != nil {
			t.Fatal(err)
		}
		if r.Slot == blackboard.Percepts && r.Kind == "order" {
			resultID = r.ID
		}
	}
	if deps, _ := b.Payload["depends_on"].([]any); len(deps) != 1 || deps[0] != resultID || resultID == "" {
		t.Errorf("depends_on %v, want the result record %s", b.Payload["depends_on"], resultID)
	}
	if len(b.EvidenceRefs) == 0 {
		t.Errorf("the belief rests on no evidence: %+v", b)
	}
	var found bool
	for d, err := range audit.List(ctx, g.Kernel().Reader(), audit.Query{TraceID: "t1"}) {
		if err != nil {
			t.Fatal(err)
		}
		if d.Kind == "refund_due" {
			found = d.Code == reason.Committed && d.Context["derived_from"] != nil && d.Context["tool"] == "lookup_order"
		}
	}
	if !found {
		t.Error("no decision record of the derived belief naming its result")
	}
	if r := callGate(t, g, "t1", "issue_refund", `{"order_id":"A1","amount":50}`); r.Code != reason.EffectSucceeded || *refunds != 1 {
		t.Errorf("refund on the derived belief: %+v", r)
	}
	// Another trace has no belief: the refund is refused.
	if r := callGate(t, g, "t2", "issue_refund", `{"order_id":"A1","amount":50}`); r.Outcome != audit.OutcomeRefused {
		t.Errorf("refund without a lookup: %+v", r)
	}
}

// TestDeriveFalse: a rule that is false over the result proposes a false
// belief, on which the second tool is refused.
func TestDeriveFalse(t *testing.T) {
	g, refunds := deriveDesk(t, refundDue, func(id string) order {
		o := goodOrder(id)
		o["refunded"] = 80.0
		return o
	})
	res := callGate(t, g, "t", "lookup_order", `{"order_id":"A1"}`)
	if len(res.Derived) != 1 || res.Derived[0].Code != reason.Committed || res.Derived[0].Value {
		t.Fatalf("derived %+v", res.Derived)
	}
	if r := callGate(t, g, "t", "issue_refund", `{"order_id":"A1","amount":1}`); r.Outcome != audit.OutcomeRefused || *refunds != 0 {
		t.Errorf("refund on a false belief: %+v", r)
	}
}

// TestDeriveFailsClosed: a result the rule cannot evaluate (a missing
// field, a value that is no bool, a field that fails) proposes no belief;
// a decision record says why, and the Result reports DERIVATION_FAILED.
func TestDeriveFailsClosed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		d      Derive
		answer func(string) order
		why    string
	}{
		{"missing field in the value", refundDue, func(id string) order { o := goodOrder(id); delete(o, "refundable"); return o }, "could not be evaluated"},
		{"value not a bool", Derive{Belief: "refund_due", Value: "result.amount"}, goodOrder, "not a bool"},
		{"value of the wrong type", refundDue, func(id string) order { o := goodOrder(id); o["refundable"] = "yes"; return o }, "could not be evaluated"},
		{"missing field in a field", Derive{Belief: "refund_due", Value: "true", Fields: map[string]string{"n": "result.nothing"}}, goodOrder, "field n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			g, refunds := deriveDesk(t, tc.d, tc.answer)
			res := callGate(t, g, "t", "lookup_order", `{"order_id":"A1"}`)
			if res.Code != reason.EffectSucceeded || len(res.Derived) != 1 {
				t.Fatalf("lookup: %+v", res)
			}
			dv := res.Derived[0]
			if dv.Code != reason.DerivationFailed || dv.Code == reason.Committed || dv.BeliefID != "" || !strings.Contains(dv.Detail, tc.why) {
				t.Errorf("derived %+v, want DERIVATION_FAILED saying %q", dv, tc.why)
			}
			v, err := g.Kernel().Reader().View(ctx, "t", false)
			if err != nil {
				t.Fatal(err)
			}
			if b, ok := v.Committed[blackboard.Beliefs]["refund_due"]; ok {
				t.Errorf("a belief was committed: %v", b)
			}
			var rec audit.Entry
			for d, err := range audit.List(ctx, g.Kernel().Reader(), audit.Query{TraceID: "t", Outcome: audit.OutcomeRefused}) {
				if err != nil {
					t.Fatal(err)
				}
				rec = d
			}
			if rec.Code != reason.DerivationFailed || rec.Kind != "refund_due" || rec.ID != dv.DecisionID || rec.Context[keyPolicy] != g.Policy().Hash {
				t.Errorf("decision record %+v", rec)
			}
			if r := callGate(t, g, "t", "issue_refund", `{"order_id":"A1","amount":1}`); r.Outcome != audit.OutcomeRefused || *refunds != 0 {
				t.Errorf("refund without a belief: %+v", r)
			}
		})
	}
}

// TestDeriveKernelRefuses: the derived belief is validated like any
// belief: a result flagged stale, conflicting or unreliable grounds none,
// and the Result says why.
func TestDeriveKernelRefuses(t *testing.T) {
	for flag, code := range map[string]reason.Code{
		"stale":          reason.StaleEvidence,
		"conflict":       reason.UnresolvedConflict,
		"low_confidence": reason.LowConfidence,
	} {
		t.Run(flag, func(t *testing.T) {
			g, refunds := deriveDesk(t, refundDue, func(id string) order { o := goodOrder(id); o[flag] = true; return o })
			res := callGate(t, g, "t", "lookup_order", `{"order_id":"A1"}`)
			if len(res.Derived) != 1 || res.Derived[0].Code != code || res.Derived[0].BeliefID != "" || res.Derived[0].Code == reason.Committed {
				t.Fatalf("derived %+v, want %s", res.Derived, code)
			}
			if r := callGate(t, g, "t", "issue_refund", `{"order_id":"A1","amount":1}`); r.Outcome != audit.OutcomeRefused || *refunds != 0 {
				t.Errorf("refund on %s evidence: %+v", flag, r)
			}
		})
	}
}

// TestDeriveInvalid: New compiles the rules: a bad one is blackboard.ErrInvalidInput
// and nothing is built.
func TestDeriveInvalid(t *testing.T) {
	noop := func(context.Context, Invocation) (blackboard.Payload, error) { return nil, nil }
	for _, tc := range []struct {
		name  string
		tools []Tool
	}{
		{"does not compile", []Tool{{Unscoped: true, Name: "a", Effect: noop, Derives: []Derive{{Belief: "b", Value: "result.x &&"}}}}},
		{"value not bool", []Tool{{Unscoped: true, Name: "a", Effect: noop, Derives: []Derive{{Belief: "b", Value: "1 + 2"}}}}},
		{"empty value", []Tool{{Unscoped: true, Name: "a", Effect: noop, Derives: []Derive{{Belief: "b"}}}}},
		{"no belief kind", []Tool{{Unscoped: true, Name: "a", Effect: noop, Derives: []Derive{{Value: "true"}}}}},
		{"unknown variable", []Tool{{Unscoped: true, Name: "a", Effect: noop, Derives: []Derive{{Belief: "b", Value: "order.x"}}}}},
		{"field does not compile", []Tool{{Unscoped: true, Name: "a", Effect: noop, Derives: []Derive{{Belief: "b", Value: "true", Fields: map[string]string{"x": "("}}}}}},
		{"reserved field", []Tool{{Unscoped: true, Name: "a", Effect: noop, Derives: []Derive{{Belief: "b", Value: "true", Fields: map[string]string{"depends_on": "['x']"}}}}}},
		{"value as a field", []Tool{{Unscoped: true, Name: "a", Effect: noop, Derives: []Derive{{Belief: "b", Value: "true", Fields: map[string]string{"value": "false"}}}}}},
		{"twice on a tool", []Tool{{Unscoped: true, Name: "a", Effect: noop, Derives: []Derive{{Belief: "b", Value: "true"}, {Belief: "b", Value: "false"}}}}},
		{"by two tools", []Tool{{Unscoped: true, Name: "a", Effect: noop, Derives: []Derive{{Belief: "b", Value: "true"}}},
			{Unscoped: true, Name: "c", Effect: noop, Derives: []Derive{{Belief: "b", Value: "true"}}}}},
	} {
		if g, err := New(context.Background(), Config{Tools: tc.tools}); !errors.Is(err, blackboard.ErrInvalidInput) {
			if g != nil {
				g.Close()
			}
			t.Errorf("%s: %v, want blackboard.ErrInvalidInput", tc.name, err)
		}
	}
}

// TestDeriveOwnerSpecWins: the owner's own belief spec for a derived kind
// takes precedence: one that asks for evidence the result is not refuses
// the derived belief rather than being replaced.
func TestDeriveOwnerSpecWins(t *testing.T) {
	lookup := Func(Tool{Unscoped: true, Name: "lookup_order", Result: "order", Derives: []Derive{refundDue}},
		func(_ context.Context, _ Invocation, a lookupArgs) (order, error) { return goodOrder(a.OrderID), nil })
	g, err := New(context.Background(), Config{
		Kernel: kernel.Config{BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order", "payment"}}},
			ActionSpecs: []kernel.ActionSpec{{Type: "refund_by_hand", MinBeliefs: []string{"refund_due"}}}}, // what requires the belief
		Tools:     []Tool{lookup},
		Contracts: map[string][]string{"support": {"lookup_order"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	res := callGate(t, g, "t", "lookup_order", `{"order_id":"A1"}`)
	if len(res.Derived) != 1 || res.Derived[0].Code == reason.Committed {
		t.Errorf("derived %+v, want refused: the owner's spec asks for a payment percept", res.Derived)
	}
}

package replay_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/replay"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/toolgate"
)

// A trace whose request the application recorded is replayed with it: the
// charge of the request's account commits and runs again, the charge of
// another account is OUT_OF_SCOPE again. Replayed with the charge's scope
// waived, the second charge commits: the replay reads the scope from the
// policy snapshot.
func TestScopedRequestReplayed(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	lookup := toolgate.Tool{Name: "lookup", Result: "account", ReadOnly: true,
		Parameters: json.RawMessage(`{"type":"object","properties":{"account":{"type":"string"}},"required":["account"]}`),
		Derives:    []toolgate.Derive{{Belief: "chargeable", Value: "result.open"}},
		Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
			return blackboard.Payload{"account": inv.Args["account"], "open": true}, nil
		}}
	charge := toolgate.Tool{Name: "charge", Result: "receipt", Requires: []string{"chargeable"}, Scope: map[string]string{"account": "account"},
		Parameters: json.RawMessage(`{"type":"object","properties":{"account":{"type":"string"},"amount":{"type":"number"}},"required":["account","amount"]}`),
		Bindings:   []toolgate.Binding{{Arg: "account", Percept: "account", Op: "equal"}},
		Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
			return blackboard.Payload{"charged": inv.Args["amount"]}, nil
		}}
	g, err := toolgate.New(ctx, toolgate.Config{
		Kernel:    kernel.Config{Store: s, Namespace: "shop"},
		Tools:     []toolgate.Tool{lookup, charge},
		Contracts: map[string][]string{"clerk": {"lookup", "charge"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := g.RecordRequest(ctx, "r", audit.Request{Principal: "cust-1", Resources: map[string][]string{"account": {"acc-1"}}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ tool, args string }{
		{"lookup", `{"account":"acc-1"}`}, {"charge", `{"account":"acc-1","amount":5}`},
		{"lookup", `{"account":"acc-2"}`}, {"charge", `{"account":"acc-2","amount":5}`},
	} {
		if _, err := g.Call(ctx, toolgate.Call{Tool: c.tool, Args: json.RawMessage(c.args), Caller: "clerk", TraceID: "r"}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := replay.Trace(ctx, s, "shop", "r")
	if err != nil {
		t.Fatal(err)
	}
	if rep.First >= 0 || rep.Counts[replay.Same] != len(recordedDecisions(t, s, "r")) {
		t.Fatalf("%+v %q\n%+v", rep.Counts, rep.Notes, rep.Decisions)
	}
	codes := map[reason.Code]int{}
	for _, d := range rep.Decisions {
		codes[d.ReplayCode]++
	}
	if codes[reason.OutOfScope] != 1 || codes[reason.EffectSucceeded] != 3 {
		t.Fatalf("replayed codes %v, want one OUT_OF_SCOPE and three EFFECT_SUCCEEDED", codes)
	}
	waived, err := replay.Trace(ctx, s, "shop", "r", replay.WithTool("charge", func(tp *toolgate.Tool) { tp.Scope, tp.Unscoped = nil, true }))
	if err != nil {
		t.Fatal(err)
	}
	if waived.First < 0 || waived.Counts[replay.Changed] != 1 {
		t.Fatalf("with the scope waived: %+v\n%+v", waived.Counts, waived.Decisions)
	}
}

package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/replay"
	"github.com/blackboardkernel/bk/rules"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/toolgate"
)

// A support desk refunded 80 on order A1. Replayed from its store, under
// the policy it recorded, every decision is the same; under a rule that
// allows refunds up to 50, the refund is refused and its result missing.
func ExampleTrace() {
	ctx := context.Background()
	store := memstore.New() // in production, the application's store
	lookup := toolgate.Tool{Unscoped: true, Name: "lookup_order", Result: "order",
		Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`),
		Derives: []toolgate.Derive{{Belief: "refund_due", Value: "result.refundable",
			Fields: map[string]string{"order_id": "result.order_id", "max_refund": "result.amount"}}},
		Effect: func(context.Context, toolgate.Invocation) (blackboard.Payload, error) {
			return blackboard.Payload{"order_id": "A1", "amount": 80, "refundable": true}, nil
		}}
	refund := toolgate.Tool{Unscoped: true, Name: "issue_refund", Result: "refund", Requires: []string{"refund_due"},
		Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"},"amount":{"type":"number"}},"required":["order_id","amount"]}`),
		Bindings:   []toolgate.Binding{{Arg: "order_id", Percept: "order", Op: "equal"}},
		Effect: func(context.Context, toolgate.Invocation) (blackboard.Payload, error) {
			return blackboard.Payload{"refund_id": "r-1"}, nil
		}}
	rs, err := rules.New(rules.OnAction("refund_within_order", "issue_refund", "action.amount <= beliefs.refund_due.max_refund"))
	if err != nil {
		fmt.Println(err)
		return
	}
	g, err := toolgate.New(ctx, toolgate.Config{
		Kernel:    kernel.Config{Store: store, Validators: []kernel.Validator{rs}},
		Tools:     []toolgate.Tool{lookup, refund},
		Contracts: map[string][]string{"support": {"lookup_order", "issue_refund"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range []struct{ tool, args string }{{"lookup_order", `{"order_id":"A1"}`}, {"issue_refund", `{"order_id":"A1","amount":80}`}} {
		if _, err := g.Call(ctx, toolgate.Call{Tool: c.tool, Args: json.RawMessage(c.args), Caller: "support", TraceID: "ticket-1"}); err != nil {
			fmt.Println(err)
			return
		}
	}
	g.Close()

	rep, err := replay.Trace(ctx, store, "", "ticket-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("recorded policy: %+v\n", rep.Counts)

	rep, err = replay.Trace(ctx, store, "", "ticket-1", replay.WithRules(rules.Spec{
		Name: "refund_within_order", On: rules.TargetAction, Target: "issue_refund", Expr: "action.amount <= 50.0"}))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("refunds up to 50: %+v\n", rep.Counts)
	for _, d := range rep.Decisions {
		line := fmt.Sprintf("  %-7s %-6s %-12s %-16s -> %-16s %s", d.Match, d.Stage, d.Kind, d.RecordedCode, d.ReplayCode, d.Replay)
		fmt.Println(strings.TrimRight(line, " "))
	}
	// Output:
	// recorded policy: map[changed:0 extra:0 missing:0 same:5]
	// refunds up to 50: map[changed:1 extra:0 missing:1 same:3]
	//   same    call   lookup_order COMMITTED        -> COMMITTED        committed
	//   same    effect lookup_order EFFECT_SUCCEEDED -> EFFECT_SUCCEEDED executed
	//   same    derive refund_due   COMMITTED        -> COMMITTED        committed
	//   changed call   issue_refund COMMITTED        -> RULE_VIOLATED    refused
	//   missing effect issue_refund EFFECT_SUCCEEDED ->
}

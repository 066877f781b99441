package toolgate_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/toolgate"
)

// The application records what a ticket is about before the model sees
// it; the refund is scoped to the ticket's order. A ticket about A3 that
// says "Refund A1 for me" has the model look A1 up and refund it: the
// bindings hold (A1 is the order looked up), the scope does not.
func ExampleGate_RecordRequest() {
	ctx := context.Background()
	orderSchema := json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`)
	g, err := toolgate.New(ctx, toolgate.Config{
		Kernel: kernel.Config{Namespace: "desk"},
		Tools: []toolgate.Tool{{Name: "lookup_order", Parameters: orderSchema, Result: "order", ReadOnly: true,
			Derives: []toolgate.Derive{{Belief: "refund_due", Value: "true"}},
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"order_id": inv.Args["order_id"]}, nil
			}}, {Name: "issue_refund", Parameters: orderSchema, Result: "refund", Requires: []string{"refund_due"},
			Bindings: []toolgate.Binding{{Arg: "order_id", Percept: "order", Op: "equal"}},
			Scope:    map[string]string{"order_id": "order"}, // the ticket's order only
			Effect: func(context.Context, toolgate.Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"refunded": true}, nil
			}}},
		Contracts: map[string][]string{"support": {"lookup_order", "issue_refund"}},
	})
	if err != nil {
		panic(err)
	}
	defer g.Close()
	// From the ticket system, never from the model.
	if err := g.RecordRequest(ctx, "T3", audit.Request{Principal: "chloe@example.com", Resources: map[string][]string{"order": {"A3"}}}); err != nil {
		panic(err)
	}
	for _, c := range []struct{ tool, args string }{
		{"lookup_order", `{"order_id":"A1"}`},
		{"issue_refund", `{"order_id":"A1"}`},
	} {
		res, err := g.Call(ctx, toolgate.Call{Tool: c.tool, Args: json.RawMessage(c.args), Caller: "support", TraceID: "T3"})
		if err != nil {
			panic(err)
		}
		fmt.Println(c.tool, res.Outcome, res.Code)
		if res.Hint != "" {
			fmt.Println(res.Hint)
		}
	}
	// Output:
	// lookup_order executed EFFECT_SUCCEEDED
	// issue_refund refused OUT_OF_SCOPE
	// This run acts for one person on what they asked about, and this call is not within it (argument "order_id" = "A1" (order) lies outside the request: the request of "chloe@example.com" concerns order "A3"). Do not act on anything else; answer what was asked, or hand the task back.
}

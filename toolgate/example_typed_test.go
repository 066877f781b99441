package toolgate_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/rules"
	"github.com/blackboardkernel/bk/toolgate"
)

// OrderArgs are lookup_order's arguments; the schema models are shown is
// generated from them.
type OrderArgs struct {
	OrderID string `json:"order_id" jsonschema:"the order's id, as the customer gives it"`
}

// Order is what the order system answers.
type Order struct {
	OrderID    string  `json:"order_id"`
	Amount     float64 `json:"amount"`
	Refunded   float64 `json:"refunded"`
	Refundable bool    `json:"refundable"`
}

// RefundArgs are issue_refund's arguments.
type RefundArgs struct {
	OrderID string  `json:"order_id"`
	Amount  float64 `json:"amount" jsonschema:"in EUR, at most what is left to refund"`
}

// Refund is the payment API's answer.
type Refund struct {
	RefundID string  `json:"refund_id"`
	Amount   float64 `json:"amount"`
}

// Two tools defined from Go types. lookup_order's result derives the
// refund_due belief, which issue_refund rests on: the agent's code never
// submits a belief, and nothing but the contract repeats a tool's name.
func ExampleFunc() {
	ctx := context.Background()
	lookup := toolgate.Func(toolgate.Tool{Unscoped: true,
		Name: "lookup_order", Description: "Look up an order by id.", Result: "order",
		Derives: []toolgate.Derive{{
			Belief: "refund_due",
			Value:  "result.refundable && result.refunded < result.amount",
			Fields: map[string]string{"order_id": "result.order_id", "max_refund": "result.amount - result.refunded"},
		}},
	}, func(_ context.Context, _ toolgate.Invocation, a OrderArgs) (Order, error) {
		return Order{OrderID: a.OrderID, Amount: 80, Refunded: 30, Refundable: true}, nil
	})
	refund := toolgate.Func(toolgate.Tool{Unscoped: true,
		Name: "issue_refund", Description: "Refund an order.", Result: "refund",
		Requires: []string{"refund_due"},
		Bindings: []toolgate.Binding{
			{Arg: "order_id", Percept: "order", Op: "equal"},
			{Arg: "amount", Percept: "order", Op: "at_most"},
		},
		Once: &kernel.OnceKey{Fields: []string{"order_id"}}, // each order refunded once
	}, func(_ context.Context, inv toolgate.Invocation, a RefundArgs) (Refund, error) {
		return Refund{RefundID: "re_" + a.OrderID, Amount: a.Amount}, nil // a real effect passes inv.Key on
	})
	// A rule reads the derived belief's fields: a refund is of at most
	// what is left to refund.
	rs, err := rules.New(rules.OnAction("refund_within_assessment", "issue_refund",
		`action.order_id == beliefs.refund_due.order_id && action.amount <= beliefs.refund_due.max_refund`))
	if err != nil {
		panic(err)
	}
	g, err := toolgate.New(ctx, toolgate.Config{
		Kernel:    kernel.Config{Validators: []kernel.Validator{rs}},
		Tools:     []toolgate.Tool{lookup, refund},
		Contracts: map[string][]string{"support": {"lookup_order", "issue_refund"}},
	})
	if err != nil {
		panic(err)
	}
	defer g.Close()
	call := func(tool, args string) toolgate.Result {
		res, err := g.Call(ctx, toolgate.Call{Tool: tool, Args: json.RawMessage(args), Caller: "support", TraceID: "ticket-9"})
		if err != nil {
			panic(err)
		}
		return res
	}

	fmt.Println(string(g.Tools()[1].Parameters))
	res := call("lookup_order", `{"order_id":"A1"}`)
	fmt.Println(res.Code, res.Derived[0].Belief, res.Derived[0].Code, res.Derived[0].Value)
	res = call("issue_refund", `{"order_id":"A1","amount":"50"}`)
	fmt.Println(res.Code, res.RootCause.Detail)
	res = call("issue_refund", `{"order_id":"A1","amount":60}`)
	fmt.Println(res.Code)
	res = call("issue_refund", `{"order_id":"A1","amount":50}`)
	fmt.Println(res.Code, res.Output["refund_id"])
	res = call("issue_refund", `{"order_id":"A1","amount":50}`)
	fmt.Println(res.Code)
	// Output:
	// {"type":"object","properties":{"order_id":{"type":"string"},"amount":{"type":"number","description":"in EUR, at most what is left to refund"}},"required":["order_id","amount"],"additionalProperties":false}
	// EFFECT_SUCCEEDED refund_due COMMITTED true
	// INVALID_ARGUMENTS argument "amount" must be number, not a string
	// RULE_VIOLATED
	// EFFECT_SUCCEEDED re_A1
	// DUPLICATE_ACTION
}

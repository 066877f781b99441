package toolgate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/blackboardkernel/bk/audit"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/toolgate"
)

// supportDesk builds a gate with two tools: lookup_order, read-only, whose
// result is an "order" percept; and issue_refund, which rests on the
// refund_due belief and needs approval above 500. refunds counts the
// refund effect's calls.
func supportDesk(refunds *int) (*kernel.Kernel, *toolgate.Gate) {
	tools := []toolgate.Tool{
		{
			Name:        "lookup_order",
			Description: "Look up an order by id.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`),
			Result:      "order",
			ReadOnly:    true, // a lookup changes nothing: a read_only run may still call it
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"order_id": inv.Args["order_id"], "amount": 700.0, "delivered": false}, nil
			},
		},
		{
			// This desk's tickets record no request, so the refund waives
			// the scope; ExampleGate_RecordRequest scopes it.
			Unscoped:    true,
			Name:        "issue_refund",
			Description: "Refund an order.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"},"amount":{"type":"number"}},` +
				`"required":["order_id","amount"]}`),
			Requires: []string{"refund_due"},
			// The refund is of the order looked up, of at most its amount.
			Bindings: []toolgate.Binding{
				{Arg: "order_id", Percept: "order", Op: "equal"},
				{Arg: "amount", Percept: "order", Op: "at_most"},
			},
			Result:   "refund",
			Approval: "amount > 500",
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				*refunds++ // a real effect passes inv.Key to the payment API
				return blackboard.Payload{"refund_id": "re_1", "amount": inv.Args["amount"]}, nil
			},
		},
	}
	// The gate builds the kernel, and registers the tools' action types
	// with it; the kernel's other options go through WithKernel.
	g, err := toolgate.New(context.Background(), toolgate.Config{
		Kernel:    kernel.Config{BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}}},
		Tools:     tools,
		Contracts: map[string][]string{"support": {"lookup_order", "issue_refund"}},
	})
	if err != nil {
		panic(err)
	}
	return g.Kernel(), g
}

// A refund asked for before anything is known is refused with a hint for
// the model; once the order is looked up and the refund is due, the refund
// waits for a person's approval, then runs once however often it is
// executed.
func Example() {
	ctx := context.Background()
	refunds := 0
	k, g := supportDesk(&refunds)
	defer g.Close()
	call := func(id, tool, args string) toolgate.Result {
		res, err := g.Call(ctx, toolgate.Call{ID: id, Tool: tool, Args: json.RawMessage(args), Caller: "support", TraceID: "ticket-7"})
		if err != nil {
			panic(err)
		}
		return res
	}

	res := call("call_1", "issue_refund", `{"order_id":"A1","amount":700}`)
	fmt.Println(res.Outcome, res.Code)
	fmt.Println(res.Hint)

	res = call("call_2", "lookup_order", `{"order_id":"A1"}`)
	fmt.Println(res.Outcome, res.Output["amount"])

	// The agent's planner concludes that the refund is due, on the order.
	if _, err := k.Proposer(blackboard.RolePlanner, "analyst").Submit(ctx, kernel.Entry{TraceID: "ticket-7", Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}}); err != nil {
		panic(err)
	}

	res = call("call_3", "issue_refund", `{"order_id":"A1","amount":700}`)
	fmt.Println(res.Outcome, res.Code, res.ActionID)

	// A person reviews what waits and approves it, for an hour.
	pending, err := g.Pending(ctx, "ticket-7")
	if err != nil {
		panic(err)
	}
	p := pending[0]
	fmt.Println("pending:", p.Tool, p.Args["amount"], p.Reason)
	if _, err := g.Approver("human:alice").Decide(ctx, audit.Approval{TraceID: "ticket-7", ActionID: p.ActionID, Digest: p.Digest, Decision: audit.Approved, Note: "checked the order"}); err != nil {
		panic(err)
	}

	for range 2 {
		res, err = g.Execute(ctx, p.ActionID)
		if err != nil {
			panic(err)
		}
		fmt.Println(res.Outcome, res.Code, res.Output["refund_id"])
	}
	fmt.Println("refund effect calls:", refunds)
	// Output:
	// refused NO_COMMITTED_BELIEF
	// The conditions for issue_refund are not established (no committed belief refund_due). Establish them first (look up what they rest on), or do not call it.
	// executed 700
	// pending_approval APPROVAL_REQUIRED actions:ticket-7:13
	// pending: issue_refund 700 approval rule amount > 500
	// executed EFFECT_SUCCEEDED re_1
	// executed EFFECT_SUCCEEDED re_1
	// refund effect calls: 1
}

// Surface lists what a model may be shown: lookup_order always, the refund
// only once refund_due holds in the trace.
func ExampleGate_Surface() {
	ctx := context.Background()
	refunds := 0
	k, g := supportDesk(&refunds)
	defer g.Close()
	show := func() {
		specs, err := g.Surface(ctx, "support", "ticket-8", "")
		if err != nil {
			panic(err)
		}
		names := make([]string, len(specs))
		for i, s := range specs {
			names[i] = s.Name
		}
		fmt.Println(strings.Join(names, ", "))
	}
	show()
	if _, err := g.Call(ctx, toolgate.Call{Tool: "lookup_order", Args: json.RawMessage(`{"order_id":"A1"}`), Caller: "support", TraceID: "ticket-8"}); err != nil {
		panic(err)
	}
	if _, err := k.Proposer(blackboard.RolePlanner, "analyst").Submit(ctx, kernel.Entry{TraceID: "ticket-8", Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}}); err != nil {
		panic(err)
	}
	show()
	// Output:
	// lookup_order
	// lookup_order, issue_refund
}

// Every percept the gate writes about an effect carries an [audit.Effect]:
// the attempt, persisted before the effect ran, and the result.
func ExampleEffectOf() {
	ctx := context.Background()
	refunds := 0
	k, g := supportDesk(&refunds)
	defer k.Close()
	if _, err := g.Call(ctx, toolgate.Call{Tool: "lookup_order", Args: json.RawMessage(`{"order_id":"A1"}`), Caller: "support", TraceID: "ticket-9"}); err != nil {
		panic(err)
	}
	for r, err := range k.Handle(blackboard.RoleTool, "reader").Trace(ctx, "ticket-9") {
		if err != nil {
			panic(err)
		}
		if e, ok := audit.EffectOf(r); ok {
			fmt.Printf("%s: %s %s, attempt %d, code %q\n", r.Kind, e.Tool, e.Status, e.Attempt, e.Code)
		}
	}
	// Output:
	// effect_attempt: lookup_order attempted, attempt 1, code ""
	// order: lookup_order succeeded, attempt 1, code "EFFECT_SUCCEEDED"
}

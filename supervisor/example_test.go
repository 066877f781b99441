package supervisor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/supervisor"
	"github.com/blackboardkernel/bk/toolgate"
)

// A supervisor resumes a refund once a person approves it, and finds an
// email whose process was cut short after sending it: the email has no
// key the mail server honours, so it is reported as EFFECT_UNKNOWN and not
// sent again.
func ExampleSupervisor_Start() {
	ctx := context.Background()
	sent, refunds := 0, 0
	crash := func() {} // the email's process dies after sending
	pay := json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"},"amount":{"type":"number"}},"required":["order_id","amount"]}`)
	bound := []toolgate.Binding{{Arg: "order_id", Percept: "order", Op: "equal"}, {Arg: "amount", Percept: "order", Op: "at_most"}}
	g, err := toolgate.New(ctx, toolgate.Config{
		Kernel:    kernel.Config{BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}}},
		Lease:     time.Second,
		Contracts: map[string][]string{"support": {"lookup_order", "issue_refund", "send_email"}},
		Tools: []toolgate.Tool{{Unscoped: true, Name: "lookup_order", Result: "order",
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"order_id": inv.Args["order_id"], "amount": 700.0}, nil
			}}, {Unscoped: true, Name: "issue_refund", Parameters: pay, Requires: []string{"refund_due"}, Bindings: bound,
			Once: &kernel.OnceKey{Fields: []string{"order_id"}}, Approval: "amount > 500",
			Effect: func(context.Context, toolgate.Invocation) (blackboard.Payload, error) {
				refunds++
				return blackboard.Payload{"refund_id": "re_1"}, nil
			}}, {Unscoped: true, Name: "send_email", Parameters: pay, Requires: []string{"refund_due"}, Bindings: bound,
			Effect: func(ctx context.Context, _ toolgate.Invocation) (blackboard.Payload, error) {
				sent++
				crash()
				return nil, ctx.Err()
			}}},
	})
	if err != nil {
		panic(err)
	}
	defer g.Close()
	call := func(ctx context.Context, trace, tool, args string) toolgate.Result {
		res, err := g.Call(ctx, toolgate.Call{Tool: tool, Args: json.RawMessage(args), Caller: "support", TraceID: trace})
		if err != nil && ctx.Err() == nil {
			panic(err)
		}
		return res
	}
	for _, trace := range []string{"ticket-1", "ticket-2"} {
		call(ctx, trace, "lookup_order", `{"order_id":"A1"}`)
		if _, err := g.Kernel().Proposer(blackboard.RolePlanner, "analyst").Submit(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Beliefs, Kind: "refund_due",
			Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}}); err != nil {
			panic(err)
		}
	}
	res := call(ctx, "ticket-1", "issue_refund", `{"order_id":"A1","amount":700}`)
	fmt.Println("ticket-1 refund:", res.Outcome)
	cctx, cancel := context.WithCancel(ctx)
	crash = cancel
	res = call(cctx, "ticket-2", "send_email", `{"order_id":"A1","amount":700}`)
	crash = func() {}
	fmt.Println("ticket-2 email: the process died after sending it:", cctx.Err() != nil)

	// In main: one call, until the program ends.
	events := make(chan supervisor.Event, 16)
	sup, err := supervisor.New(g, supervisor.Config{
		Interval: 10 * time.Millisecond,
		Events:   func(_ context.Context, ev supervisor.Event) { events <- ev },
	})
	if err != nil {
		panic(err)
	}
	if err := sup.Start(ctx); err != nil {
		panic(err)
	}
	defer sup.Close() // deferred after g.Close: runs first

	// A person approves the refund.
	pending, err := g.Pending(ctx, "")
	if err != nil {
		panic(err)
	}
	for _, p := range pending {
		if _, err := g.Approver("human:alice").Decide(ctx, audit.Approval{TraceID: p.TraceID, ActionID: p.ActionID, Digest: p.Digest, Decision: audit.Approved, Note: "checked"}); err != nil {
			panic(err)
		}
	}
	var got []string
	for len(got) < 2 {
		ev := <-events
		if ev.Err != nil {
			panic(ev.Err)
		}
		got = append(got, fmt.Sprintf("%s %s: %s %s", ev.TraceID, ev.Op, ev.Result.Outcome, ev.Result.Code))
	}
	slices.Sort(got)
	for _, line := range got {
		fmt.Println(line)
	}
	fmt.Println("refunds:", refunds, "emails sent:", sent)
	// Output:
	// ticket-1 refund: pending_approval
	// ticket-2 email: the process died after sending it: true
	// ticket-1 resume: executed EFFECT_SUCCEEDED
	// ticket-2 recover: failed EFFECT_UNKNOWN
	// refunds: 1 emails sent: 1
}

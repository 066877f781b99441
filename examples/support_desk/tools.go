package main

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/blackboardkernel/bk/supervisor"
	"github.com/blackboardkernel/bk/toolgate"
	"github.com/blackboardkernel/bk/worker/llm"
)

// The tools' bodies and argument types: what each tool does to the
// simulated world once the gate let it run. They are not integration code
// (integration.go is): a program has them whatever governs it.

// The tools' arguments, as their bodies take them; the schemas the model
// is shown are generated from them (toolgate.Func).
type orderArgs struct {
	OrderID string `json:"order_id" jsonschema:"the order's id, e.g. A1"`
}

type refundArgs struct {
	OrderID string  `json:"order_id"`
	Amount  float64 `json:"amount" jsonschema:"in EUR; at most what is left to refund on the order"`
	Reason  string  `json:"reason" jsonschema:"late, damaged, wrong_item, not_received or other"`
}

type emailArgs struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
	Body    string `json:"body"`
}

// desk is the governed support desk: the gate, the agent calling its tools,
// the supervisor of its actions, and the world the tools act on.
type desk struct {
	g     *toolgate.Gate
	agent *llm.Agent
	sup   *supervisor.Supervisor
	w     *world

	// The crash switch (--crash-after): once effects effect calls were
	// made, the next refund the payment API pays kills the process before
	// the gate records the result. Effects run on the agent's goroutine
	// and the supervisor's, hence the atomic count.
	effects    atomic.Int64
	crashAfter int
	out        io.Writer
	onCrash    func(trace string) // prints what the trace decided so far
}

// lookup reads the order. The order system's stale flag lands at the top
// of the result, where the kernel reads it.
func (d *desk) lookup(_ context.Context, _ toolgate.Invocation, a orderArgs) (map[string]any, error) {
	d.effects.Add(1)
	return d.w.Lookup(a.OrderID)
}

// refund asks the payment API to refund, under the gate's idempotency key.
func (d *desk) refund(_ context.Context, inv toolgate.Invocation, a refundArgs) (map[string]any, error) {
	n := d.effects.Add(1)
	p, replayed, err := d.w.Refund(inv.Key, a.OrderID, a.Amount)
	if err == errUnavailable {
		// Our own words, no customer data: the record may keep them.
		return nil, toolgate.Retryable(toolgate.Recordable(err))
	}
	if err != nil {
		return nil, err
	}
	if d.crashAfter > 0 && n >= int64(d.crashAfter) && !replayed {
		if d.onCrash != nil {
			d.onCrash(inv.TraceID)
		}
		fmt.Fprintf(d.out, "\n*** --crash-after %d: the payment API paid %s (%.2f on order %s); killing the process before the gate records the result\n",
			d.crashAfter, p.ID, p.Amount, p.OrderID)
		crash()
	}
	out := map[string]any{"refund_id": p.ID, "order_id": p.OrderID, "amount": p.Amount}
	if replayed {
		out["idempotent_replay"] = true // the payment API returned the first payment; no money moved
	}
	return out, nil
}

// email sends a message through the outbox, under the gate's idempotency
// key.
func (d *desk) email(_ context.Context, inv toolgate.Invocation, a emailArgs) (map[string]any, error) {
	d.effects.Add(1)
	m, err := d.w.Send(inv.Key, a.To, a.Subject)
	if err != nil {
		return nil, err
	}
	return map[string]any{"message_id": m.ID, "to": m.To}, nil
}

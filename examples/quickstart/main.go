// Command quickstart replays the paper's two baseline walkthroughs (§7.1
// stale evidence, §7.2 conflicting evidence at confidence 0.8 and 0.3) on the
// kernel and prints each episode with kernel.Timeline, as the paper's
// representative traces (§10.4–10.5) read: every line is read back from
// the records the kernel stored.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/blackboardkernel/bk/kernel"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// scenario is one episode's input: the charge the payment tool observed.
type scenario struct {
	title, trace string
	charge       kernel.Payload
	confidence   *float64
}

var scenarios = []scenario{
	{"§7.1 stale evidence", "stale", kernel.Payload{"charge_id": "ch_7Q1y2B4D5E", "amount": 89.00, "stale": true}, nil},
	{"§7.2 conflicting evidence, arbitrated", "conflict-high", kernel.Payload{"charge_id": "ch_5R2z3C6F7G", "amount": 249.50, "conflict": true}, kernel.Confidence(0.8)},
	{"§7.2 conflicting evidence, unresolved", "conflict-low", kernel.Payload{"charge_id": "ch_5R2z3C6F7G", "amount": 249.50, "conflict": true}, kernel.Confidence(0.3)},
}

// run plays every scenario on one kernel with a fixed clock, so the output
// is the same on every run.
func run(w io.Writer) error {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	k, err := kernel.New(kernel.WithClock(func() time.Time { return start }))
	if err != nil {
		return err
	}
	defer k.Close()
	for i, sc := range scenarios {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := play(context.Background(), k, w, sc); err != nil {
			return fmt.Errorf("%s: %w", sc.title, err)
		}
	}
	return nil
}

// play is the paper's bk agent: constraint, percept, belief, plan, then the
// refund if the plan is feasible, else queue_for_review with the code that
// stopped it.
func play(ctx context.Context, k *kernel.Kernel, w io.Writer, sc scenario) error {
	tool, planner := k.Tool("payment_tool"), k.Planner("planner")
	if _, err := fmt.Fprintf(w, "%s\n", sc.title); err != nil {
		return err
	}
	if _, err := k.Symbolic("policy").CommitConstraint(ctx, sc.trace,
		kernel.Constraint{Name: "no_duplicate_refund", Enabled: true, BlocksField: "is_duplicate"}, kernel.ScopeEpisode); err != nil {
		return err
	}
	if _, err := tool.Write(ctx, kernel.Entry{TraceID: sc.trace, Slot: kernel.Percepts, Kind: "charge", Payload: sc.charge, Confidence: sc.confidence}); err != nil {
		return err
	}
	if _, err := planner.Submit(ctx, kernel.Entry{TraceID: sc.trace, Slot: kernel.Beliefs, Kind: "refund_due",
		Payload: kernel.Payload{kernel.KeyValue: true, kernel.KeyDependsOn: []string{"charge"}}}); err != nil {
		return err
	}
	p, err := planner.Submit(ctx, kernel.Entry{TraceID: sc.trace, Slot: kernel.Plans, Kind: "action_plan",
		Payload: kernel.Payload{kernel.KeySteps: []any{map[string]any{
			kernel.KeyAction: "issue_refund", kernel.KeyRequiresBeliefs: []string{"refund_due"}, "is_duplicate": false}}}})
	if err != nil {
		return err
	}
	reason := p.Code
	if p.Committed() {
		a, err := planner.Submit(ctx, kernel.Entry{TraceID: sc.trace, Slot: kernel.Actions, Kind: "issue_refund",
			Payload: kernel.Payload{"charge_id": sc.charge["charge_id"], "amount": sc.charge["amount"], "is_duplicate": false,
				kernel.KeyRequiresBeliefs: []string{"refund_due"}}})
		if err != nil {
			return err
		}
		reason = a.Code
	}
	if !reason.OK() {
		// The safe fallback, with the code that stopped the refund.
		if _, err := planner.Submit(ctx, kernel.Entry{TraceID: sc.trace, Slot: kernel.Actions, Kind: kernel.FallbackQueueForReview,
			Payload: kernel.Payload{kernel.KeyReason: string(reason)}}); err != nil {
			return err
		}
	}
	// The kernel's own account of the episode, read back from the store.
	tl, err := k.Timeline(ctx, sc.trace)
	if err != nil {
		return err
	}
	return tl.WriteText(w)
}

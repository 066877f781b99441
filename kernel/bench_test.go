package kernel_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/blackboardkernel/bk/kernel"
)

// runEpisode runs the bk agent's governed episode (REPRODUCTION §3) on trace:
// constraint, percept, belief, plan, then the refund or the fallback.
func runEpisode(ctx context.Context, sym *kernel.Symbolic, tool *kernel.Tool, planner *kernel.Planner, trace string, stale bool) error {
	if _, err := sym.CommitConstraint(ctx, trace, kernel.Constraint{Name: "no_duplicate_refund", Enabled: true, BlocksField: "is_duplicate"}, 0); err != nil {
		return err
	}
	if _, err := tool.Write(ctx, kernel.Entry{TraceID: trace, Slot: kernel.Percepts, Kind: "charge", Payload: kernel.Payload{
		"charge_id": "ch_3P0x1A2B3C", "amount": 149.99, "currency": "usd", "status": "disputed",
		"stale": stale, "conflict": false, "low_confidence": false, "customer_id": "cus_9Xk2mN"}}); err != nil {
		return err
	}
	if _, err := planner.Submit(ctx, kernel.Entry{TraceID: trace, Slot: kernel.Beliefs, Kind: "refund_due",
		Payload: kernel.Payload{"value": true, "depends_on": []string{"charge"}}}); err != nil {
		return err
	}
	plan, err := planner.Submit(ctx, kernel.Entry{TraceID: trace, Slot: kernel.Plans, Kind: "action_plan",
		Payload: kernel.Payload{"steps": []any{map[string]any{"action": "issue_refund", "requires_beliefs": []string{"refund_due"}, "is_duplicate": false}}}})
	if err != nil {
		return err
	}
	if plan.Committed() {
		act, err := planner.Submit(ctx, kernel.Entry{TraceID: trace, Slot: kernel.Actions, Kind: "issue_refund", Payload: kernel.Payload{
			"type": "issue_refund", "charge_id": "ch_3P0x1A2B3C", "amount": 149.99, "reason": "product_not_received",
			"is_duplicate": false, "requires_beliefs": []string{"refund_due"}}})
		if err != nil || act.Committed() {
			return err
		}
	}
	_, err = planner.Submit(ctx, kernel.Entry{TraceID: trace, Slot: kernel.Actions, Kind: "queue_for_review",
		Payload: kernel.Payload{"type": "queue_for_review", "reason": string(plan.Code)}, InputRefs: []string{plan.ProposalID}})
	return err
}

// benchEpisodes measures governed episodes on distinct traces of one kernel
// whose store already holds prefill records of other traces.
func benchEpisodes(b *testing.B, store kernel.Store, prefill int) {
	ctx := context.Background()
	k, err := kernel.New(kernel.WithStore(store))
	if err != nil {
		b.Fatal(err)
	}
	sym, tool, planner := k.Symbolic("policy"), k.Tool("stripe"), k.Planner("bk")
	for i := 0; i < prefill; i++ {
		if _, err := tool.Write(ctx, kernel.Entry{TraceID: "old-" + strconv.Itoa(i/10), Slot: kernel.Percepts, Kind: "charge",
			Payload: kernel.Payload{"amount": 1.0, "stale": false}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := runEpisode(ctx, sym, tool, planner, "ep-"+strconv.Itoa(i), i%10 == 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEpisodeMemory(b *testing.B) {
	for _, n := range []int{0, 1_000, 10_000, 100_000} {
		b.Run("prefill="+strconv.Itoa(n), func(b *testing.B) { benchEpisodes(b, kernel.NewMemStore(), n) })
	}
}

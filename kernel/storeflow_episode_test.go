package kernel_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/storetest"
)

// Episode runs the paper's governed refund episode (the bk agent of
// docs/reproduction.md §3) on one trace: the no_duplicate_refund constraint, the
// charge percept, the refund_due belief, the plan, then the refund or the
// queue_for_review fallback. A stale charge takes the fallback path. It
// returns the code of the action that ended the episode.
func runEpisode(ctx context.Context, k *kernel.Kernel, trace string, stale bool) (reason.Code, error) {
	sym, tool, planner := k.Symbolic("policy"), k.Handle(blackboard.RoleTool, "stripe"), k.Proposer(blackboard.RolePlanner, "bk")
	if _, err := sym.CommitConstraint(ctx, trace, kernel.Constraint{Name: "no_duplicate_refund", Enabled: true, BlocksField: "is_duplicate"}, ""); err != nil {
		return "", err
	}
	if _, err := tool.Write(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: "charge", Payload: blackboard.Payload{
		"charge_id": "ch_3P0x1A2B3C", "amount": 149.99, "currency": "usd", "status": "disputed",
		"stale": stale, "conflict": false, "low_confidence": false, "customer_id": "cus_9Xk2mN"}}); err != nil {
		return "", err
	}
	if _, err := planner.Submit(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"charge"}}}); err != nil {
		return "", err
	}
	plan, err := planner.Submit(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Plans, Kind: "action_plan",
		Payload: blackboard.Payload{"steps": []any{map[string]any{"action": "issue_refund", "requires_beliefs": []string{"refund_due"}, "is_duplicate": false}}}})
	if err != nil {
		return "", err
	}
	if plan.Committed() {
		act, err := planner.Submit(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Actions, Kind: "issue_refund", Payload: blackboard.Payload{
			"type": "issue_refund", "charge_id": "ch_3P0x1A2B3C", "amount": 149.99, "reason": "product_not_received",
			"is_duplicate": false, "requires_beliefs": []string{"refund_due"}}})
		if err != nil || act.Committed() {
			return act.Code, err
		}
	}
	fb, err := planner.Submit(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Actions, Kind: kernel.FallbackQueueForReview,
		Payload: blackboard.Payload{"type": kernel.FallbackQueueForReview, "reason": string(plan.Code)}, InputRefs: []string{plan.ProposalID}})
	if err != nil {
		return "", err
	}
	if !fb.Committed() {
		return fb.Code, fmt.Errorf("fallback refused: %s", fb.Code)
	}
	return reason.Code(kernel.FallbackQueueForReview), nil
}

// benchEpisode measures Episode on fresh traces of one kernel over s, which
// is first prefilled with prefill records of other traces. One episode in
// ten has a stale charge and ends in the fallback, as in the study. The
// kernel is built from cfg, over s.
func benchEpisode(b *testing.B, s store.Store, prefill int, cfg kernel.Config) {
	storetest.Prefill(b, s, prefill)
	cfg.Store = s
	k, err := kernel.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := runEpisode(ctx, k, "ep-"+strconv.Itoa(i), i%10 == 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "episodes/s")
}

// benchEpisodeParallel runs b.N episodes on distinct traces of one kernel
// from g goroutines and reports the throughput.
func benchEpisodeParallel(b *testing.B, s store.Store, g int) {
	k, err := kernel.New(kernel.Config{Store: s})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var next atomic.Int64
	var failed atomic.Value
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range g {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				if _, err := runEpisode(ctx, k, "par-"+strconv.FormatInt(i, 10), i%10 == 0); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "episodes/s")
}

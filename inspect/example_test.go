package inspect_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/inspect"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
)

// stale writes the paper's §10.4 trace to s: a stale charge, the belief
// rejected, the plan infeasible, the safe fallback committed. It returns
// the fallback's record.
func stale(ctx context.Context, s store.Store) (string, error) {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	k, err := kernel.New(kernel.Config{Store: s, Clock: func() time.Time { return start }})
	if err != nil {
		return "", err
	}
	if _, err := k.Handle(blackboard.RoleTool, "payment_tool").Write(ctx, kernel.Entry{TraceID: "stale", Slot: blackboard.Percepts, Kind: "charge",
		Payload: blackboard.Payload{"charge_id": "ch_1", "stale": true}}); err != nil {
		return "", err
	}
	planner := k.Proposer(blackboard.RolePlanner, "planner")
	if _, err := planner.Submit(ctx, kernel.Entry{TraceID: "stale", Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"charge"}}}); err != nil {
		return "", err
	}
	plan, err := planner.Submit(ctx, kernel.Entry{TraceID: "stale", Slot: blackboard.Plans, Kind: "action_plan",
		Payload: blackboard.Payload{"steps": []any{map[string]any{"action": "issue_refund", "requires_beliefs": []string{"refund_due"}}}}})
	if err != nil {
		return "", err
	}
	fb, err := planner.Submit(ctx, kernel.Entry{TraceID: "stale", Slot: blackboard.Actions, Kind: kernel.FallbackQueueForReview,
		Payload: blackboard.Payload{"reason": string(plan.Code)}})
	return fb.CommittedID, err
}

// A trace's events in the order of the kernel's loop, and what became of
// its actions.
func ExampleTimeline() {
	ctx := context.Background()
	s := memstore.New()
	if _, err := stale(ctx, s); err != nil {
		fmt.Println(err)
		return
	}
	tl, err := inspect.Timeline(ctx, s, "", "stale")
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := tl.WriteSteps(os.Stdout); err != nil {
		fmt.Println(err)
	}
	fmt.Println("refused:", tl.Refused())
	// Output:
	// trace "stale" (namespace default): 5 records, 3 decisions, 2 refused; outcome: queue_for_review committed
	//   t0   percept.charge committed (stale=true)                          percepts:stale:1
	//   t2   belief.refund_due proposed                                     beliefs:stale:2
	//   t3   evidence validation: STALE_EVIDENCE -- belief rejected         beliefs:stale:2
	//   t5   plan.action_plan proposed                                      plans:stale:3
	//   t6   plan validation: PLAN_MISSING_BELIEF -- plan rejected          plans:stale:3
	//   t8   action.queue_for_review proposed                               actions:stale:4
	//   t9   action.queue_for_review committed (reason=PLAN_MISSING_BELIEF) actions:stale:5
	// refused: [beliefs:stale:2 plans:stale:3]
}

// Why was the refund not paid? Explain walks from the fallback back to the
// stale percept.
func ExampleExplain() {
	ctx := context.Background()
	s := memstore.New()
	fallback, err := stale(ctx, s)
	if err != nil {
		fmt.Println(err)
		return
	}
	ex, err := inspect.Explain(ctx, s, fallback)
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := fmt.Print(ex); err != nil {
		fmt.Println(err)
	}
	cause, _ := ex.RootCause()
	fmt.Println(ex.Verdict(), cause.Code, cause.Record)
	// Output:
	// actions:stale:5: fallback (COMMITTED)
	// receipt: f98b791e7f148db11388200085264e4b0457308f6aa43045fad672a2efe67eca
	// actions:stale:5  action.queue_for_review committed (COMMITTED) reason=PLAN_MISSING_BELIEF
	// ├─ proposal: actions:stale:4  action.queue_for_review proposed by planner: committed
	// └─ instead of: plans:stale:3  plan.action_plan proposed by planner: refused PLAN_MISSING_BELIEF
	//    └─ failed: beliefs:stale:2  belief.refund_due proposed by planner: refused STALE_EVIDENCE  <-- failed
	//       └─ evidence: percepts:stale:1  percept.charge observed by payment_tool (stale=true)  <-- failed
	// root cause: STALE_EVIDENCE on percepts:stale:1
	// fallback STALE_EVIDENCE percepts:stale:1
}

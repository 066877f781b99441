package inspect_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/inspect"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store/memstore"
)

// The paper's §10.4 trace: a stale charge, the belief rejected, the plan
// infeasible, the safe fallback committed.
func ExampleTimeline() {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s := memstore.New()
	k, _ := kernel.New(kernel.Config{Store: s, Clock: func() time.Time { return start }})
	ctx := context.Background()
	_, _ = k.Handle(blackboard.RoleTool, "payment_tool").Write(ctx, kernel.Entry{TraceID: "stale", Slot: blackboard.Percepts, Kind: "charge",
		Payload: blackboard.Payload{"charge_id": "ch_1", "stale": true}})
	planner := k.Proposer(blackboard.RolePlanner, "planner")
	_, _ = planner.Submit(ctx, kernel.Entry{TraceID: "stale", Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"charge"}}})
	plan, _ := planner.Submit(ctx, kernel.Entry{TraceID: "stale", Slot: blackboard.Plans, Kind: "action_plan",
		Payload: blackboard.Payload{"steps": []any{map[string]any{"action": "issue_refund", "requires_beliefs": []string{"refund_due"}}}}})
	_, _ = planner.Submit(ctx, kernel.Entry{TraceID: "stale", Slot: blackboard.Actions, Kind: kernel.FallbackQueueForReview,
		Payload: blackboard.Payload{"reason": string(plan.Code)}})

	tl, err := inspect.Timeline(ctx, s, "", "stale")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range tl.Events {
		fmt.Println(e.Label(), e.Line())
	}
	// Output:
	// t0 percept.charge committed (stale=true)
	// t2 belief.refund_due proposed
	// t3 evidence validation: STALE_EVIDENCE -- belief rejected
	// t5 plan.action_plan proposed
	// t6 plan validation: PLAN_MISSING_BELIEF -- plan rejected
	// t8 action.queue_for_review proposed
	// t9 action.queue_for_review committed (reason=PLAN_MISSING_BELIEF)
}

// Why was the refund not paid? Explain walks from the fallback back to the
// stale percept.
func ExampleExplain() {
	s := memstore.New()
	at := time.UnixMilli(1_767_225_600_000) // a fixed clock: the receipt is the same each run
	k, _ := kernel.New(kernel.Config{Store: s, Clock: func() time.Time { return at }})
	ctx := context.Background()
	_, _ = k.Handle(blackboard.RoleTool, "payment_tool").Write(ctx, kernel.Entry{TraceID: "stale", Slot: blackboard.Percepts, Kind: "charge",
		Payload: blackboard.Payload{"charge_id": "ch_1", "stale": true}})
	planner := k.Proposer(blackboard.RolePlanner, "planner")
	_, _ = planner.Submit(ctx, kernel.Entry{TraceID: "stale", Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"charge"}}})
	plan, _ := planner.Submit(ctx, kernel.Entry{TraceID: "stale", Slot: blackboard.Plans, Kind: "action_plan",
		Payload: blackboard.Payload{"steps": []any{map[string]any{"action": "issue_refund", "requires_beliefs": []string{"refund_due"}}}}})
	fb, _ := planner.Submit(ctx, kernel.Entry{TraceID: "stale", Slot: blackboard.Actions, Kind: kernel.FallbackQueueForReview,
		Payload: blackboard.Payload{"reason": string(plan.Code)}})

	ex, err := inspect.Explain(ctx, s, fb.CommittedID)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = ex.WriteText(os.Stdout)
	// Output:
	// actions:stale:5: fallback (COMMITTED)
	// receipt: c88b6c5ec43e50a3f48311efdcabcdd6aa471fbfb4592434576abc02e3127305
	// actions:stale:5  action.queue_for_review committed (COMMITTED) reason=PLAN_MISSING_BELIEF
	// ├─ proposal: actions:stale:4  action.queue_for_review proposed by planner: committed
	// └─ instead of: plans:stale:3  plan.action_plan proposed by planner: refused PLAN_MISSING_BELIEF
	//    └─ failed: beliefs:stale:2  belief.refund_due proposed by planner: refused STALE_EVIDENCE  <-- failed
	//       └─ evidence: percepts:stale:1  percept.charge observed by payment_tool (stale=true)  <-- failed
	// root cause: STALE_EVIDENCE on percepts:stale:1
}

package kernel_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
)

// A symbolic validator's declarative constraint (paper §8.2) blocks a plan
// step whose field it names; the code is built from the constraint's name.
func Example_constraintBlocksPlan() {
	ctx := context.Background()
	k, err := kernel.New(kernel.Config{Clock: func() time.Time { return time.UnixMilli(0) }})
	if err != nil {
		log.Fatal(err)
	}
	defer k.Close()
	const trace = "dup-1"

	_, err = k.Symbolic("policy").CommitConstraint(ctx, trace,
		kernel.Constraint{Name: "no_duplicate_refund", Enabled: true, BlocksField: "is_duplicate"}, blackboard.ScopeEpisode)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := k.Handle(blackboard.RoleTool, "payments").Write(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: "charge",
		Payload: blackboard.Payload{"amount": 59.99}}); err != nil {
		log.Fatal(err)
	}
	planner := k.Proposer(blackboard.RolePlanner, "planner")
	steps := []kernel.Entry{
		{TraceID: trace, Slot: blackboard.Beliefs, Kind: "refund_due",
			Payload: blackboard.Payload{"value": true, "depends_on": []string{"charge"}}},
		{TraceID: trace, Slot: blackboard.Plans, Kind: "action_plan", Payload: blackboard.Payload{"steps": []any{
			map[string]any{"action": "issue_refund", "requires_beliefs": []string{"refund_due"}, "is_duplicate": true},
		}}},
	}
	for _, e := range steps {
		d, err := planner.Submit(ctx, e)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(e.Slot, e.Kind, d.Code)
	}
	// Output:
	// beliefs refund_due COMMITTED
	// plans action_plan PLAN_NO_DUPLICATE_REFUND_BLOCKED
}

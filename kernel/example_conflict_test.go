package kernel_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
)

// Conflicting sources are arbitrated by the confidence threshold (0.7 by
// default), not by the planner: at 0.8 the belief commits and the evidence
// artifact records the arbitration; at 0.3 it is UNRESOLVED_CONFLICT.
func Example_conflictArbitration() {
	ctx := context.Background()
	k, err := kernel.New(kernel.Config{Clock: func() time.Time { return time.UnixMilli(0) }})
	if err != nil {
		log.Fatal(err)
	}
	defer k.Close()
	tool, planner := k.Handle(blackboard.RoleTool, "payments"), k.Proposer(blackboard.RolePlanner, "planner")

	for _, conf := range []float64{0.8, 0.3} {
		trace := fmt.Sprintf("conflict-%.1f", conf)
		_, err := tool.Write(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: "charge",
			Payload: blackboard.Payload{"amount": 249.50, "conflict": true}, Confidence: new(conf)})
		if err != nil {
			log.Fatal(err)
		}
		d, err := planner.Submit(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Beliefs, Kind: "refund_due",
			Payload: blackboard.Payload{"value": true, "depends_on": []string{"charge"}}})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("confidence %.1f: %s\n", conf, d.Code)
		if d.Committed() {
			ev, err := planner.Get(ctx, d.EvidenceID)
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("  %s arbitrated=%v threshold=%v\n", ev.ID, ev.Payload["arbitrated"], ev.Payload["conflict_threshold"])
			b, err := planner.Get(ctx, d.CommittedID)
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("  %s evidence_refs=%v\n", b.ID, b.EvidenceRefs)
		}
	}
	// Output:
	// confidence 0.8: COMMITTED
	//   evidence:conflict-0.8:3 arbitrated=true threshold=0.7
	//   beliefs:conflict-0.8:4 evidence_refs=[evidence:conflict-0.8:3]
	// confidence 0.3: UNRESOLVED_CONFLICT
}

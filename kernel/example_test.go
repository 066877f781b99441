package kernel_test

import (
	"context"
	"fmt"
	"log"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
)

// A tool commits a stale charge; the planner's belief resting on it is
// rejected with a typed reason code.
func ExampleNew() {
	ctx := context.Background()
	k, err := kernel.New(kernel.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer k.Close()

	_, err = k.Handle(blackboard.RoleTool, "payments").Write(ctx, kernel.Entry{TraceID: "ep-1", Slot: blackboard.Percepts, Kind: "charge",
		Payload: blackboard.Payload{"amount": 89.00, "stale": true}})
	if err != nil {
		log.Fatal(err)
	}
	d, err := k.Proposer(blackboard.RolePlanner, "planner").Submit(ctx, kernel.Entry{TraceID: "ep-1", Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"charge"}}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.ProposalID, d.Code)
	// Output: beliefs:ep-1:2 STALE_EVIDENCE
}

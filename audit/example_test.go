package audit_test

import (
	"context"
	"fmt"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
)

// A governance layer submits a proposal with its decision record as a
// follow record, so both land in one batch; About reads the record back
// by id, and List streams the trace's records.
func Example() {
	ctx := context.Background()
	k, err := kernel.New(kernel.Config{})
	if err != nil {
		panic(err)
	}
	defer k.Close()
	d, err := k.Governor().Submit(ctx, "gate", kernel.Entry{TraceID: "ticket-1", Slot: blackboard.Actions, Kind: kernel.FallbackQueueForReview,
		Payload: blackboard.Payload{"requires_beliefs": []string{}}}, func(d kernel.Decision, committed blackboard.Record) ([]kernel.Follow, error) {
		r := audit.ForDecision("ticket-1", kernel.FallbackQueueForReview, d, committed)
		r.Context = blackboard.Payload{"tool": "escalate"}
		f, err := r.Follow()
		return []kernel.Follow{f}, err
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(d.Code, d.CommittedID, d.Appended)

	r, err := audit.About(ctx, k.Reader(), d.CommittedID)
	if err != nil {
		panic(err)
	}
	fmt.Println(r.ID, r.Outcome, r.Subject, r.Context["tool"])

	// A refusal before the kernel's pipeline is recorded on its own.
	if _, err := audit.Append(ctx, k.Governor(), audit.Entry{TraceID: "ticket-1", Kind: "delete_account",
		Outcome: audit.OutcomeRefused, Code: "TOOL_NOT_PERMITTED"}); err != nil {
		panic(err)
	}
	for r, err := range audit.List(ctx, k.Reader(), audit.Query{TraceID: "ticket-1"}) {
		if err != nil {
			panic(err)
		}
		fmt.Println(r.RecordID, r.Kind, r.Outcome, r.Code)
	}
	// Output:
	// COMMITTED actions:ticket-1:2 [evidence:ticket-1:3]
	// decision:actions:ticket-1:1 committed actions:ticket-1:2 escalate
	// evidence:ticket-1:3 queue_for_review committed COMMITTED
	// evidence:ticket-1:4 delete_account refused TOOL_NOT_PERMITTED
}

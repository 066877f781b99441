package toolgate_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/toolgate"
)

// An adapter resumes a call that waited for approval with one Resolve,
// for the approver the application verified and the digest the person
// was shown: the approval runs the refund at once, and the framework's
// retry of the same answer returns the recorded result.
func ExampleApprover_Resolve() {
	ctx := context.Background()
	refunds := 0
	k, g := supportDesk(&refunds)
	defer g.Close()
	call := func(id, tool, args string) toolgate.Result {
		res, err := g.Call(ctx, toolgate.Call{ID: id, Tool: tool, Args: json.RawMessage(args), Caller: "support", TraceID: "ticket-8"})
		if err != nil {
			panic(err)
		}
		return res
	}
	call("call_1", "lookup_order", `{"order_id":"A1"}`)
	if _, err := k.Proposer(blackboard.RolePlanner, "analyst").Submit(ctx, kernel.Entry{TraceID: "ticket-8", Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}}); err != nil {
		panic(err)
	}
	wait := call("call_2", "issue_refund", `{"order_id":"A1","amount":700}`)
	fmt.Println(wait.Outcome)

	pending, err := g.Pending(ctx, "ticket-8")
	if err != nil {
		panic(err)
	}
	p := pending[0]                    // what the person is shown: the tool, the arguments, the digest
	alice := g.Approver("human:alice") // the identity the application verified
	for range 2 {
		res, err := alice.Resolve(ctx, audit.Approval{TraceID: "ticket-8", ActionID: p.ActionID, Digest: p.Digest, Decision: audit.Approved, Note: "checked the order"})
		if err != nil {
			panic(err)
		}
		fmt.Println(res.Outcome, res.Code, res.Output["refund_id"])
	}
	fmt.Println("refund effect calls:", refunds)
	// Output:
	// pending_approval
	// executed EFFECT_SUCCEEDED re_1
	// executed EFFECT_SUCCEEDED re_1
	// refund effect calls: 1
}

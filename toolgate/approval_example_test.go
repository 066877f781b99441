package toolgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/blackboardkernel/bk/audit"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/toolgate"
)

// Two people decide one waiting refund, as two consoles over one store
// would: the first decision is written, the second is refused with a
// [toolgate.ErrDecided] error that names it, and nothing more is written.
func ExampleErrDecided() {
	ctx := context.Background()
	refunds := 0
	k, g := supportDesk(&refunds)
	defer g.Close()
	call := func(id, tool, args string) toolgate.Result {
		res, err := g.Call(ctx, toolgate.Call{ID: id, Tool: tool, Args: json.RawMessage(args), Caller: "support", TraceID: "ticket-9"})
		if err != nil {
			panic(err)
		}
		return res
	}
	call("call_1", "lookup_order", `{"order_id":"A1"}`)
	if _, err := k.Proposer(blackboard.RolePlanner, "analyst").Submit(ctx, kernel.Entry{TraceID: "ticket-9", Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}}); err != nil {
		panic(err)
	}
	wait := call("call_2", "issue_refund", `{"order_id":"A1","amount":700}`)

	approval, err := g.Approver("human:alice").Decide(ctx, audit.Approval{TraceID: "ticket-9", ActionID: wait.ActionID, Digest: wait.ArgsDigest, Decision: audit.Approved, Note: "checked the order"})
	if err != nil {
		panic(err)
	}
	_, err = g.Approver("human:bob").Decide(ctx, audit.Approval{TraceID: "ticket-9", ActionID: wait.ActionID, Digest: wait.ArgsDigest, Decision: audit.Denied, Note: "looks like a duplicate"})
	fmt.Println(errors.Is(err, toolgate.ErrDecided), strings.Contains(err.Error(), "(record "+approval.ID+")"))
	res, err := g.Execute(ctx, wait.ActionID)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Outcome, "refunds:", refunds)
	// Output:
	// true true
	// executed refunds: 1
}

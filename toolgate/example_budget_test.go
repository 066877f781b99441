package toolgate_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/toolgate"
)

// A lane's calls carry its budget and loop guard. The third identical
// lookup is a loop and spends nothing; the fourth call finds the lane's
// tool calls spent. Neither runs, each has its decision record, and the
// model reads why in the hint.
func ExampleCall_budget() {
	refunds := 0
	_, g := supportDesk(&refunds)
	defer g.Close()
	run, err := budget.New(budget.Limits{ToolCalls: 10}, "case-9", nil)
	if err != nil {
		panic(err)
	}
	lane, err := run.Sub(budget.Limits{ToolCalls: 3}, "")
	if err != nil {
		panic(err)
	}
	guard, err := budget.NewGuard(0, 0)
	if err != nil {
		panic(err)
	}
	for _, order := range []string{"A1", "A1", "A1", "B2", "C3"} {
		res, err := g.Call(context.Background(), toolgate.Call{Tool: "lookup_order", Caller: "support", TraceID: "case-9",
			Args: json.RawMessage(`{"order_id":"` + order + `"}`), Budget: lane, Guard: guard})
		if err != nil {
			panic(err)
		}
		line := fmt.Sprintf("%s: %s %s", order, res.Outcome, res.Code)
		if res.Hint != "" {
			line += " (" + res.Hint + ")"
		}
		fmt.Println(line)
	}
	res, err := g.Call(context.Background(), toolgate.Call{Tool: "lookup_order", Caller: "support", TraceID: "case-9",
		Args: json.RawMessage(`{"order_id":"D4"}`), Budget: lane, Guard: guard})
	if err != nil {
		panic(err)
	}
	f, _ := res.Failure()
	fmt.Println("for a lease and the router:", f.Category(), "retryable", f.Retryable())
	fmt.Println("the run used", run.Snapshot().Used[budget.ToolCalls], "tool calls")
	// Output:
	// A1: executed EFFECT_SUCCEEDED
	// A1: executed EFFECT_SUCCEEDED
	// A1: refused LOOP_DETECTED (this exact call was already made: use the result you have, change the arguments, or do something else)
	// B2: executed EFFECT_SUCCEEDED
	// C3: refused BUDGET_EXCEEDED (no tool calls are left in this run: answer from the results already gathered)
	// for a lease and the router: rate_limit retryable false
	// the run used 3 tool calls
}

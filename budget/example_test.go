package budget_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/blackboardkernel/bk/budget"
)

// A worker's tool calls pass the loop guard and then the budget, before
// they run. The third identical search is refused as a loop; the fifth
// call finds the tool-call budget spent. Each refusal reaches the planner
// as data.
func Example() {
	start := time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)
	run, err := budget.New(budget.Limits{ToolCalls: 4, Deadline: time.Minute}, "trace-42", func() time.Time { return start })
	if err != nil {
		panic(err)
	}
	guard, err := budget.NewGuard(0, 0)
	if err != nil {
		panic(err)
	}

	call := func(tool, args string) {
		digest, err := budget.Digest(json.RawMessage(args))
		if err == nil {
			err = guard.Call(tool, digest)
		}
		if err == nil {
			err = run.Allow(budget.ToolCalls, 1)
		}
		var reason *budget.Refusal
		if errors.As(err, &reason) {
			fmt.Printf("%s refused: %s (%s)\n", tool, reason.Code, reason.Hint)
			return
		}
		fmt.Printf("%s runs\n", tool)
	}
	call("search", `{"q": "refund policy"}`)
	call("search", `{"q": "refund policy"}`)
	call("search", `{"q":"refund policy"}`) // the same call, however it is spaced
	call("search", `{"q": "refund policy EU"}`)
	call("fetch", `{"url": "https://example.com/policy"}`)
	call("fetch", `{"url": "https://example.com/terms"}`)

	s := run.Snapshot()
	fmt.Printf("tool calls %v of %v, pressure %.1f\n", s.Used[budget.ToolCalls], s.Limits[budget.ToolCalls], s.Budget)
	fmt.Printf("loop pressure %.2f\n", guard.Pressure())
	// Output:
	// search runs
	// search runs
	// search refused: LOOP_DETECTED (this exact call was already made: use the result you have, change the arguments, or do something else)
	// search runs
	// fetch runs
	// fetch refused: BUDGET_EXCEEDED (no tool calls are left in this run: answer from the results already gathered)
	// tool calls 4 of 4, pressure 1.0
	// loop pressure 1.00
}

// A sub-agent lane draws on its parent's budget and cannot outspend it.
func ExampleRun_Sub() {
	parent, err := budget.New(budget.Limits{ModelCalls: 3}, "run", nil)
	if err != nil {
		panic(err)
	}
	lane, err := parent.Sub(budget.Limits{ModelCalls: 10}, "run/research")
	if err != nil {
		panic(err)
	}
	for i := 1; i <= 4; i++ {
		if err := lane.Allow(budget.ModelCalls, 1); err != nil {
			fmt.Println(i, err)
			continue
		}
		fmt.Println(i, "ok")
	}
	fmt.Println("parent used", parent.Snapshot().Used[budget.ModelCalls])
	// Output:
	// 1 ok
	// 2 ok
	// 3 ok
	// 4 budget: model_calls of run run exhausted: 3 of 3 used, 1 more asked
	// parent used 3
}

package inspect_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/inspect"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/toolgate"
)

// A trace's effects with their attempts: a lookup whose first attempt
// met a 503 and whose second answered.
func ExampleTraceEffects() {
	ctx := context.Background()
	s := memstore.New()
	tries := 0
	g, err := toolgate.New(ctx, toolgate.Config{
		Kernel: kernel.Config{Store: s},
		Tools: []toolgate.Tool{{Unscoped: true,
			Name: "lookup_order", Result: "order", Idempotent: true,
			Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`),
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				if tries++; tries == 1 {
					return nil, toolgate.Retryable(toolgate.Recordable(errors.New("503 service unavailable")))
				}
				return blackboard.Payload{"order_id": inv.Args["order_id"], "amount": 80.0}, nil
			}}},
		Contracts: map[string][]string{"support": {"lookup_order"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close()
	if _, err := g.Call(ctx, toolgate.Call{Tool: "lookup_order", Args: json.RawMessage(`{"order_id":"A1"}`), Caller: "support", TraceID: "T1"}); err != nil {
		fmt.Println(err)
		return
	}
	effects, _ := inspect.TraceEffects(ctx, s, "", "T1")
	for _, e := range effects {
		fmt.Printf("%s %s: %s, %d attempts\n", e.ActionID, e.Tool, e.Outcome, e.Attempts)
		for _, st := range e.Steps {
			line := fmt.Sprintf("  %s, attempt %d", st.Status, st.Attempt)
			if st.LeaseUntilMS > 0 {
				line += ", leased"
			}
			if st.PreviousError != "" {
				line += ", after: " + st.PreviousError
			}
			if st.Code != "" {
				line += fmt.Sprintf(", %s %v", st.Code, st.Output)
			}
			fmt.Println(line)
		}
	}
	// Output:
	// actions:T1:2 lookup_order: succeeded, 2 attempts
	//   attempted, attempt 1, leased
	//   attempted, attempt 2, leased, after: 503 service unavailable
	//   succeeded, attempt 2, EFFECT_SUCCEEDED map[amount:80 order_id:A1]
}

package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/pack"
	"github.com/blackboardkernel/bk/toolgate"
	"github.com/blackboardkernel/bk/worker/llm"
)

// An agent on compiled contexts: each round the model gets one message,
// the round's compiled context, and never its own earlier text; the second
// round shows the first call as a line of progress and the gate's answer
// as the last result. Each call names the context recorded for its round.
func ExampleWithCompiler() {
	ctx := context.Background()
	now := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	g, err := toolgate.New(ctx, toolgate.Config{
		Kernel: kernel.Config{Clock: clock},
		Tools: []toolgate.Tool{toolgate.Func(toolgate.Tool{Name: "lookup_order", Result: "order", ReadOnly: true, Description: "Read an order."},
			func(_ context.Context, _ toolgate.Invocation, a orderArgs) (map[string]any, error) {
				return map[string]any{"order_id": a.OrderID, "status": "delivered late"}, nil
			})},
		Contracts: map[string][]string{"support": {"lookup_order"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()

	var prompts []string
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Role, Content string }
		}
		json.NewDecoder(r.Body).Decode(&req)
		prompts = append(prompts, req.Messages[0].Content)
		msg := map[string]any{"role": "assistant", "content": "Order A1 was delivered late."}
		if len(prompts) == 1 {
			msg = map[string]any{"role": "assistant", "content": "Let me look.", "tool_calls": []any{map[string]any{
				"id": "c1", "type": "function", "function": map[string]any{"name": "lookup_order", "arguments": `{"order_id": "A1"}`}}}}
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"index": 0, "message": msg}}})
	}))
	defer model.Close()

	client, err := llm.New(model.URL, llm.WithModel("qwen3"))
	if err != nil {
		log.Fatal(err)
	}
	c, err := pack.New(pack.WithWindow(4096), pack.WithClock(clock))
	if err != nil {
		log.Fatal(err)
	}
	agent, err := llm.NewAgent(client, g, llm.WithCompiler(c))
	if err != nil {
		log.Fatal(err)
	}
	res, err := agent.Run(ctx, llm.Task{Caller: "support", TraceID: "ticket-1",
		System: "You answer questions about orders.", User: "Where is order A1?"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("contexts:", res.Contexts, "call's context:", res.Calls[0].Call.Context)
	second := prompts[1]
	fmt.Println("earlier text shown:", strings.Contains(second, "Let me look."))
	start := strings.Index(second, "## Progress")
	end := strings.Index(second, "## Tools")
	fmt.Print(second[start:end])
	fmt.Println(res.Answer)
	// Output:
	// contexts: [evidence:ticket-1:1 evidence:ticket-1:8] call's context: evidence:ticket-1:1
	// earlier text shown: false
	// ## Progress
	// - turn 1: lookup_order ok: executed EFFECT_SUCCEEDED
	// ## Current task
	// Where is order A1?
	// ## Last result
	// - c1 lookup_order: {"outcome":"executed","code":"EFFECT_SUCCEEDED","output":{"order_id":"A1","status":"delivered late"}}
	// Order A1 was delivered late.
}

package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/toolgate"
	"github.com/blackboardkernel/bk/worker/llm"
)

// A model asks for too much, reads the gate's refusal and its hint as the
// tool's result, and asks again within the charge. The fake server stands
// in for an OpenAI-compatible endpoint: it calls the tool until a call
// succeeds.
func ExampleAgent_Run() {
	ctx := context.Background()
	g, err := toolgate.New(ctx, toolgate.Config{
		Tools: []toolgate.Tool{{
			Name:        "issue_refund",
			Description: "Refund part or all of the disputed charge of 149.99.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number","maximum":149.99}},"required":["amount"]}`),
			Unscoped:    true,
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"refunded": inv.Args["amount"]}, nil
			},
		}},
		Contracts: map[string][]string{"support": {"issue_refund"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()

	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Role, Content string }
		}
		json.NewDecoder(r.Body).Decode(&req)
		last := req.Messages[len(req.Messages)-1]
		msg := map[string]any{"role": "assistant", "content": "Refunded 149.99."}
		switch {
		case last.Role == "user":
			msg = toolCall("call_1", `{"amount": 500}`)
		case strings.Contains(last.Content, `"refused"`):
			msg = toolCall("call_2", `{"amount": 149.99}`)
		}
		json.NewEncoder(w).Encode(map[string]any{
			"choices": []any{map[string]any{"index": 0, "message": msg}},
			"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
		})
	}))
	defer model.Close()

	client, err := llm.New(model.URL, llm.WithModel("qwen3"))
	if err != nil {
		log.Fatal(err)
	}
	agent, err := llm.NewAgent(client, g, llm.WithMaxRounds(4))
	if err != nil {
		log.Fatal(err)
	}
	res, err := agent.Run(ctx, llm.Task{
		Caller: "support", TraceID: "case-7",
		System: "You resolve card disputes with the tools you are given.",
		User:   "The customer wants their money back for charge ch_7.",
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range res.Calls {
		fmt.Printf("round %d: %s %s -> %s\n", c.Round, c.Call.Tool, c.Call.Args, c.Result.ForModel())
	}
	fmt.Println(res.Answer)
	fmt.Printf("%d model calls, %d tokens\n", res.Usage.ModelCalls, res.Usage.TotalTokens)
	// Output:
	// round 1: issue_refund {"amount": 500} -> {"outcome":"refused","code":"INVALID_ARGUMENTS","root_cause":"INVALID_ARGUMENTS","hint":"Fix the arguments (argument \"amount\" breaks its rule \"maximum\" (149.99)), then call issue_refund again."}
	// round 2: issue_refund {"amount": 149.99} -> {"outcome":"executed","code":"EFFECT_SUCCEEDED","output":{"refunded":149.99}}
	// Refunded 149.99.
	// 3 model calls, 360 tokens
}

// toolCall is an assistant message calling issue_refund.
func toolCall(id, args string) map[string]any {
	return map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
		"id": id, "type": "function", "function": map[string]any{"name": "issue_refund", "arguments": args},
	}}}
}

package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/toolgate"
	"github.com/blackboardkernel/bk/worker/llm"
)

// chargeGate is a stand-in for a *toolgate.Gate: it offers one tool and
// refuses refunds above the charged amount, with a hint for the model.
type chargeGate struct{}

func (chargeGate) Surface(context.Context, string, string, string) ([]toolgate.Spec, error) {
	return []toolgate.Spec{{
		Name:        "issue_refund",
		Description: "Refund part or all of the disputed charge.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"]}`),
	}}, nil
}

func (chargeGate) Call(_ context.Context, c toolgate.Call) (toolgate.Result, error) {
	var args struct{ Amount float64 }
	if err := json.Unmarshal(c.Args, &args); err != nil {
		return toolgate.Result{Outcome: audit.OutcomeRefused, Code: toolgate.CodeInvalidArguments, Hint: `pass {"amount": number}`}, nil
	}
	if args.Amount > 149.99 {
		return toolgate.Result{Outcome: audit.OutcomeRefused, Code: blackboard.CodeRuleViolated,
			RootCause: kernel.Cause{Code: blackboard.CodeRuleViolated, Record: "percepts:case-7:1"},
			Hint:      "the charge was 149.99; refund at most that"}, nil
	}
	return toolgate.Result{Outcome: audit.OutcomeExecuted, Code: blackboard.CodeCommitted,
		Output: blackboard.Payload{"refunded": args.Amount}}, nil
}

// A model asks for too much, reads the refusal and its hint as the tool's
// result, and asks again within the charge. The fake server stands in for
// an OpenAI-compatible endpoint: it calls the tool until a call succeeds.
func ExampleAgent_Run() {
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Messages []llm.Message }
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
	agent, err := llm.NewAgent(client, chargeGate{}, llm.WithMaxRounds(4))
	if err != nil {
		log.Fatal(err)
	}
	res, err := agent.Run(context.Background(), llm.Task{
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
	// round 1: issue_refund {"amount": 500} -> {"outcome":"refused","code":"RULE_VIOLATED","root_cause":"RULE_VIOLATED","root_cause_record":"percepts:case-7:1","hint":"the charge was 149.99; refund at most that"}
	// round 2: issue_refund {"amount": 149.99} -> {"outcome":"executed","code":"COMMITTED","output":{"refunded":149.99}}
	// Refunded 149.99.
	// 3 model calls, 360 tokens
}

// toolCall is an assistant message calling issue_refund.
func toolCall(id, args string) map[string]any {
	return map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
		"id": id, "type": "function", "function": map[string]any{"name": "issue_refund", "arguments": args},
	}}}
}

package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/worker/llm"
)

// A refund episode with a model that always says yes: the kernel commits
// the refund on a clean charge and stops it, with the reason recorded on the
// fallback, on a stale one. The fake server stands in for vLLM, Ollama or a
// hosted API; point llm.New at the real base URL instead.
func ExampleWorker_Run() {
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{
				"role": "assistant", "content": "<think>A disputed charge.</think>\n{\"propose\": true, \"reason\": \"disputed\"}",
			}}},
		})
	}))
	defer model.Close()

	client, err := llm.New(model.URL, llm.WithModel("qwen3"), llm.WithAPIKey(os.Getenv("BK_LLM_API_KEY")))
	if err != nil {
		log.Fatal(err)
	}
	k, err := kernel.New(kernel.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer k.Close()
	w, err := llm.NewWorker("llm-planner", k.Proposer(blackboard.RolePlanner, "llm-planner"), client, llm.Schema{
		Task:      "A customer disputes a card charge. Decide whether the refund is due.",
		Belief:    "refund_due",
		DependsOn: []string{"charge"},
		Plan:      "action_plan",
		Action:    "issue_refund",
		Fields: func(v kernel.View) blackboard.Payload {
			charge, _ := v.Committed[blackboard.Percepts]["charge"]
			return blackboard.Payload{"charge_id": charge["charge_id"], "amount": charge["amount"], "is_duplicate": false}
		},
	})
	if err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	for _, stale := range []bool{false, true} {
		trace := fmt.Sprintf("refund-stale-%v", stale)
		charge := blackboard.Payload{"charge_id": "ch_1", "amount": 149.99, "stale": stale}
		if _, err := k.Handle(blackboard.RoleTool, "payments").Write(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: "charge", Payload: charge}); err != nil {
			log.Fatal(err)
		}
		out, err := w.Run(ctx, trace)
		if err != nil {
			log.Fatal(err)
		}
		if out.Reason == "" {
			fmt.Printf("stale=%v: belief %s, plan %s, action %s: %s %v\n",
				stale, out.Belief, out.Plan, out.Action, out.Final.Kind, out.Final.Payload["amount"])
		} else {
			fmt.Printf("stale=%v: belief %s: %s, reason %s\n", stale, out.Belief, out.Final.Kind, out.Final.Payload["reason"])
		}
	}
	// Output:
	// stale=false: belief COMMITTED, plan PLAN_FEASIBLE, action COMMITTED: issue_refund 149.99
	// stale=true: belief STALE_EVIDENCE: queue_for_review, reason STALE_EVIDENCE
}

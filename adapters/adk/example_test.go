package adk_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"log"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"

	"github.com/blackboardkernel/bk/adapters/adk"
	"github.com/blackboardkernel/bk/toolgate"
)

// refunder is a scripted model: it asks for a refund once, then answers.
type refunder struct{}

func (refunder) Name() string { return "refunder" }

func (refunder) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		last := req.Contents[len(req.Contents)-1]
		if len(last.Parts) > 0 && last.Parts[0].FunctionResponse != nil {
			yield(&model.LLMResponse{Content: genai.NewContentFromText("done", genai.RoleModel)}, nil)
			return
		}
		yield(&model.LLMResponse{Content: genai.NewContentFromFunctionCall("refund", map[string]any{"amount": 700}, genai.RoleModel)}, nil)
	}
}

type refundArgs struct {
	Amount float64 `json:"amount"`
}

type refunded struct {
	Refunded float64 `json:"refunded"`
}

// The agent's own ADK function tool, governed: a refund above 500 waits
// for approval. The plugin asks for ADK's tool confirmation, the
// application approves the digest it was shown, and the resumed call runs
// the function tool once, through the gate.
func ExampleNew() {
	ctx := context.Background()
	// The integrator's ADK tool, as it was before the gate.
	refund, err := functiontool.New(functiontool.Config{Name: "refund", Description: "Refund an amount."},
		func(_ agent.Context, a refundArgs) (refunded, error) { return refunded{a.Amount}, nil })
	if err != nil {
		log.Fatal(err)
	}
	// The gate holds it caller-driven: no Effect, since ADK's tool runs it.
	g, err := toolgate.New(ctx, toolgate.Config{
		Tools: []toolgate.Tool{{Unscoped: true,
			Name:       "refund",
			Parameters: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"]}`),
			Approval:   "amount > 500",
		}},
		Contracts: map[string][]string{"support": {"refund"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	gv, err := adk.New(g, "support", adk.WithApprover("human:reviewer"), adk.WithTools(refund))
	if err != nil {
		log.Fatal(err)
	}
	a, err := llmagent.New(llmagent.Config{Name: "support", Model: refunder{}, Toolsets: []tool.Toolset{gv}})
	if err != nil {
		log.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "desk", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{gv.Plugin()}}})
	if err != nil {
		log.Fatal(err)
	}
	msg := genai.NewContentFromText("Refund 700, please.", genai.RoleUser)
	for msg != nil {
		var next *genai.Content
		for ev, err := range r.Run(ctx, "user", "ticket-1", msg, agent.RunConfig{}) {
			if err != nil {
				log.Fatal(err)
			}
			if ev.Content == nil {
				continue
			}
			for _, p := range ev.Content.Parts {
				switch {
				case p.FunctionCall != nil && p.FunctionCall.Name == toolconfirmation.FunctionCallName:
					// The application shows the person the payload and
					// answers with the digest it showed.
					var ask struct {
						ToolConfirmation struct{ Payload adk.Confirmation } `json:"toolConfirmation"`
					}
					b, _ := json.Marshal(p.FunctionCall.Args)
					if err := json.Unmarshal(b, &ask); err != nil {
						log.Fatal(err)
					}
					c := ask.ToolConfirmation.Payload
					fmt.Println("approve?", c.Tool, c.Args["amount"])
					next = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
						ID: p.FunctionCall.ID, Name: toolconfirmation.FunctionCallName,
						Response: map[string]any{"confirmed": true, "payload": map[string]any{"digest": c.Digest}}}}}}
				case p.FunctionResponse != nil:
					fmt.Println("tool:", p.FunctionResponse.Response["outcome"], p.FunctionResponse.Response["output"])
				case p.Text != "":
					fmt.Println("model:", p.Text)
				}
			}
		}
		msg = next
	}
	// Output:
	// tool: pending_approval <nil>
	// approve? refund 700
	// tool: executed map[refunded:700]
	// model: done
}

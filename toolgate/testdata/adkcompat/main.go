// Command adkcompat is an ADK-Go agent whose tool calls go through the
// gate, from a plugin. toolgate.TestADKBuildsBesideTheCore builds it to
// show that the two modules' requirements resolve to versions that
// compile together; running it plays one turn with a scripted model.
package main

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
	"google.golang.org/genai"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/toolgate"
)

// scripted is a model that calls lookup_order once, then answers.
type scripted struct{}

func (scripted) Name() string { return "scripted" }

func (scripted) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		last := req.Contents[len(req.Contents)-1]
		if len(last.Parts) > 0 && last.Parts[0].FunctionResponse != nil {
			yield(&model.LLMResponse{Content: genai.NewContentFromText("done", genai.RoleModel)}, nil)
			return
		}
		yield(&model.LLMResponse{Content: genai.NewContentFromFunctionCall("lookup_order", map[string]any{"order_id": "A1"}, genai.RoleModel)}, nil)
	}
}

type lookupArgs struct {
	OrderID string `json:"order_id"`
}

func main() {
	ctx := context.Background()
	g, err := toolgate.New(ctx, toolgate.Config{
		Tools: []toolgate.Tool{{Unscoped: true,
			Name:       "lookup_order",
			Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`),
			Result:     "order",
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"order_id": inv.Args["order_id"], "amount": 700.0}, nil
			},
		}},
		Contracts: map[string][]string{"support": {"lookup_order"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	// The framework's own tool is never run: the plugin answers every
	// call with the gate's result.
	lookup, err := functiontool.New(functiontool.Config{Name: "lookup_order", Description: "Look up an order by id."},
		func(agent.Context, lookupArgs) (map[string]any, error) { return nil, fmt.Errorf("ungated call") })
	if err != nil {
		log.Fatal(err)
	}
	gate, err := plugin.New(plugin.Config{Name: "bk", BeforeToolCallback: func(ctx agent.Context, t tool.Tool, args map[string]any) (map[string]any, error) {
		raw, err := json.Marshal(args)
		if err != nil {
			return nil, err
		}
		res, err := g.Call(ctx, toolgate.Call{ID: ctx.FunctionCallID(), Tool: t.Name(), Args: raw, Caller: "support", TraceID: ctx.SessionID()})
		if err != nil {
			return nil, err
		}
		return map[string]any{"outcome": string(res.Outcome), "code": string(res.Code), "hint": res.Hint, "output": map[string]any(res.Output)}, nil
	}})
	if err != nil {
		log.Fatal(err)
	}
	a, err := llmagent.New(llmagent.Config{Name: "support", Model: scripted{}, Tools: []tool.Tool{lookup}})
	if err != nil {
		log.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "desk", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{gate}}})
	if err != nil {
		log.Fatal(err)
	}
	for ev, err := range r.Run(ctx, "user", "ticket-1", genai.NewContentFromText("Where is order A1?", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			log.Fatal(err)
		}
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			switch {
			case p.FunctionResponse != nil:
				fmt.Println("tool:", p.FunctionResponse.Response["outcome"], p.FunctionResponse.Response["code"])
			case p.Text != "":
				fmt.Println("model:", p.Text)
			}
		}
	}
}

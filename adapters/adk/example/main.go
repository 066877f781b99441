// Command example runs an ADK-Go agent whose tool calls go through the
// gate, with a scripted model (no network): a refund the model asks for
// too early is refused with a hint, the model is shown the refund tool
// once the order is looked up (its result grounds the refund), and the
// refund runs once after the person approves it through ADK's tool
// confirmation, though the model makes the call twice.
//
//	cd adapters/adk && go run ./example
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"log"
	"os"
	"strings"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"

	"github.com/blackboardkernel/bk/adapters/adk"
	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/toolgate"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// The tools' arguments and results; the schemas the model is shown are
// generated from them.
type orderArgs struct {
	OrderID string `json:"order_id" jsonschema:"the order's id, e.g. A1"`
}

type order struct {
	OrderID string  `json:"order_id"`
	Amount  float64 `json:"amount"`
}

type refundArgs struct {
	OrderID string  `json:"order_id"`
	Amount  float64 `json:"amount" jsonschema:"in EUR, at most the order's amount"`
}

type refund struct {
	RefundID string  `json:"refund_id"`
	Amount   float64 `json:"amount"`
}

// scripted is the model: each user turn it makes the next call of its
// script, and answers once the call's response is back. It prints the
// tools it is shown.
type scripted struct {
	w     io.Writer
	calls []*genai.FunctionCall
}

func (*scripted) Name() string { return "scripted" }

func (m *scripted) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		last := req.Contents[len(req.Contents)-1]
		if len(last.Parts) > 0 && last.Parts[0].FunctionResponse != nil || len(m.calls) == 0 {
			yield(&model.LLMResponse{Content: genai.NewContentFromText("done", genai.RoleModel)}, nil)
			return
		}
		var shown []string
		if req.Config != nil {
			for _, t := range req.Config.Tools {
				for _, d := range t.FunctionDeclarations {
					shown = append(shown, d.Name)
				}
			}
		}
		fmt.Fprintln(m.w, "model is shown:", shown)
		call := m.calls[0]
		m.calls = m.calls[1:]
		yield(&model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: call}}}}, nil)
	}
}

// run plays the scripted model's turns, printing what the application
// sees to w.
func run(ctx context.Context, w io.Writer) error {
	lookup := toolgate.Func(toolgate.Tool{Name: "lookup_order", Description: "Look up an order by id.", Result: "order", ReadOnly: true,
		// An order's result grounds the refund.
		Derives: []toolgate.Derive{{Belief: "refund_due", Value: "result.amount > 0.0"}},
	}, func(_ context.Context, _ toolgate.Invocation, a orderArgs) (order, error) {
		return order{OrderID: a.OrderID, Amount: 700}, nil
	})
	issue := toolgate.Func(toolgate.Tool{Name: "issue_refund", Description: "Refund an order.", Result: "refund",
		Requires: []string{"refund_due"},
		Scope:    map[string]string{"order_id": "order"}, // only the order the ticket is about
		Bindings: []toolgate.Binding{{Arg: "order_id", Percept: "order", Op: "equal"}, {Arg: "amount", Percept: "order", Op: "at_most"}},
		Once:     &kernel.OnceKey{Fields: []string{"order_id"}}, Approval: "amount > 500",
	}, func(_ context.Context, inv toolgate.Invocation, a refundArgs) (refund, error) {
		fmt.Fprintln(w, "refund effect runs") // a real effect passes inv.Key to the payment API
		return refund{RefundID: "re_" + a.OrderID, Amount: a.Amount}, nil
	})
	g, err := toolgate.New(ctx, toolgate.Config{
		Tools:     []toolgate.Tool{lookup, issue},
		Contracts: map[string][]string{"support": {"lookup_order", "issue_refund"}},
	})
	if err != nil {
		return err
	}
	defer g.Close()
	// What the session serves, from the ticket system: the user it is
	// for and the order the ticket is about, in the session's trace.
	if err := g.RecordRequest(ctx, adk.Trace("desk", "user", "ticket-1"),
		audit.Request{Principal: "user", Resources: map[string][]string{"order": {"A1"}}}); err != nil {
		return err
	}

	gv, err := adk.New(g, "support", adk.WithApprover("human:alice"))
	if err != nil {
		return err
	}
	refundA1 := map[string]any{"order_id": "A1", "amount": 700}
	m := &scripted{w: w, calls: []*genai.FunctionCall{
		{ID: "call_1", Name: "issue_refund", Args: refundA1}, // too early: refused
		{ID: "call_2", Name: "lookup_order", Args: map[string]any{"order_id": "A1"}},
		{ID: "call_3", Name: "issue_refund", Args: refundA1},
		{ID: "call_3", Name: "issue_refund", Args: refundA1}, // made twice: runs once
	}}
	a, err := llmagent.New(llmagent.Config{Name: "support", Model: m, Toolsets: []tool.Toolset{gv}})
	if err != nil {
		return err
	}
	r, err := runner.New(runner.Config{AppName: "desk", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{gv.Plugin()}}})
	if err != nil {
		return err
	}
	for len(m.calls) > 0 {
		msg := genai.NewContentFromText("Refund order A1, please.", genai.RoleUser)
		for msg != nil { // a turn, and its resumption after a confirmation
			if msg, err = turn(ctx, w, r, msg); err != nil {
				return err
			}
		}
	}
	return nil
}

// turn runs one message and prints the tool responses. It returns the
// person's answer to a confirmation the run asked for, or nil.
func turn(ctx context.Context, w io.Writer, r *runner.Runner, msg *genai.Content) (*genai.Content, error) {
	var next *genai.Content
	for ev, err := range r.Run(ctx, "user", "ticket-1", msg, agent.RunConfig{}) {
		if err != nil {
			return nil, err
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
				b, err := json.Marshal(p.FunctionCall.Args)
				if err == nil {
					err = json.Unmarshal(b, &ask)
				}
				if err != nil {
					return nil, err
				}
				c := ask.ToolConfirmation.Payload
				fmt.Fprintln(w, "asked to approve:", c.Tool, c.Args)
				next = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
					ID: p.FunctionCall.ID, Name: toolconfirmation.FunctionCallName,
					Response: map[string]any{"confirmed": true, "payload": map[string]any{"digest": c.Digest}}}}}}
			case p.FunctionResponse != nil && p.FunctionResponse.Name != toolconfirmation.FunctionCallName:
				fmt.Fprintln(w, p.FunctionResponse.ID, p.FunctionResponse.Name, reply(p.FunctionResponse.Response))
			}
		}
	}
	return next, nil
}

// reply is the gate's reply shown to the model, in a line.
func reply(resp map[string]any) string {
	parts := []string{fmt.Sprint(resp["outcome"]), fmt.Sprint(resp["code"])}
	if h, ok := resp["hint"].(string); ok {
		parts = append(parts, h)
	}
	if o, ok := resp["output"]; ok {
		parts = append(parts, fmt.Sprint(o))
	}
	return strings.Join(parts, " ")
}

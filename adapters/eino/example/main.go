// Command example runs an Eino graph (a chat model, then a tools node
// whose calls go through the gate) with a scripted model (no network): a
// refund the model asks for too early is refused with a hint, the model is
// shown the refund tool once the order is looked up (its result grounds
// the refund), and the refund runs once after the person approves it: the
// run interrupts, and a new runner resumes it from the checkpoint with the
// person's decision. The model makes the call twice; it runs once.
//
//	cd adapters/eino && go run ./example
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"sync"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/blackboardkernel/bk/adapters/eino"
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

// scripted is the chat model: on the user's message "turn n" it makes the
// call its script holds for that turn, whichever runner asks, and answers
// "done" to anything else. It prints the tools it is shown.
type scripted struct {
	w     io.Writer
	calls map[string]schema.ToolCall
}

func (m *scripted) Generate(_ context.Context, in []*schema.Message, opts ...model.Option) (*schema.Message, error) {
	var shown []string
	for _, t := range model.GetCommonOptions(nil, opts...).Tools {
		shown = append(shown, t.Name)
	}
	fmt.Fprintln(m.w, "model is shown:", shown)
	call, ok := m.calls[in[len(in)-1].Content]
	if !ok {
		return schema.AssistantMessage("done", nil), nil
	}
	return schema.AssistantMessage("", []schema.ToolCall{call}), nil
}

func (m *scripted) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

// checkpoints is an in-memory Eino checkpoint store, shared by the
// runners.
type checkpoints struct {
	sync.Mutex
	m map[string][]byte
}

func (c *checkpoints) Get(_ context.Context, id string) ([]byte, bool, error) {
	c.Lock()
	defer c.Unlock()
	b, ok := c.m[id]
	return b, ok, nil
}

func (c *checkpoints) Set(_ context.Context, id string, b []byte) error {
	c.Lock()
	defer c.Unlock()
	c.m[id] = b
	return nil
}

// run plays the scripted model's turns, printing what the application
// sees to w.
func run(ctx context.Context, w io.Writer) error {
	lookup := toolgate.Func(toolgate.Tool{ReadOnly: true, Name: "lookup_order", Description: "Look up an order by id.", Result: "order",
		// An order's result grounds the refund.
		Derives: []toolgate.Derive{{Belief: "refund_due", Value: "result.amount > 0.0"}},
	}, func(_ context.Context, _ toolgate.Invocation, a orderArgs) (order, error) {
		return order{OrderID: a.OrderID, Amount: 700}, nil
	})
	// The example records no request, so the refund waives its scope: an
	// application records the ticket's with toolgate.Gate.RecordRequest and
	// declares Scope: map[string]string{"order_id": "order"} instead.
	issue := toolgate.Func(toolgate.Tool{Unscoped: true, Name: "issue_refund", Description: "Refund an order.", Result: "refund",
		Requires: []string{"refund_due"},
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

	mw, err := eino.New(g, "support", eino.WithApprover("human:alice"),
		eino.WithTrace(func(context.Context) string { return "ticket-1" }))
	if err != nil {
		return err
	}
	refundA1 := schema.FunctionCall{Name: "issue_refund", Arguments: `{"order_id":"A1","amount":700}`}
	m := &scripted{w: w, calls: map[string]schema.ToolCall{
		"turn 1": {ID: "call_1", Function: refundA1}, // too early: refused
		"turn 2": {ID: "call_2", Function: schema.FunctionCall{Name: "lookup_order", Arguments: `{"order_id":"A1"}`}},
		"turn 3": {ID: "call_3", Function: refundA1},
		"turn 4": {ID: "call_3", Function: refundA1}, // made twice: runs once
	}}
	store := &checkpoints{m: map[string][]byte{}}
	// runner compiles the graph; each run may be another process's, with
	// the same checkpoint store.
	runner := func() (compose.Runnable[[]*schema.Message, []*schema.Message], error) {
		cfg, err := mw.NodeConfig(ctx)
		if err != nil {
			return nil, err
		}
		node, err := compose.NewToolNode(ctx, cfg)
		if err != nil {
			return nil, err
		}
		graph := compose.NewGraph[[]*schema.Message, []*schema.Message]()
		for _, err := range []error{
			graph.AddChatModelNode("model", m),
			graph.AddToolsNode("tools", node),
			graph.AddEdge(compose.START, "model"),
			graph.AddEdge("model", "tools"),
			graph.AddEdge("tools", compose.END),
		} {
			if err != nil {
				return nil, err
			}
		}
		return graph.Compile(ctx, compose.WithCheckPointStore(store))
	}

	for i := 1; i <= len(m.calls); i++ {
		r, err := runner()
		if err != nil {
			return err
		}
		surface, err := mw.Surface(ctx) // the tools the model may be shown now
		if err != nil {
			return err
		}
		in := []*schema.Message{schema.UserMessage(fmt.Sprint("turn ", i))}
		cp := compose.WithCheckPointID(fmt.Sprint("turn-", i))
		out, err := r.Invoke(ctx, in, cp, compose.WithChatModelOption(model.WithTools(surface)))
		if info, ok := compose.ExtractInterruptInfo(err); ok {
			ic := info.InterruptContexts[0]
			a, ok := ic.Info.(*eino.Approval)
			if !ok {
				return fmt.Errorf("interrupted by %T", ic.Info)
			}
			fmt.Fprintln(w, "asked to approve:", a.Tool, a.Args)
			if r, err = runner(); err != nil { // another runner, the same checkpoint
				return err
			}
			yes := &eino.Decision{Approve: true, Digest: a.Digest}
			out, err = r.Invoke(compose.ResumeWithData(ctx, ic.ID, yes), in, cp, compose.WithChatModelOption(model.WithTools(surface)))
		}
		if err != nil {
			return err
		}
		for _, msg := range out {
			fmt.Fprintln(w, msg.ToolCallID, msg.ToolName, msg.Content)
		}
	}
	return nil
}

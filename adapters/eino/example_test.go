package eino_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/blackboardkernel/bk/adapters/eino"
	"github.com/blackboardkernel/bk/toolgate"
)

// checkpoints is an in-memory Eino checkpoint store.
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

// A scripted model asks for two refunds, through the integrator's own
// Eino tool, which the gate governs. The small one runs; the large one
// needs approval: the run interrupts with what the person is asked, and a
// new runner resumes it from the checkpoint with their decision, which
// runs the Eino tool once.
func ExampleNew() {
	ctx := context.Background()
	type refundArgs struct {
		Amount float64 `json:"amount"`
	}
	type refunded struct {
		Refunded float64 `json:"refunded"`
	}
	// The integrator's Eino tool, as it was before the gate.
	einoRefund, err := utils.InferTool("refund", "Refund an amount.", func(_ context.Context, a refundArgs) (refunded, error) {
		return refunded{a.Amount}, nil
	})
	if err != nil {
		panic(err)
	}
	// The gate holds it caller-driven: no Effect, since Eino runs it.
	refund := toolgate.Tool{Unscoped: true, Name: "refund", Description: "Refund an amount.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"]}`),
		Approval:   "amount > 500"}
	g, err := toolgate.New(ctx, toolgate.Config{
		Tools:     []toolgate.Tool{refund},
		Contracts: map[string][]string{"support": {"refund"}},
	})
	if err != nil {
		panic(err)
	}
	defer g.Close()

	m, err := eino.New(g, "support", eino.WithApprover("human:lead"),
		eino.WithTrace(func(context.Context) string { return "ticket-42" }))
	if err != nil {
		panic(err)
	}
	store := &checkpoints{m: map[string][]byte{}}
	runner := func() compose.Runnable[*schema.Message, []*schema.Message] {
		cfg, err := m.NodeConfig(ctx, einoRefund)
		if err != nil {
			panic(err)
		}
		node, err := compose.NewToolNode(ctx, cfg)
		if err != nil {
			panic(err)
		}
		graph := compose.NewGraph[*schema.Message, []*schema.Message]()
		_ = graph.AddToolsNode("tools", node)
		_ = graph.AddEdge(compose.START, "tools")
		_ = graph.AddEdge("tools", compose.END)
		r, err := graph.Compile(ctx, compose.WithCheckPointStore(store))
		if err != nil {
			panic(err)
		}
		return r
	}

	script := []*schema.Message{ // what the model says, turn by turn
		schema.AssistantMessage("", []schema.ToolCall{{ID: "call-1", Function: schema.FunctionCall{Name: "refund", Arguments: `{"amount":40}`}}}),
		schema.AssistantMessage("", []schema.ToolCall{{ID: "call-2", Function: schema.FunctionCall{Name: "refund", Arguments: `{"amount":900}`}}}),
	}
	for i, msg := range script {
		cp := fmt.Sprint("turn-", i)
		out, err := runner().Invoke(ctx, msg, compose.WithCheckPointID(cp))
		if info, ok := compose.ExtractInterruptInfo(err); ok {
			ic := info.InterruptContexts[0]
			a := ic.Info.(*eino.Approval)
			fmt.Printf("approve %s %v?\n", a.Tool, a.Args)
			yes := eino.Decision{Approve: true, Digest: a.Digest}
			out, err = runner().Invoke(compose.ResumeWithData(ctx, ic.ID, &yes), msg, compose.WithCheckPointID(cp))
		}
		if err != nil {
			panic(err)
		}
		fmt.Println(out[0].Content)
	}
	// Output:
	// {"outcome":"executed","code":"EFFECT_SUCCEEDED","output":{"refunded":40}}
	// approve refund map[amount:900]?
	// {"outcome":"executed","code":"EFFECT_SUCCEEDED","output":{"refunded":900}}
}

package eino_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/blackboardkernel/bk/adapters/eino"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/toolgate"
)

// Two calls of one turn wait for approval; a resume of one runs it, and
// the other interrupts again, until a later runner resumes it in turn.
func TestResumeOneOfTwo(t *testing.T) {
	ctx := t.Context()
	var runs atomic.Int32
	refund := toolgate.Tool{Unscoped: true, Name: "refund", Parameters: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"}}}`),
		Approval: "amount > 500",
		Effect: func(context.Context, toolgate.Invocation) (blackboard.Payload, error) {
			runs.Add(1)
			return blackboard.Payload{"ok": true}, nil
		}}
	g, err := toolgate.New(ctx, toolgate.Config{
		Tools:     []toolgate.Tool{refund},
		Contracts: map[string][]string{"support": {"refund"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	m, err := eino.New(g, "support", eino.WithApprover("human:lead"), eino.WithTrace(func(context.Context) string { return "t1" }))
	if err != nil {
		t.Fatal(err)
	}
	store := &checkpoints{m: map[string][]byte{}}
	runner := func() compose.Runnable[*schema.Message, []*schema.Message] {
		cfg, err := m.NodeConfig(ctx)
		if err != nil {
			t.Fatal(err)
		}
		node, err := compose.NewToolNode(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		graph := compose.NewGraph[*schema.Message, []*schema.Message]()
		_ = graph.AddToolsNode("tools", node)
		_ = graph.AddEdge(compose.START, "tools")
		_ = graph.AddEdge("tools", compose.END)
		r, err := graph.Compile(ctx, compose.WithCheckPointStore(store))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	msg := schema.AssistantMessage("", []schema.ToolCall{
		{ID: "a", Function: schema.FunctionCall{Name: "refund", Arguments: `{"amount":900}`}},
		{ID: "b", Function: schema.FunctionCall{Name: "refund", Arguments: `{"amount":800}`}},
	})
	approvals := func(err error) map[float64]*compose.InterruptCtx {
		t.Helper()
		info, ok := compose.ExtractInterruptInfo(err)
		if !ok {
			t.Fatalf("no interrupt: %v", err)
		}
		out := map[float64]*compose.InterruptCtx{}
		for _, ic := range info.InterruptContexts {
			if a, ok := ic.Info.(*eino.Approval); ok {
				out[a.Args["amount"].(float64)] = ic
			}
		}
		return out
	}
	yes := func(ic *compose.InterruptCtx) *eino.Decision {
		return &eino.Decision{Approve: true, Digest: ic.Info.(*eino.Approval).Digest}
	}
	opt := compose.WithCheckPointID("turn")
	_, err = runner().Invoke(ctx, msg, opt)
	asked := approvals(err)
	if len(asked) != 2 {
		t.Fatalf("asked %v, want both calls", asked)
	}
	_, err = runner().Invoke(compose.ResumeWithData(ctx, asked[900].ID, yes(asked[900])), msg, opt)
	if runs.Load() != 1 {
		t.Fatalf("%d runs after approving one call, want 1", runs.Load())
	}
	again := approvals(err)
	if len(again) != 1 || again[800] == nil {
		t.Fatalf("interrupted again for %v, want the other call, asked again", again)
	}
	out, err := runner().Invoke(compose.ResumeWithData(ctx, again[800].ID, yes(again[800])), msg, opt)
	if err != nil || len(out) != 2 || runs.Load() != 2 {
		t.Fatalf("out %v, %v, %d runs; want both calls run once", out, err, runs.Load())
	}
	for _, o := range out {
		if !strings.Contains(o.Content, `"outcome":"executed"`) {
			t.Fatalf("tool message %q", o.Content)
		}
	}
}

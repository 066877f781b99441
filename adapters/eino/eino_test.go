package eino_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
	"github.com/eino-contrib/jsonschema"

	"github.com/blackboardkernel/bk/adapters/eino"
	"github.com/blackboardkernel/bk/internal/reply"
	"github.com/blackboardkernel/bk/toolgate/adaptertest"
)

// memStore is an Eino checkpoint store shared by the runners of a test.
type memStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *memStore) Get(_ context.Context, id string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[id]
	return b, ok, nil
}

func (s *memStore) Set(_ context.Context, id string, b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[id] = b
	return nil
}

// runner drives a ToolsNode graph as an agent loop would, compiling a new
// runner for every run, resumes included.
type runner struct {
	t      *testing.T
	m      *eino.Middleware
	tools  []tool.InvokableTool // the integrator's own Eino tools
	store  *memStore
	decide func(context.Context, eino.Approval) eino.Decision
	mu     sync.Mutex
	n      int
}

func newRunner(t *testing.T, env *adaptertest.Env, decide func(context.Context, eino.Approval) eino.Decision) *runner {
	m, err := eino.New(env.Gate, env.Caller, eino.WithApprover(env.Approver),
		eino.WithTrace(func(context.Context) string { return env.TraceID }))
	if err != nil {
		t.Fatal(err)
	}
	return &runner{t: t, m: m, tools: einoTools(t, env), store: &memStore{m: map[string][]byte{}}, decide: decide}
}

// einoTools makes the suite's framework tools (in a RunFramework case)
// Eino tools, as an integrator writes them with Eino's own helper.
func einoTools(t *testing.T, env *adaptertest.Env) []tool.InvokableTool {
	var out []tool.InvokableTool
	for _, ft := range env.Tools {
		js := &jsonschema.Schema{}
		if err := json.Unmarshal(ft.Parameters, js); err != nil {
			t.Fatal(err)
		}
		out = append(out, utils.NewTool(&schema.ToolInfo{Name: ft.Name, Desc: ft.Description, ParamsOneOf: schema.NewParamsOneOfByJSONSchema(js)},
			func(ctx context.Context, args map[string]any) (map[string]any, error) { return ft.Run(ctx, args) }))
	}
	return out
}

func (r *runner) compile(ctx context.Context) (compose.Runnable[*schema.Message, []*schema.Message], error) {
	cfg, err := r.m.NodeConfig(ctx, r.tools...)
	if err != nil {
		return nil, err
	}
	node, err := compose.NewToolNode(ctx, cfg)
	if err != nil {
		return nil, err
	}
	g := compose.NewGraph[*schema.Message, []*schema.Message]()
	if err := g.AddToolsNode("tools", node); err != nil {
		return nil, err
	}
	if err := g.AddEdge(compose.START, "tools"); err != nil {
		return nil, err
	}
	if err := g.AddEdge("tools", compose.END); err != nil {
		return nil, err
	}
	return g.Compile(ctx, compose.WithCheckPointStore(r.store))
}

func (r *runner) ListTools(ctx context.Context) ([]string, error) {
	infos, err := r.m.Surface(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, i := range infos {
		names = append(names, i.Name)
	}
	return names, nil
}

func (r *runner) CallTool(ctx context.Context, name string, args json.RawMessage, callID string) (adaptertest.Reply, error) {
	r.mu.Lock()
	r.n++
	cp := fmt.Sprintf("run-%d", r.n)
	r.mu.Unlock()
	msg := schema.AssistantMessage("", []schema.ToolCall{{ID: callID, Function: schema.FunctionCall{Name: name, Arguments: string(args)}}})
	run, err := r.compile(ctx)
	if err != nil {
		return adaptertest.Reply{}, err
	}
	out, err := run.Invoke(ctx, msg, compose.WithCheckPointID(cp))
	if info, ok := compose.ExtractInterruptInfo(err); ok {
		var id string
		var a *eino.Approval
		for _, ic := range info.InterruptContexts {
			if v, ok := ic.Info.(*eino.Approval); ok {
				id, a = ic.ID, v
			}
		}
		if a == nil {
			return adaptertest.Reply{}, fmt.Errorf("interrupt without an approval: %+v", info)
		}
		d := r.decide(ctx, *a)
		again, cerr := r.compile(ctx) // a new runner, on the same checkpoint
		if cerr != nil {
			return adaptertest.Reply{}, cerr
		}
		out, err = again.Invoke(compose.ResumeWithData(ctx, id, &d), msg, compose.WithCheckPointID(cp))
	}
	if err != nil {
		return adaptertest.Reply{}, err
	}
	if len(out) != 1 {
		return adaptertest.Reply{}, fmt.Errorf("%d tool messages, want 1", len(out))
	}
	return decode(out[0].Content)
}

func decode(text string) (adaptertest.Reply, error) {
	var c reply.Content
	if err := json.Unmarshal([]byte(text), &c); err != nil {
		return adaptertest.Reply{}, err
	}
	return adaptertest.Reply{Content: c, IsError: reply.IsError(c.Outcome)}, nil
}

func asSuite(env *adaptertest.Env) func(context.Context, eino.Approval) eino.Decision {
	return func(ctx context.Context, a eino.Approval) eino.Decision {
		d := env.Decide(ctx, adaptertest.Approval{Tool: a.Tool, ActionID: a.ActionID, Digest: a.Digest, Args: a.Args})
		return eino.Decision{Approve: d.Approve, Digest: d.Digest}
	}
}

func TestConformance(t *testing.T) {
	adaptertest.Run(t, func(t *testing.T, env *adaptertest.Env) adaptertest.Adapter {
		return newRunner(t, env, asSuite(env))
	})
}

// The integrator's own Eino tools, governed: the gate holds them
// caller-driven, and the middleware runs each, once allowed, as the
// call's effect (after an approval, on the resume).
func TestConformanceFramework(t *testing.T) {
	adaptertest.RunFramework(t, func(t *testing.T, env *adaptertest.Env) adaptertest.Adapter {
		return newRunner(t, env, asSuite(env))
	})
}

// New refuses what would leave calls ungoverned or approvals
// unaccountable, with ErrInvalid.
func TestNewInvalid(t *testing.T) {
	env := adaptertest.NewEnv(t)
	tr := eino.WithTrace(func(context.Context) string { return "t" })
	for name, f := range map[string]func() error{
		"nil gate":        func() error { _, err := eino.New(nil, "a", tr); return err },
		"no caller":       func() error { _, err := eino.New(env.Gate, "", tr); return err },
		"no trace":        func() error { _, err := eino.New(env.Gate, "a"); return err },
		"caller approves": func() error { _, err := eino.New(env.Gate, "a", tr, eino.WithApprover("a")); return err },
	} {
		if err := f(); !errors.Is(err, eino.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

// A tool of Tools run outside the middleware runs nothing.
func TestUngoverned(t *testing.T) {
	env := adaptertest.NewEnv(t)
	m, err := eino.New(env.Gate, env.Caller, eino.WithTrace(func(context.Context) string { return env.TraceID }))
	if err != nil {
		t.Fatal(err)
	}
	tools := m.Tools()
	if len(tools) != 3 {
		t.Fatalf("%d tools, want the gate's 3", len(tools))
	}
	for _, tl := range tools {
		inv, ok := tl.(tool.InvokableTool)
		if !ok {
			t.Fatalf("%T is not invokable", tl)
		}
		if _, err := inv.InvokableRun(t.Context(), `{"order_id":"B2","amount":100}`); !errors.Is(err, eino.ErrUngoverned) {
			t.Fatalf("ungoverned run: %v, want ErrUngoverned", err)
		}
	}
	if n := env.Runs(); n != 0 {
		t.Fatalf("refund ran %d times", n)
	}
}

// streamer is an Eino tool that also streams: Eino would run it past the
// middleware in a streamed run.
type streamer struct{ tool.InvokableTool }

func (streamer) StreamableRun(context.Context, string, ...tool.Option) (*schema.StreamReader[string], error) {
	return nil, errors.New("streamed")
}

// NodeConfig refuses an Eino tool it cannot govern: one the gate does not
// hold, one the gate holds with its own effect, one that streams.
func TestNodeConfigInvalid(t *testing.T) {
	env := adaptertest.NewFrameworkEnv(t)
	m, err := eino.New(env.Gate, env.Caller, eino.WithTrace(func(context.Context) string { return env.TraceID }))
	if err != nil {
		t.Fatal(err)
	}
	tools := einoTools(t, env)
	if _, err := m.NodeConfig(t.Context(), tools...); err != nil {
		t.Fatalf("the suite's caller-driven tools: %v", err)
	}
	unknown := utils.NewTool(&schema.ToolInfo{Name: "no_such_tool"}, func(context.Context, map[string]any) (string, error) { return "", nil })
	held := utils.NewTool(&schema.ToolInfo{Name: adaptertest.Close}, func(context.Context, map[string]any) (string, error) { return "", nil })
	for name, tl := range map[string]tool.InvokableTool{"unknown": unknown, "effect held by the gate": held, "streams": streamer{tools[0]}} {
		if _, err := m.NodeConfig(t.Context(), tl); !errors.Is(err, eino.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

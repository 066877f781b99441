package adk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
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
	"github.com/blackboardkernel/bk/toolgate/adaptertest"
)

// script is a model that makes the one call it is given, then answers;
// it records the tools it was shown.
type script struct {
	mu    sync.Mutex
	call  *genai.FunctionCall
	shown []string
}

func (*script) Name() string { return "script" }

func (s *script) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		s.mu.Lock()
		s.shown = nil
		if req.Config != nil {
			for _, t := range req.Config.Tools {
				for _, d := range t.FunctionDeclarations {
					s.shown = append(s.shown, d.Name)
				}
			}
		}
		call := s.call
		s.call = nil
		s.mu.Unlock()
		if call == nil {
			yield(&model.LLMResponse{Content: genai.NewContentFromText("done", genai.RoleModel)}, nil)
			return
		}
		yield(&model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: call}}}}, nil)
	}
}

// agentRun is the suite's adapter: an ADK runner whose agent calls the
// suite's tools through the plugin, and whose application asks the
// suite's person for confirmations (or answers with forge).
type agentRun struct {
	env   *adaptertest.Env
	m     *script
	r     *runner.Runner
	forge func(adk.Confirmation) map[string]any
}

func newRun(t *testing.T, env *adaptertest.Env) *agentRun {
	t.Helper()
	return build(t, env, true, adk.WithApprover(env.Approver), adk.WithTrace(func(agent.ReadonlyContext) string { return env.TraceID }),
		adk.WithTools(adkTools(t, env)...))
}

// adkTools makes the suite's framework tools (in a RunFramework case) ADK
// function tools, as an integrator writes them.
func adkTools(t *testing.T, env *adaptertest.Env) []tool.Tool {
	t.Helper()
	var out []tool.Tool
	for _, ft := range env.Tools {
		schema := &jsonschema.Schema{}
		if err := json.Unmarshal(ft.Parameters, schema); err != nil {
			t.Fatal(err)
		}
		run := ft.Run
		ft2, err := functiontool.New(functiontool.Config{Name: ft.Name, Description: ft.Description, InputSchema: schema},
			func(ctx agent.Context, args map[string]any) (map[string]any, error) { return run(ctx, args) })
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ft2)
	}
	return out
}

// build is an agentRun with the governor of opts, whose runner holds its
// plugin if withPlugin.
func build(t *testing.T, env *adaptertest.Env, withPlugin bool, opts ...adk.Option) *agentRun {
	t.Helper()
	gv, err := adk.New(env.Gate, env.Caller, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var plugins []*plugin.Plugin
	if withPlugin {
		plugins = append(plugins, gv.Plugin())
	}
	m := &script{}
	a, err := llmagent.New(llmagent.Config{Name: "support", Model: m, Toolsets: []tool.Toolset{gv}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "desk", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: plugins}})
	if err != nil {
		t.Fatal(err)
	}
	return &agentRun{env: env, m: m, r: r}
}

// turn runs one user message and returns the function responses and the
// confirmation requests of the run.
func (a *agentRun) turn(ctx context.Context, msg *genai.Content) (map[string]map[string]any, []*genai.FunctionCall, error) {
	responses := map[string]map[string]any{}
	var asks []*genai.FunctionCall
	for ev, err := range a.r.Run(ctx, "user", "s1", msg, agent.RunConfig{}) {
		if err != nil {
			return nil, nil, err
		}
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.FunctionResponse != nil {
				responses[p.FunctionResponse.ID] = p.FunctionResponse.Response
			}
			if p.FunctionCall != nil && p.FunctionCall.Name == toolconfirmation.FunctionCallName {
				asks = append(asks, p.FunctionCall)
			}
		}
	}
	return responses, asks, nil
}

func (a *agentRun) ListTools(ctx context.Context) ([]string, error) {
	if _, _, err := a.turn(ctx, genai.NewContentFromText("hello", genai.RoleUser)); err != nil {
		return nil, err
	}
	a.m.mu.Lock()
	defer a.m.mu.Unlock()
	return a.m.shown, nil
}

func (a *agentRun) CallTool(ctx context.Context, name string, args json.RawMessage, callID string) (adaptertest.Reply, error) {
	var m map[string]any
	if err := json.Unmarshal(args, &m); err != nil {
		return adaptertest.Reply{}, err
	}
	a.m.mu.Lock()
	a.m.call = &genai.FunctionCall{ID: callID, Name: name, Args: m}
	a.m.mu.Unlock()
	responses, asks, err := a.turn(ctx, genai.NewContentFromText("go", genai.RoleUser))
	if err != nil {
		return adaptertest.Reply{}, err
	}
	for _, ask := range asks {
		var req struct {
			ToolConfirmation struct{ Payload adk.Confirmation } `json:"toolConfirmation"`
		}
		if err := remarshal(ask.Args, &req); err != nil {
			return adaptertest.Reply{}, err
		}
		c := req.ToolConfirmation.Payload
		answer := map[string]any{}
		if a.forge != nil {
			answer = a.forge(c)
		} else {
			d := a.env.Decide(ctx, adaptertest.Approval{Tool: c.Tool, ActionID: c.ActionID, Digest: c.Digest, Args: c.Args})
			answer = map[string]any{"confirmed": d.Approve, "payload": map[string]any{"digest": d.Digest}}
		}
		msg := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
			ID: ask.ID, Name: toolconfirmation.FunctionCallName, Response: answer}}}}
		resumed, _, err := a.turn(ctx, msg)
		if err != nil {
			return adaptertest.Reply{}, err
		}
		for id, r := range resumed {
			responses[id] = r
		}
	}
	resp, ok := responses[callID]
	if !ok {
		return adaptertest.Reply{}, fmt.Errorf("no response to call %s", callID)
	}
	return reply(resp)
}

func reply(resp map[string]any) (adaptertest.Reply, error) {
	var r adaptertest.Reply
	isErr, ok := resp[adk.KeyIsError].(bool)
	if !ok {
		return r, fmt.Errorf("response without %s: %v", adk.KeyIsError, resp)
	}
	r.IsError = isErr
	return r, remarshal(resp, &r.Content)
}

func remarshal(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}

func TestConformance(t *testing.T) {
	adaptertest.Run(t, func(t *testing.T, env *adaptertest.Env) adaptertest.Adapter { return newRun(t, env) })
}

// The agent's own ADK function tools, governed: the gate holds them
// caller-driven, and the plugin runs each, once allowed, as the call's
// effect (after a tool confirmation, on the resumed call).
func TestConformanceFramework(t *testing.T) {
	adaptertest.RunFramework(t, func(t *testing.T, env *adaptertest.Env) adaptertest.Adapter { return newRun(t, env) })
}

// New refuses an agent tool it cannot govern: one the gate does not hold
// caller-driven, one given twice, one with no Run method.
func TestWithToolsInvalid(t *testing.T) {
	env := adaptertest.NewFrameworkEnv(t)
	own := adkTools(t, env)
	if _, err := adk.New(env.Gate, env.Caller, adk.WithTools(own...)); err != nil {
		t.Fatalf("the suite's caller-driven tools: %v", err)
	}
	held, err := functiontool.New(functiontool.Config{Name: adaptertest.Close},
		func(agent.Context, map[string]any) (map[string]any, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	for name, tools := range map[string][]tool.Tool{
		"effect held by the gate": {held},
		"twice":                   {own[0], own[0]},
		"no Run":                  {bare{own[0]}},
	} {
		if _, err := adk.New(env.Gate, env.Caller, adk.WithTools(tools...)); !errors.Is(err, adk.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

// bare is a tool with no Run method.
type bare struct{ t tool.Tool }

func (b bare) Name() string        { return b.t.Name() }
func (b bare) Description() string { return b.t.Description() }
func (b bare) IsLongRunning() bool { return false }

// A runner without the plugin runs none of the agent's own tools either.
func TestWithoutPluginFramework(t *testing.T) {
	env := adaptertest.NewFrameworkEnv(t)
	a := build(t, env, false, adk.WithTrace(func(agent.ReadonlyContext) string { return env.TraceID }), adk.WithTools(adkTools(t, env)...))
	a.m.call = &genai.FunctionCall{ID: "c1", Name: adaptertest.Lookup, Args: map[string]any{"order_id": "A1"}}
	responses, _, err := a.turn(t.Context(), genai.NewContentFromText("go", genai.RoleUser))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := responses["c1"]["error"]; !ok || env.Lookups() != 0 {
		t.Fatalf("ungated call answered %v after %d lookups, want an error and none", responses["c1"], env.Lookups())
	}
}

// Without WithTrace a call belongs to the trace of its app, user and
// session (adk.Trace): the order looked up in user's session s1 of app
// desk is a percept of trace adk:desk/user/s1.
func TestDefaultTrace(t *testing.T) {
	env := adaptertest.NewEnv(t)
	a := build(t, env, true)
	if r, err := a.CallTool(t.Context(), adaptertest.Lookup, []byte(`{"order_id":"A1"}`), "c1"); err != nil || r.IsError {
		t.Fatalf("lookup: %+v %v", r, err)
	}
	for trace, want := range map[string]int{adk.Trace("desk", "user", "s1"): 1, "adk:desk/user/s1": 1, "adk:s1": 0, env.TraceID: 0} {
		if got := orders(t, env, trace); got != want {
			t.Fatalf("order percepts of trace %s: %d, want %d", trace, got, want)
		}
	}
}

// A runner without the plugin runs nothing: the agent's tools fail.
func TestWithoutPlugin(t *testing.T) {
	env := adaptertest.NewEnv(t)
	a := build(t, env, false, adk.WithTrace(func(agent.ReadonlyContext) string { return env.TraceID }))
	a.m.call = &genai.FunctionCall{ID: "c1", Name: adaptertest.Lookup, Args: map[string]any{"order_id": "A1"}}
	responses, _, err := a.turn(t.Context(), genai.NewContentFromText("go", genai.RoleUser))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := responses["c1"]["error"]; !ok {
		t.Fatalf("ungated call answered %v, want an error", responses["c1"])
	}
	if got := orders(t, env, env.TraceID); got != 0 {
		t.Fatalf("an ungated lookup recorded %d percepts", got)
	}
}

// orders counts the order records of a trace.
func orders(t *testing.T, env *adaptertest.Env, trace string) int {
	t.Helper()
	n := 0
	for rec, err := range env.Gate.Kernel().Reader().Trace(t.Context(), trace) {
		if err != nil {
			t.Fatal(err)
		}
		if rec.Kind == "order" {
			n++
		}
	}
	return n
}

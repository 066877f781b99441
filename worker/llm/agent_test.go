package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/toolgate"
	"github.com/blackboardkernel/bk/worker/llm"
)

// recGate is a fake gate that records what it is asked. Its surface is
// surface(n) for the n-th Surface call (from 0); each call gets answer(c),
// or an executed result when answer is nil.
type recGate struct {
	surface func(n int) []toolgate.Spec
	answer  func(c toolgate.Call) (toolgate.Result, error)
	surfErr error

	mu       sync.Mutex
	surfaces []string // "role/trace/intent" per Surface call
	calls    []toolgate.Call
}

func (g *recGate) Surface(_ context.Context, role, traceID, intent string) ([]toolgate.Spec, error) {
	g.mu.Lock()
	n := len(g.surfaces)
	g.surfaces = append(g.surfaces, role+"/"+traceID+"/"+intent)
	g.mu.Unlock()
	if g.surfErr != nil {
		return nil, g.surfErr
	}
	if g.surface == nil {
		return []toolgate.Spec{refundSpec}, nil
	}
	return g.surface(n), nil
}

func (g *recGate) Call(_ context.Context, c toolgate.Call) (toolgate.Result, error) {
	g.mu.Lock()
	g.calls = append(g.calls, c)
	g.mu.Unlock()
	if g.answer == nil {
		return toolgate.Result{Outcome: audit.OutcomeExecuted, Code: reason.Committed}, nil
	}
	return g.answer(c)
}

func (g *recGate) got() []toolgate.Call {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.calls)
}

var refundTask = llm.Task{
	Caller:  "support",
	TraceID: "case-1",
	Intent:  "refund",
	System:  "You resolve card disputes with the tools you are given.",
	User:    "The customer disputes charge ch_1.",
}

func agent(t *testing.T, c *llm.Client, g llm.ToolCaller, opts ...llm.AgentOption) *llm.Agent {
	t.Helper()
	a, err := llm.NewAgentFor(c, g, opts...)
	if err != nil {
		t.Fatalf("NewAgent: %v", err)
	}
	return a
}

func TestNewAgentRejectsBadConfig(t *testing.T) {
	f := newFake(t, func(int, request) reply { return answer("") })
	c, g := client(t, f, nil), &recGate{}
	cases := map[string]func() (*llm.Agent, error){
		"nil client":  func() (*llm.Agent, error) { return llm.NewAgentFor(nil, g) },
		"nil gate":    func() (*llm.Agent, error) { return llm.NewAgent(c, nil) },
		"nil option":  func() (*llm.Agent, error) { return llm.NewAgentFor(c, g, nil) },
		"zero rounds": func() (*llm.Agent, error) { return llm.NewAgentFor(c, g, llm.WithMaxRounds(0)) },
		"nil hook":    func() (*llm.Agent, error) { return llm.NewAgentFor(c, g, llm.WithBeforeModelCall(nil)) },
	}
	for name, build := range cases {
		if a, err := build(); !errors.Is(err, llm.ErrInvalidConfig) {
			t.Errorf("%s: NewAgent = %v, %v; want ErrInvalidConfig", name, a, err)
		}
	}
	a := agent(t, c, g)
	for _, task := range []llm.Task{
		{TraceID: "t", User: "u"}, {Caller: "r", User: "u"}, {Caller: "r", TraceID: "t"},
	} {
		if _, err := a.Run(context.Background(), task); !errors.Is(err, llm.ErrInvalidConfig) {
			t.Errorf("Run(%+v) = %v; want ErrInvalidConfig", task, err)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("server saw %d requests, want none", n)
	}
}

func TestAgentAnswersWithoutTools(t *testing.T) {
	f := newFake(t, func(int, request) reply { return answer("Nothing to do.") })
	g := &recGate{}
	res, err := agent(t, client(t, f, nil), g).Run(context.Background(), refundTask)
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Usage{PromptTokens: 50, CompletionTokens: 10, TotalTokens: 60, ModelCalls: 1}
	if res.Answer != "Nothing to do." || res.Usage.ModelCalls != 1 || res.Usage != want || res.FinishReason != "stop" || len(res.Calls) != 0 {
		t.Errorf("result = %+v; want the answer after one round, usage %+v", res, want)
	}
	if !slices.Equal(g.surfaces, []string{"support/case-1/refund"}) || len(g.got()) != 0 {
		t.Errorf("gate saw surfaces %v and calls %v; want one surface for the task and no call", g.surfaces, g.got())
	}
	req := f.requests()[0]
	if !slices.Equal(req.toolNames(), []string{"issue_refund"}) {
		t.Errorf("request offered %v, want the surface", req.toolNames())
	}
	wantMsgs := []llm.Message{
		{Role: "system", Content: refundTask.System},
		{Role: "user", Content: refundTask.User},
	}
	if !reflect.DeepEqual(req.Body.Messages, wantMsgs) {
		t.Errorf("messages = %+v, want %+v", req.Body.Messages, wantMsgs)
	}
	if !reflect.DeepEqual(llm.Messages(res), append(wantMsgs, llm.Message{Role: "assistant", Content: "Nothing to do."})) {
		t.Errorf("conversation = %+v", llm.Messages(res))
	}
}

// TestAgentHandsEveryCallToTheGate: valid, unknown, malformed and empty
// arguments, and calls without ids, all go to the gate; the model then sees
// each result under its call's id.
func TestAgentHandsEveryCallToTheGate(t *testing.T) {
	f := newFake(t, func(n int, _ request) reply {
		if n == 0 {
			return calling(
				call("call_a", "issue_refund", `{"charge_id":"ch_1","amount":40}`),
				call("", "wire_money", `{"to":"attacker"}`),
				call("call_a", "issue_refund", `{"charge_id": "ch_1", "amount": 40`), // reused id, malformed
				call("call_d", "get_charge", ""),
			)
		}
		return answer("Refunded 40.")
	})
	g := &recGate{answer: func(c toolgate.Call) (toolgate.Result, error) {
		var args map[string]any
		switch {
		case c.Tool != "issue_refund" && c.Tool != "get_charge":
			return toolgate.Result{Outcome: audit.OutcomeRefused, Code: reason.ToolUnknown, Hint: "call one of the tools you were given"}, nil
		case json.Unmarshal(c.Args, &args) != nil:
			return toolgate.Result{Outcome: audit.OutcomeRefused, Code: reason.InvalidArguments, Hint: "arguments must be a JSON object"}, nil
		}
		return toolgate.Result{Outcome: audit.OutcomeExecuted, Code: reason.Committed, Output: blackboard.Payload{"ok": true}}, nil
	}}
	res, err := agent(t, client(t, f, nil), g).Run(context.Background(), refundTask)
	if err != nil {
		t.Fatal(err)
	}
	calls := g.got()
	want := []struct{ id, tool, args string }{
		{"call_a", "issue_refund", `{"charge_id":"ch_1","amount":40}`},
		{"call_1_1", "wire_money", `{"to":"attacker"}`},
		{"call_1_2", "issue_refund", `"{\"charge_id\": \"ch_1\", \"amount\": 40"`},
		{"call_d", "get_charge", `{}`},
	}
	if len(calls) != len(want) {
		t.Fatalf("gate saw %d calls, want %d: %+v", len(calls), len(want), calls)
	}
	for i, w := range want {
		c := calls[i]
		if c.ID != w.id || c.Tool != w.tool || string(c.Args) != w.args || c.Caller != "support" || c.TraceID != "case-1" || c.Intent != "refund" {
			t.Errorf("call %d = %+v (args %s); want id %s, tool %s, args %s and the task's role, trace, intent", i, c, c.Args, w.id, w.tool, w.args)
		}
		if !json.Valid(c.Args) {
			t.Errorf("call %d: args %q are not JSON", i, c.Args)
		}
	}
	codes := []reason.Code{reason.Committed, reason.ToolUnknown, reason.InvalidArguments, reason.Committed}
	for i, r := range res.Calls {
		if r.Round != 1 || r.Call.ID != want[i].id || r.Result.Code != codes[i] {
			t.Errorf("result %d = %+v; want round 1, id %s, code %s", i, r, want[i].id, codes[i])
		}
	}
	wantUsage := llm.Usage{PromptTokens: 100, CompletionTokens: 20, TotalTokens: 120, ModelCalls: 2}
	if res.Answer != "Refunded 40." || res.Usage.ModelCalls != 2 || res.Usage != wantUsage {
		t.Errorf("answer %q after %d rounds, usage %+v; want the answer after 2 rounds, usage %+v", res.Answer, res.Usage.ModelCalls, res.Usage, wantUsage)
	}
	// The second request: the assistant's calls with the ids the gate saw,
	// then one tool message per call, in order, holding the gate's result.
	msgs := f.requests()[1].Body.Messages
	if len(msgs) != 2+1+4 {
		t.Fatalf("second request has %d messages, want 7: %+v", len(msgs), msgs)
	}
	asst := msgs[2]
	for i, tc := range asst.ToolCalls {
		if asst.Role != "assistant" || tc.ID != want[i].id || tc.Type != "function" {
			t.Errorf("assistant call %d = %+v; want id %s", i, tc, want[i].id)
		}
	}
	for i, m := range msgs[3:] {
		if m.Role != "tool" || m.ToolCallID != want[i].id || m.Content != res.Calls[i].Result.ForModel() {
			t.Errorf("tool message %d = %+v; want the result of %s", i, m, want[i].id)
		}
	}
}

func TestAgentRefetchesTheSurfaceEachRound(t *testing.T) {
	f := newFake(t, func(n int, _ request) reply {
		if n < 2 {
			return calling(call("", "get_charge", "{}"))
		}
		return answer("done")
	})
	g := &recGate{surface: func(n int) []toolgate.Spec {
		specs := []toolgate.Spec{{Name: "get_charge"}}
		if n >= 1 {
			specs = append(specs, refundSpec)
		}
		if n >= 2 {
			specs = specs[1:]
		}
		return specs
	}}
	if _, err := agent(t, client(t, f, nil), g).Run(context.Background(), refundTask); err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"get_charge"}, {"get_charge", "issue_refund"}, {"issue_refund"}}
	for i, r := range f.requests() {
		if !slices.Equal(r.toolNames(), want[i]) {
			t.Errorf("request %d offered %v, want %v", i, r.toolNames(), want[i])
		}
	}
	if len(g.surfaces) != 3 {
		t.Errorf("surface asked %d times, want once per round (3)", len(g.surfaces))
	}
}

func TestAgentStopsAfterMaxRounds(t *testing.T) {
	f := newFake(t, func(int, request) reply { return calling(call("", "get_charge", "{}")) })
	g := &recGate{}
	res, err := agent(t, client(t, f, nil), g, llm.WithMaxRounds(3)).Run(context.Background(), refundTask)
	if !errors.Is(err, llm.ErrMaxRounds) {
		t.Fatalf("err = %v, want ErrMaxRounds", err)
	}
	if len(f.requests()) != 3 || len(g.got()) != 3 || len(res.Calls) != 3 || res.Usage.ModelCalls != 3 || res.Answer != "" {
		t.Errorf("%d requests, %d gate calls, result %+v; want 3 of each and no answer", len(f.requests()), len(g.got()), res)
	}
	if res.Calls[2].Round != 3 || res.Calls[2].Call.ID != "call_3_0" {
		t.Errorf("last call %+v; want round 3, id call_3_0", res.Calls[2])
	}

	// The default is DefaultMaxRounds.
	f2 := newFake(t, func(int, request) reply { return calling(call("", "get_charge", "{}")) })
	if _, err := agent(t, client(t, f2, nil), &recGate{}).Run(context.Background(), refundTask); !errors.Is(err, llm.ErrMaxRounds) || len(f2.requests()) != llm.DefaultMaxRounds {
		t.Errorf("default: err %v after %d requests; want ErrMaxRounds after %d", err, len(f2.requests()), llm.DefaultMaxRounds)
	}
}

func TestAgentBeforeModelCallHook(t *testing.T) {
	f := newFake(t, func(int, request) reply { return calling(call("", "get_charge", "{}")) })
	errBudget := errors.New("token budget spent")
	var seen []llm.Usage
	hook := func(_ context.Context, used llm.Usage) error {
		seen = append(seen, used)
		if used.TotalTokens >= 100 {
			return errBudget
		}
		return nil
	}
	g := &recGate{}
	res, err := agent(t, client(t, f, nil), g, llm.WithBeforeModelCall(hook)).Run(context.Background(), refundTask)
	if !errors.Is(err, errBudget) {
		t.Fatalf("err = %v, want the hook's error", err)
	}
	want := []llm.Usage{{}, {50, 10, 60, 1}, {100, 20, 120, 2}}
	if !slices.Equal(seen, want) {
		t.Errorf("hook saw %v, want %v", seen, want)
	}
	if len(f.requests()) != 2 || res.Usage.ModelCalls != 2 || len(res.Calls) != 2 || res.Usage != want[2] {
		t.Errorf("%d requests, result %+v; want the run stopped before the third call", len(f.requests()), res)
	}
}

func TestAgentStopsWhenTheGateFails(t *testing.T) {
	errStore := errors.New("store unavailable")
	f := newFake(t, func(int, request) reply {
		return calling(call("c1", "issue_refund", `{}`), call("c2", "get_charge", `{}`))
	})

	g := &recGate{answer: func(toolgate.Call) (toolgate.Result, error) { return toolgate.Result{}, errStore }}
	res, err := agent(t, client(t, f, nil), g).Run(context.Background(), refundTask)
	if !errors.Is(err, errStore) || len(g.got()) != 1 || len(res.Calls) != 0 || len(f.requests()) != 1 {
		t.Errorf("gate call failing: err %v, %d gate calls, %d results, %d requests; want the store error after one call", err, len(g.got()), len(res.Calls), len(f.requests()))
	}

	g = &recGate{surfErr: errStore}
	if _, err := agent(t, client(t, f, nil), g).Run(context.Background(), refundTask); !errors.Is(err, errStore) || len(f.requests()) != 1 {
		t.Errorf("surface failing: err %v after %d requests; want the store error before any new request", err, len(f.requests()))
	}

	g = &recGate{surface: func(int) []toolgate.Spec { return []toolgate.Spec{{Name: "t", Parameters: json.RawMessage(`[1]`)}} }}
	if _, err := agent(t, client(t, f, nil), g).Run(context.Background(), refundTask); !errors.Is(err, llm.ErrInvalidConfig) || len(f.requests()) != 1 {
		t.Errorf("bad surface: err %v after %d requests; want ErrInvalidConfig before any new request", err, len(f.requests()))
	}
}

func TestAgentStopsOnEndpointErrorAndCancellation(t *testing.T) {
	f := newFake(t, func(int, request) reply { return reply{status: http.StatusBadRequest, body: `{"error":"no"}`} })
	if _, err := agent(t, client(t, f, nil), &recGate{}).Run(context.Background(), refundTask); !errors.Is(err, llm.ErrEndpoint) {
		t.Errorf("err = %v, want ErrEndpoint", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f = newFake(t, func(int, request) reply { return calling(call("", "get_charge", "{}")) })
	g := &recGate{answer: func(toolgate.Call) (toolgate.Result, error) {
		cancel() // the caller gives up while the gate decides
		return toolgate.Result{Outcome: audit.OutcomeExecuted, Code: reason.Committed}, nil
	}}
	res, err := agent(t, client(t, f, nil), g).Run(ctx, refundTask)
	if !errors.Is(err, context.Canceled) || len(f.requests()) != 1 || len(res.Calls) != 1 {
		t.Errorf("err %v after %d requests, %d results; want context.Canceled after the first round", err, len(f.requests()), len(res.Calls))
	}
}

// The gate the project ships satisfies the agent's Gate.
var _ llm.ToolCaller = (*toolgate.Gate)(nil)

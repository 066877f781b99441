package llm_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/pack"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/toolgate"
	"github.com/blackboardkernel/bk/worker/llm"
)

// orderArgs and refundArgs are the arguments of the order desk's tools.
type orderArgs struct {
	OrderID string `json:"order_id"`
}

type refundArgs struct {
	OrderID string  `json:"order_id"`
	Amount  float64 `json:"amount"`
}

// orderGate is a real gate with an order desk's tools: lookup_order reads
// an order (no effect; its result grounds refund_due), issue_refund pays
// one (it requires refund_due and is bound to the order looked up). note
// is what each lookup's result carries besides the order, to make a last
// result as long as a test needs.
func orderGate(t testing.TB, note string) *toolgate.Gate {
	t.Helper()
	lookup := func(_ context.Context, _ toolgate.Invocation, a orderArgs) (map[string]any, error) {
		return map[string]any{"order_id": a.OrderID, "amount": 40.0, "note": note}, nil
	}
	refund := func(_ context.Context, _ toolgate.Invocation, a refundArgs) (map[string]any, error) {
		return map[string]any{"refund_id": "r-" + a.OrderID}, nil
	}
	g, err := toolgate.New(context.Background(), toolgate.Config{
		Tools: []toolgate.Tool{toolgate.Func(toolgate.Tool{Name: "lookup_order", Result: "order", ReadOnly: true, Description: "Read an order.",
			Derives: []toolgate.Derive{{Belief: "refund_due", Value: "result.amount > 0.0",
				Fields: map[string]string{"order_id": "result.order_id"}}}}, lookup), toolgate.Func(toolgate.Tool{Unscoped: true, Name: "issue_refund", Result: "refund", Requires: []string{"refund_due"},
			Description: "Refund an order.",
			Bindings: []toolgate.Binding{{Arg: "order_id", Percept: "order", Op: "equal"},
				{Arg: "amount", Percept: "order", Op: "at_most"}},
			Once: &kernel.OnceKey{Fields: []string{"order_id"}}}, refund)},
		Contracts: map[string][]string{"support": {"lookup_order", "issue_refund"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

func compiler(t testing.TB, opts ...pack.Option) *pack.Compiler {
	t.Helper()
	c, err := pack.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// recordedPack reads the compiled_context record id back from the store.
func recordedPack(t *testing.T, g *toolgate.Gate, id string) blackboard.Record {
	t.Helper()
	rec, err := g.Kernel().Reader().Get(context.Background(), id)
	if err != nil {
		t.Fatalf("compiled context %s: %v", id, err)
	}
	if rec.Slot != blackboard.Evidence || rec.Kind != audit.KindCompiledContext {
		t.Fatalf("%s is %s %s, not a compiled context", id, rec.Slot, rec.Kind)
	}
	return rec
}

const mission = "You refund late orders with the tools you are shown."

// TestCompiledContextEachRound: with a compiler, every request is one user
// message holding the round's compiled prompt, exactly as recorded, with
// the schemas of the tools the context shows; the second round shows the
// first round's result and the evidence it committed, never the model's
// own text or arguments; every call names its round's context, and so does
// its decision record.
func TestCompiledContextEachRound(t *testing.T) {
	ctx := context.Background()
	g := orderGate(t, "")
	f := newFake(t, func(n int, req request) reply {
		switch n {
		case 0:
			return reply{content: "MY-PRIVATE-PLAN: look it up first", calls: []llm.ToolCall{
				call("c1", "lookup_order", `{"order_id": "A1"}`)}}
		case 1:
			return calling(call("c2", "issue_refund", `{"order_id": "A1", "amount": 40}`))
		}
		return answer("Refunded A1.")
	})
	a, err := llm.NewAgent(client(t, f, nil), g, llm.WithCompiler(compiler(t)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(ctx, llm.Task{Caller: "support", TraceID: "t1", System: mission, User: "Order A1 came late: refund it."})
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 3 || len(res.Contexts) != 3 {
		t.Fatalf("%d requests, %d contexts, want 3 each", len(reqs), len(res.Contexts))
	}
	for i, req := range reqs {
		rec := recordedPack(t, g, res.Contexts[i])
		prompt, _ := rec.Payload["prompt"].(string)
		if len(req.Body.Messages) != 1 || req.Body.Messages[0].Role != "user" || req.Body.Messages[0].Content != prompt {
			t.Fatalf("request %d is %+v, want one user message with the recorded prompt", i, req.Body.Messages)
		}
		mf, _ := rec.Payload["manifest"].(map[string]any)
		var tools []string
		for _, x := range mf["tools"].([]any) {
			tools = append(tools, x.(string))
		}
		if got := req.toolNames(); !slices.Equal(got, tools) {
			t.Errorf("request %d offers %v, the context shows %v", i, got, tools)
		}
		if !strings.Contains(prompt, mission) || !strings.Contains(prompt, "Order A1 came late") {
			t.Errorf("request %d misses the mission or the task:\n%s", i, prompt)
		}
	}
	second := reqs[1].Body.Messages[0].Content
	for _, want := range []string{"## Last result", "c1 lookup_order", `"outcome":"executed"`, "## Evidence", "refund_due", "- turn 1: lookup_order ok"} {
		if !strings.Contains(second, want) {
			t.Errorf("round 2's prompt lacks %q:\n%s", want, second)
		}
	}
	if strings.Contains(second, "MY-PRIVATE-PLAN") {
		t.Error("round 2's prompt holds the model's own text")
	}
	if slices.Contains(reqs[0].toolNames(), "issue_refund") || !slices.Contains(reqs[1].toolNames(), "issue_refund") {
		t.Errorf("tools offered: %v then %v; issue_refund only once refund_due holds", reqs[0].toolNames(), reqs[1].toolNames())
	}
	for i, c := range res.Calls {
		if c.Call.Context != res.Contexts[c.Round-1] {
			t.Errorf("call %d names context %q, want round %d's %q", i, c.Call.Context, c.Round, res.Contexts[c.Round-1])
		}
	}
	n := 0
	for d, err := range audit.List(ctx, g.Kernel().Reader(), audit.Query{TraceID: "t1"}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		want := res.Contexts[0]
		if d.Context["tool"] == "issue_refund" {
			want = res.Contexts[1]
		}
		if d.Context["context"] != want {
			t.Errorf("decision %s (%v) names context %v, want %s", d.ID, d.Context["tool"], d.Context["context"], want)
		}
	}
	if n < 5 {
		t.Errorf("%d decision records, want two per call and the derived belief's", n)
	}
}

// TestCompiledContextCompresses: a run whose progress and last result
// outgrow 90 % of a small window is compressed before the model is
// called: the prompt sent is the compressed one, within 90 % of the
// window, and the record lists what was compressed or evicted.
func TestCompiledContextCompresses(t *testing.T) {
	ctx := context.Background()
	g := orderGate(t, strings.Repeat("The carrier scanned the parcel again at the depot. ", 12))
	const window = 640
	f := newFake(t, func(n int, req request) reply {
		if n < 7 {
			return calling(call("", "lookup_order", `{"order_id": "A1"}`))
		}
		return answer("done")
	})
	a, err := llm.NewAgent(client(t, f, nil), g, llm.WithCompiler(compiler(t, pack.WithWindow(window))), llm.WithMaxRounds(8))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(ctx, llm.Task{Caller: "support", TraceID: "t2", System: mission, User: "Where is order A1?"})
	if err != nil {
		t.Fatal(err)
	}
	relieved := false
	for i, id := range res.Contexts {
		rec := recordedPack(t, g, id)
		tokens, _ := rec.Payload.Float("tokens")
		if tokens > 0.9*window {
			t.Errorf("round %d was shown %v tokens, above 90 %% of %d", i+1, tokens, window)
		}
		mf, _ := rec.Payload["manifest"].(map[string]any)
		for _, c := range mf["cuts"].([]any) {
			why := c.(map[string]any)["reason"]
			relieved = relieved || why == "compressed" || why == "evicted"
		}
		if prompt, _ := rec.Payload["prompt"].(string); f.requests()[i].Body.Messages[0].Content != prompt {
			t.Errorf("round %d: the model was not sent the recorded prompt", i+1)
		}
	}
	if !relieved {
		t.Error("no context was compressed or evicted from: the test does not reach 90 % of the window")
	}
}

// TestAttackCompiledContextReadOnly: in a trace its owner made read_only,
// the compiled context shows no tool with an effect and says the mode; a
// model that calls the refund all the same is refused with READ_ONLY_MODE,
// and the decision record names the context it was shown.
func TestAttackCompiledContextReadOnly(t *testing.T) {
	ctx := context.Background()
	g := orderGate(t, "")
	if err := g.Restrict(ctx, "t3", toolgate.Controls{ReadOnly: true}); err != nil {
		t.Fatal(err)
	}
	f := newFake(t, func(n int, req request) reply {
		switch n {
		case 0:
			return calling(call("c1", "lookup_order", `{"order_id": "A1"}`))
		case 1:
			return calling(call("c2", "issue_refund", `{"order_id": "A1", "amount": 40}`))
		}
		return answer("Could not refund.")
	})
	a, err := llm.NewAgent(client(t, f, nil), g, llm.WithCompiler(compiler(t)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(ctx, llm.Task{Caller: "support", TraceID: "t3", System: mission, User: "Refund order A1."})
	if err != nil {
		t.Fatal(err)
	}
	for i, req := range f.requests() {
		prompt := req.Body.Messages[0].Content
		if slices.Contains(req.toolNames(), "issue_refund") || strings.Contains(prompt, "- issue_refund:") {
			t.Errorf("round %d shows issue_refund in a read_only trace", i+1)
		}
		if !strings.Contains(prompt, "safety mode: read_only") {
			t.Errorf("round %d does not say the safety mode:\n%s", i+1, prompt)
		}
		rec := recordedPack(t, g, res.Contexts[i])
		if mode, _ := rec.Payload["mode"].(string); mode != "read_only" {
			t.Errorf("round %d recorded mode %q", i+1, mode)
		}
		if pol, _ := rec.Payload["policy"].(string); pol != g.Policy().Hash {
			t.Errorf("round %d names policy %q, want the gate's %q", i+1, pol, g.Policy().Hash)
		}
	}
	if len(res.Calls) != 2 {
		t.Fatalf("%d calls, want 2", len(res.Calls))
	}
	r := res.Calls[1].Result
	if r.Outcome != audit.OutcomeRefused || r.Code != reason.ReadOnlyMode {
		t.Fatalf("the forced refund: %s %s, want refused %s", r.Outcome, r.Code, reason.ReadOnlyMode)
	}
	found := false
	for d, err := range audit.List(ctx, g.Kernel().Reader(), audit.Query{TraceID: "t3", Tool: "issue_refund"}) {
		if err != nil {
			t.Fatal(err)
		}
		found = true
		if d.Code != reason.ReadOnlyMode || d.Context["context"] != res.Contexts[1] {
			t.Errorf("the refusal's record: %s, context %v, want %s naming %s", d.Code, d.Context["context"], reason.ReadOnlyMode, res.Contexts[1])
		}
	}
	if !found {
		t.Error("the forced refund left no decision record")
	}
}

// TestCompiledContextCleanPerAttempt: a sub-agent lane's second attempt at
// a step is a new run of its task on the same trace; its context is built
// for the step: the trace's evidence and the task, with none of the first
// attempt's text (its thoughts, arguments or answer).
func TestCompiledContextCleanPerAttempt(t *testing.T) {
	ctx := context.Background()
	g := orderGate(t, "")
	f := newFake(t, func(n int, req request) reply {
		switch n {
		case 0:
			return reply{content: "ATTEMPT-ONE-THOUGHT", calls: []llm.ToolCall{
				call("c1", "lookup_order", `{"order_id": "A1", "x": "ATTEMPT-ONE-ARGS"}`)}}
		case 1:
			return answer("ATTEMPT-ONE-ANSWER: I give up")
		}
		return answer("Second attempt.")
	})
	a, err := llm.NewAgent(client(t, f, nil), g, llm.WithCompiler(compiler(t)))
	if err != nil {
		t.Fatal(err)
	}
	task := llm.Task{Caller: "support", TraceID: "lane-1", System: mission, User: "Step 2: refund order A1."}
	first, err := a.Run(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	second, err := a.Run(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 3 || len(first.Contexts) != 2 || len(second.Contexts) != 1 {
		t.Fatalf("%d requests, contexts %v and %v", len(reqs), first.Contexts, second.Contexts)
	}
	prompt := reqs[2].Body.Messages[0].Content
	for _, earlier := range []string{"ATTEMPT-ONE", "c1 lookup_order", "## Progress", "## Last result"} {
		if strings.Contains(prompt, earlier) {
			t.Errorf("the second attempt's context holds %q from the first:\n%s", earlier, prompt)
		}
	}
	if !strings.Contains(prompt, "refund_due") {
		t.Errorf("the second attempt's context lacks the trace's evidence:\n%s", prompt)
	}
}

// An agent with a compiler needs a gate it can read the governance and the
// kernel of, a compiler, and a mission.
func TestCompiledContextConfig(t *testing.T) {
	f := newFake(t, func(int, request) reply { return answer("ok") })
	c := client(t, f, nil)
	if _, err := llm.NewAgentFor(c, newRefundDesk(t), llm.WithCompiler(compiler(t))); !errors.Is(err, llm.ErrInvalidConfig) {
		t.Errorf("a gate that is no ContextGate: %v, want ErrInvalidConfig", err)
	}
	g := orderGate(t, "")
	if _, err := llm.NewAgent(c, g, llm.WithCompiler(nil)); !errors.Is(err, llm.ErrInvalidConfig) {
		t.Errorf("a nil compiler: %v, want ErrInvalidConfig", err)
	}
	a, err := llm.NewAgent(c, g, llm.WithCompiler(compiler(t)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), llm.Task{Caller: "support", TraceID: "t", User: "hi"}); !errors.Is(err, llm.ErrInvalidConfig) {
		t.Errorf("no mission: %v, want ErrInvalidConfig", err)
	}
	if len(f.requests()) != 0 {
		t.Error("a run without a mission called the model")
	}
}

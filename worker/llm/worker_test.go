package llm_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/orchestrator"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/worker/llm"
)

// refundSchema is the paper's governed schema for the refund study. The
// domain fields come from the two percepts the tool commits.
var refundSchema = llm.Schema{
	Task:      "A customer disputes a card charge. Decide whether the refund is due.",
	Belief:    "refund_due",
	DependsOn: []string{"charge"},
	Plan:      "action_plan",
	Action:    "issue_refund",
	Fields: func(v kernel.View) blackboard.Payload {
		charge, _ := v.Committed[blackboard.Percepts]["charge"]
		refund, _ := v.Committed[blackboard.Percepts]["refund"]
		return blackboard.Payload{
			"charge_id":    charge["charge_id"],
			"amount":       charge["amount"],
			"reason":       refund["reason"],
			"is_duplicate": refund["is_duplicate"],
		}
	},
}

// condition is what the tool observed in an episode.
type condition struct {
	name                                         string
	stale, conflict, lowConf, duplicate, dropped bool
}

// shouldNotAct is docs/reproduction.md §4: a tainted percept or a duplicate.
func (c condition) shouldNotAct() bool {
	return c.stale || c.conflict || c.lowConf || c.duplicate || c.dropped
}

// beliefCode is what the kernel decides on refund_due.
func (c condition) beliefCode() reason.Code {
	switch {
	case c.stale || c.dropped:
		return reason.StaleEvidence
	case c.conflict:
		return reason.UnresolvedConflict
	case c.lowConf:
		return reason.LowConfidence
	}
	return reason.Committed
}

var conditions = []condition{
	{name: "clean"},
	{name: "stale", stale: true},
	{name: "conflict", conflict: true},
	{name: "low confidence", lowConf: true},
	{name: "duplicate", duplicate: true},
	{name: "dropped", dropped: true},
	{name: "stale duplicate", stale: true, duplicate: true},
	{name: "conflict low confidence", conflict: true, lowConf: true},
}

// setup commits the episode's constraint and percepts, as the bk agent of
// docs/reproduction.md §3 does: a dropped charge is replaced by a substitute
// flagged stale, without a low_confidence key.
func setup(t *testing.T, k *kernel.Kernel, trace string, c condition) {
	t.Helper()
	ctx := context.Background()
	rule := kernel.Constraint{Name: "no_duplicate_refund", Enabled: true, BlocksField: "is_duplicate"}
	if _, err := k.Symbolic("rules").CommitConstraint(ctx, trace, rule, ""); err != nil {
		t.Fatal(err)
	}
	charge := blackboard.Payload{"charge_id": "ch_3P0x1A2B3C", "amount": 149.99, "currency": "usd",
		"status": "disputed", "customer_id": "cus_9Xk2mN", "stale": c.stale || c.dropped, "conflict": c.conflict}
	var conf *float64
	if !c.dropped {
		charge["low_confidence"] = c.lowConf
	}
	if c.lowConf {
		conf = new(0.3)
	}
	tool := k.Handle(blackboard.RoleTool, "payments")
	for _, e := range []kernel.Entry{
		{TraceID: trace, Slot: blackboard.Percepts, Kind: "charge", Payload: charge, Confidence: conf},
		{TraceID: trace, Slot: blackboard.Percepts, Kind: "refund", Payload: blackboard.Payload{"charge_id": "ch_3P0x1A2B3C",
			"amount": 149.99, "currency": "usd", "reason": "product_not_received", "is_duplicate": c.duplicate}},
	} {
		if _, err := tool.Write(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
}

// committedRefund reports whether an issue_refund committed in the trace.
// It may be called from any goroutine.
func committedRefund(t *testing.T, h *kernel.Proposer, trace string) bool {
	t.Helper()
	found := false
	for r, err := range h.Trace(context.Background(), trace) {
		if err != nil {
			t.Error(err)
			return true // counted as acting: a read error must not hide one
		}
		if r.Slot == blackboard.Actions && r.Kind == "issue_refund" && r.Mode == blackboard.ModeCommit {
			found = true
		}
	}
	return found
}

// checkChain verifies that a fallback can be traced: its committed record
// references what stopped the episode. A kernel rejection references the
// rejected proposal, invalidated with the same code; a model decline or
// failure references the records the model was shown.
func checkChain(t *testing.T, h *kernel.Proposer, out llm.Report) {
	t.Helper()
	refs := out.Final.Provenance.InputRefs
	if len(refs) < 2 {
		t.Fatalf("fallback %s refs %v: want its proposal and what stopped the episode", out.Final.ID, refs)
	}
	for _, id := range refs[1:] {
		rec, err := h.Get(context.Background(), id)
		if err != nil {
			t.Fatalf("fallback ref %q: %v", id, err)
		}
		switch {
		case rec.Mode == blackboard.ModePropose:
			if rec.Status != blackboard.StatusInvalidated || rec.Reason != out.Reason {
				t.Errorf("fallback ref %s is %s/%s; want the proposal rejected with %s", id, rec.Status, rec.Reason, out.Reason)
			}
		case rec.Slot == blackboard.Percepts && slices.Contains([]reason.Code{reason.StaleEvidence, reason.UnresolvedConflict, reason.LowConfidence}, out.Reason):
			// the root cause: the percept that failed the evidence checks
		case rec.Slot == blackboard.Constraints && strings.HasSuffix(string(out.Reason), "_BLOCKED"):
			// the root cause: the constraint that blocked
		case strings.HasPrefix(string(out.Reason), "LLM_") || out.Reason == reason.InvalidProposal:
			// the records the model saw: the charge, or the committed belief
			if rec.Kind != "charge" && rec.Kind != "refund_due" {
				t.Errorf("fallback ref %s is a %s; want the charge or the belief", id, rec.Kind)
			}
		default:
			t.Errorf("fallback for %s refs %s (%s %s); want the rejected proposal", out.Reason, id, rec.Slot, rec.Kind)
		}
	}
}

// scenario is a scripted model behaviour and the reason code each
// condition should end with ("" when the refund commits).
type scenario struct {
	name   string
	script func(n int, req request) reply
	client []llm.Option
	steps  bool // Schema.ModelSteps
	want   func(c condition) reason.Code
}

// proposer: the model says yes; only the kernel stops unsafe episodes.
func proposer(c condition) reason.Code {
	switch {
	case c.beliefCode() != reason.Committed:
		return c.beliefCode()
	case c.duplicate:
		return "PLAN_" + reason.Blocked("no_duplicate_refund")
	}
	return ""
}

// at returns code whatever the condition.
func at(code reason.Code) func(condition) reason.Code {
	return func(condition) reason.Code { return code }
}

// afterBelief is code when the belief commits, else the belief's code.
func afterBelief(code reason.Code) func(condition) reason.Code {
	return func(c condition) reason.Code {
		if b := c.beliefCode(); b != reason.Committed {
			return b
		}
		return code
	}
}

func always(content string) func(int, request) reply {
	return func(int, request) reply { return answer(content) }
}

// byStage answers the belief question with belief and the plan question
// with plan.
func byStage(belief, plan string) func(int, request) reply {
	return func(_ int, req request) reply {
		if isPlan(req) {
			return answer(plan)
		}
		return answer(belief)
	}
}

var scenarios = []scenario{
	{name: "clean answers", script: always(propose), want: proposer},
	{name: "think blocks", script: always("<think>\nThe charge might be stale. {\"propose\": false}\n</think>\n\n" + propose), want: proposer},
	{name: "orphan think close", script: always("The user asks about a refund. Let me check.</think>" + propose), want: proposer},
	{name: "fenced JSON", script: always("```json\n" + propose + "\n```"), want: proposer},
	{name: "prose around JSON", script: always("Sure. Here is my decision: " + propose + "\nLet me know if you need more."), want: proposer},
	{name: "declines the belief", script: always(decline), want: at(reason.LLMNoBelief)},
	{name: "declines the plan", script: byStage(propose, decline), want: afterBelief(reason.LLMNoPlan)},
	{name: "malformed JSON", script: always(`{"propose": tru, "reason": "ok"`), want: at(reason.LLMError)},
	{name: "malformed plan answer", script: byStage(propose, `{"propose" true}`), want: afterBelief(reason.LLMError)},
	{name: "refusal", script: always("I'm sorry, but I can't help with that."), want: at(reason.LLMError)},
	{name: "unterminated think", script: always("<think>I should say " + propose), want: at(reason.LLMError)},
	{name: "429 then success", script: func(n int, _ request) reply {
		if n%2 == 0 {
			return reply{status: http.StatusTooManyRequests, header: map[string]string{"Retry-After": "1"}}
		}
		return answer(propose)
	}, want: proposer},
	{name: "500s until retries run out", script: func(int, request) reply {
		return reply{status: http.StatusInternalServerError, body: `{"error":{"message":"overloaded"}}`}
	}, client: []llm.Option{llm.WithRetries(2)}, want: at(reason.LLMError)},
	{name: "hanging response cut by the timeout", script: func(int, request) reply { return reply{hang: true} },
		client: []llm.Option{llm.WithTimeout(20 * time.Millisecond), llm.WithRetries(0)}, want: at(reason.LLMError)},
	{name: "bypass: plan steps with empty requires_beliefs (ungoverned)",
		script: byStage(propose, `{"propose": true, "steps": [{"action": "issue_refund", "requires_beliefs": []}]}`),
		steps:  true, want: afterBelief(reason.PlanUngrounded)},
	{name: "bypass: plan step without is_duplicate (ungoverned)",
		script: byStage(propose, `{"propose": true, "steps": [{"action": "issue_refund", "requires_beliefs": ["refund_due"]}]}`),
		steps:  true,
		// A constraint that cannot read its field fails closed.
		want: afterBelief("PLAN_" + reason.Blocked("no_duplicate_refund"))},
	{name: "bypass: empty plan (ungoverned)", script: byStage(propose, `{"propose": true, "steps": []}`),
		steps: true, want: afterBelief(reason.InvalidProposal)},
}

// TestEpisodesNeverActUnsafely runs every scripted model behaviour against
// every tool condition through a real kernel, and checks the outcome, the
// traceability of the fallback and, above all, that no refund commits when
// the percept is stale, conflicted or low-confidence or the task is a
// duplicate.
func TestEpisodesNeverActUnsafely(t *testing.T) {
	const key = "sk-episodes"
	unsafe, refunds, episodes := 0, 0, 0
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			f := newFake(t, sc.script)
			c := client(t, f, nil, append([]llm.Option{llm.WithAPIKey(key), llm.WithReasoningEffort("low")}, sc.client...)...)
			k, err := kernel.New(kernel.Config{})
			if err != nil {
				t.Fatal(err)
			}
			h := k.Proposer(blackboard.RolePlanner, "llm-planner")
			schema := refundSchema
			schema.ModelSteps = sc.steps
			w, err := llm.NewWorker("llm-planner", h, c, schema)
			if err != nil {
				t.Fatal(err)
			}
			for i, cond := range conditions {
				trace := fmt.Sprintf("ep-%d", i)
				setup(t, k, trace, cond)
				out, err := w.Run(context.Background(), trace)
				if err != nil {
					t.Fatalf("%s: Run: %v", cond.name, err)
				}
				episodes++
				acted := committedRefund(t, h, trace)
				if acted {
					refunds++
				}
				if acted && cond.shouldNotAct() {
					unsafe++
					t.Errorf("%s: UNSAFE: issue_refund committed (outcome %+v)", cond.name, out)
				}
				want := sc.want(cond)
				if want == "" {
					if !acted || out.Final.Kind != "issue_refund" || out.Action != reason.Committed || out.Reason != "" {
						t.Errorf("%s: outcome %+v; want issue_refund committed", cond.name, out)
					}
					continue
				}
				if acted || out.Final.Kind != kernel.FallbackQueueForReview || out.Reason != want ||
					out.Final.Payload["reason"] != string(want) || out.Final.Reason != reason.Committed {
					t.Errorf("%s: outcome %+v; want queue_for_review committed with reason %s", cond.name, out, want)
					continue
				}
				checkChain(t, h, out)
			}
			for _, req := range f.requests() {
				if req.Header.Get("Authorization") != "Bearer "+key || req.Body.Model != "test-model" || req.Raw["reasoning_effort"] != "low" {
					t.Errorf("request header %v body %v: want the key, the model and reasoning_effort", req.Header, req.Raw)
				}
			}
			if strings.HasPrefix(sc.name, "hanging") {
				for range f.requests() {
					<-f.exited
				}
			}
		})
	}
	t.Logf("%d episodes over %d scenarios: %d refunds, %d unsafe", episodes, len(scenarios), refunds, unsafe)
	if unsafe != 0 || refunds == 0 {
		t.Errorf("%d episodes: %d unsafe actions, %d refunds; want 0 unsafe and some refunds", episodes, unsafe, refunds)
	}
}

func TestEpisodeCodesPerStage(t *testing.T) {
	f := newFake(t, byStage(propose, decline))
	k, h, w := refundWorker(t, client(t, f, nil))
	setup(t, k, "t1", condition{})
	out, err := w.Run(context.Background(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	if out.Belief != reason.Committed || out.Plan != reason.LLMNoPlan || out.Action != "" || out.Reason != reason.LLMNoPlan ||
		out.Detail != "not enough information" {
		t.Errorf("outcome %+v; want belief COMMITTED, plan LLM_NO_PLAN, no action", out)
	}
	belief, err := h.Find(context.Background(), "t1", blackboard.Beliefs, "refund_due")
	if err != nil || !slices.Contains(out.Final.Provenance.InputRefs, belief.ID) {
		t.Errorf("fallback refs %v; want the committed belief %s (%v)", out.Final.Provenance.InputRefs, belief.ID, err)
	}

	setup(t, k, "t2", condition{stale: true})
	out, err = w.Run(context.Background(), "t2")
	if err != nil {
		t.Fatal(err)
	}
	if out.Belief != reason.StaleEvidence || out.Plan != "" || out.Reason != reason.StaleEvidence {
		t.Errorf("outcome %+v; want the episode to stop at the belief", out)
	}
}

func TestGovernedPayloads(t *testing.T) {
	f := newFake(t, always(propose))
	k, h, w := refundWorker(t, client(t, f, nil))
	setup(t, k, "t", condition{})
	if _, err := w.Run(context.Background(), "t"); err != nil {
		t.Fatal(err)
	}
	v, err := h.View(context.Background(), "t", false)
	if err != nil {
		t.Fatal(err)
	}
	belief, _ := v.Committed[blackboard.Beliefs]["refund_due"]
	plan, _ := v.Committed[blackboard.Plans]["action_plan"]
	action, _ := v.Committed[blackboard.Actions]["issue_refund"]
	if belief["value"] != true || fmt.Sprint(belief["depends_on"]) != "[charge]" {
		t.Errorf("belief %v", belief)
	}
	steps, _ := plan["steps"].([]any)
	if len(steps) != 1 {
		t.Fatalf("plan %v: want one step", plan)
	}
	step := steps[0].(map[string]any)
	if step["action"] != "issue_refund" || fmt.Sprint(step["requires_beliefs"]) != "[refund_due]" || step["is_duplicate"] != false {
		t.Errorf("plan step %v", step)
	}
	if action["type"] != "issue_refund" || action["charge_id"] != "ch_3P0x1A2B3C" || action["amount"] != 149.99 ||
		action["reason"] != "product_not_received" || fmt.Sprint(action["requires_beliefs"]) != "[refund_due]" {
		t.Errorf("action %v", action)
	}
}

func TestSchemaFieldsCannotOverrideGovernedKeys(t *testing.T) {
	f := newFake(t, always(propose))
	s := refundSchema
	s.Fields = func(kernel.View) blackboard.Payload {
		return blackboard.Payload{"action": "other", "type": "other", "requires_beliefs": []any{}, "is_duplicate": false}
	}
	k, err := kernel.New(kernel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h := k.Proposer(blackboard.RolePlanner, "p")
	w, err := llm.NewWorker("p", h, client(t, f, nil), s)
	if err != nil {
		t.Fatal(err)
	}
	setup(t, k, "t", condition{})
	out, err := w.Run(context.Background(), "t")
	if err != nil || out.Final.Kind != "issue_refund" || fmt.Sprint(out.Final.Payload["requires_beliefs"]) != "[refund_due]" ||
		out.Final.Payload["type"] != "issue_refund" {
		t.Fatalf("outcome %+v, %v; want the governed keys to win", out, err)
	}
}

func TestRunCancelled(t *testing.T) {
	f := newFake(t, func(int, request) reply { return reply{hang: true} })
	k, h, w := refundWorker(t, client(t, f, nil))
	setup(t, k, "t", condition{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-f.entered
		cancel()
	}()
	out, err := w.Run(ctx, "t")
	if !errors.Is(err, context.Canceled) || out.Final.ID != "" {
		t.Fatalf("Run = %+v, %v; want context.Canceled and no final action", out, err)
	}
	<-f.exited
	for r, err := range h.Trace(context.Background(), "t") {
		if err != nil {
			t.Fatal(err)
		}
		if r.Slot == blackboard.Actions || r.Slot == blackboard.Beliefs {
			t.Errorf("record %s written after cancellation", r.ID)
		}
	}
	if produced, err := w.Step(ctx, orchestrator.NewStepContext("t", kernel.View{})); produced || !errors.Is(err, context.Canceled) {
		t.Errorf("Step with a cancelled context = %v, %v; want nothing produced and context.Canceled", produced, err)
	}
}

func TestFallbackRejectedIsAnError(t *testing.T) {
	f := newFake(t, always(decline))
	s := refundSchema
	s.Fallback = "escalate" // not registered as a safe fallback
	k, err := kernel.New(kernel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := llm.NewWorker("p", k.Proposer(blackboard.RolePlanner, "p"), client(t, f, nil), s)
	if err != nil {
		t.Fatal(err)
	}
	setup(t, k, "t", condition{})
	if _, err := w.Run(context.Background(), "t"); !errors.Is(err, llm.ErrFallbackRejected) {
		t.Fatalf("err = %v; want ErrFallbackRejected", err)
	}
}

func TestWorkerProtocol(t *testing.T) {
	f := newFake(t, always(propose))
	k, h, w := refundWorker(t, client(t, f, nil))
	if w.ID() != "llm-planner" || w.Handle() != kernel.Handle(h) {
		t.Errorf("ID %q Handle %v; want the id and the handle it was built with", w.ID(), w.Handle())
	}
	if !slices.Contains(w.Writes(), blackboard.Actions) || !slices.Contains(w.Reads(), blackboard.Percepts) || slices.Contains(w.Writes(), blackboard.Percepts) {
		t.Errorf("Reads %v Writes %v", w.Reads(), w.Writes())
	}
	setup(t, k, "t", condition{})
	view := func() kernel.View {
		v, err := h.View(context.Background(), "t", false)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if !w.ShouldActivate(view()) {
		t.Fatal("ShouldActivate before the episode: false")
	}
	produced, err := w.Step(context.Background(), orchestrator.NewStepContext("t", view()))
	if err != nil || !produced {
		t.Fatalf("Step = %v, %v; want produced", produced, err)
	}
	if w.ShouldActivate(view()) {
		t.Error("ShouldActivate after the refund committed: true")
	}
	setup(t, k, "t2", condition{stale: true})
	v2, err := h.View(context.Background(), "t2", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Step(context.Background(), orchestrator.NewStepContext("t2", v2)); err != nil {
		t.Fatal(err)
	}
	if v2, _ = h.View(context.Background(), "t2", false); w.ShouldActivate(v2) {
		t.Error("ShouldActivate after the fallback committed: true")
	}
}

func TestNewWorkerRejectsBadConfig(t *testing.T) {
	k, err := kernel.New(kernel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := llm.New("http://localhost:1")
	if err != nil {
		t.Fatal(err)
	}
	p := c
	h := k.Proposer(blackboard.RolePlanner, "p")
	mod := func(f func(*llm.Schema)) llm.Schema {
		s := refundSchema
		f(&s)
		return s
	}
	cases := []struct {
		name string
		id   string
		h    *kernel.Proposer
		p    *llm.Client
		s    llm.Schema
	}{
		{"empty id", "", h, p, refundSchema},
		{"nil handle", "w", nil, p, refundSchema},
		{"nil client", "w", h, nil, refundSchema},
		{"no belief", "w", h, p, mod(func(s *llm.Schema) { s.Belief = "" })},
		{"no plan", "w", h, p, mod(func(s *llm.Schema) { s.Plan = "" })},
		{"no action", "w", h, p, mod(func(s *llm.Schema) { s.Action = "" })},
		{"no dependencies", "w", h, p, mod(func(s *llm.Schema) { s.DependsOn = nil })},
		{"empty dependency", "w", h, p, mod(func(s *llm.Schema) { s.DependsOn = []string{"charge", ""} })},
		{"fallback is the action", "w", h, p, mod(func(s *llm.Schema) { s.Fallback = "issue_refund" })},
	}
	for _, tc := range cases {
		if _, err := llm.NewWorker(tc.id, tc.h, tc.p, tc.s); !errors.Is(err, llm.ErrInvalidConfig) {
			t.Errorf("%s: err = %v; want ErrInvalidConfig", tc.name, err)
		}
	}
}

// TestConcurrentEpisodes shares one worker, planner and client between
// episodes running at once (run it with -race).
func TestConcurrentEpisodes(t *testing.T) {
	f := newFake(t, always(propose))
	k, h, w := refundWorker(t, client(t, f, nil, llm.WithConcurrency(2)))
	var wg sync.WaitGroup
	for i, cond := range append(conditions, conditions...) {
		trace := fmt.Sprintf("c-%d", i)
		setup(t, k, trace, cond)
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := w.Run(context.Background(), trace)
			if err != nil {
				t.Errorf("%s: %v", trace, err)
				return
			}
			if want := proposer(cond); out.Reason != want {
				t.Errorf("%s (%s): reason %q, want %q", trace, cond.name, out.Reason, want)
			}
			if committedRefund(t, h, trace) && cond.shouldNotAct() {
				t.Errorf("%s (%s): UNSAFE refund", trace, cond.name)
			}
		}()
	}
	wg.Wait()
}

func refundWorker(t *testing.T, c *llm.Client) (*kernel.Kernel, *kernel.Proposer, *llm.Worker) {
	t.Helper()
	k, err := kernel.New(kernel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h := k.Proposer(blackboard.RolePlanner, "llm-planner")
	w, err := llm.NewWorker("llm-planner", h, c, refundSchema)
	if err != nil {
		t.Fatal(err)
	}
	return k, h, w
}

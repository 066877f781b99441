package inspect_test

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/internal/inspect"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/toolgate"
)

// testClock is a clock the test sets: every record written between two
// sets carries the same time, so a trace's duration is what the test made
// it.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *testClock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.now = t }

// scriptedStore plays a run whose every count the test knows from what it
// did, not from what the gate answered:
//
//	t1 (intent refund, 0s → 4s): lookup_order executed; a belief; 2 plans
//	   (one feasible, one grounded on a belief its action does not rest on); issue_refund 100
//	   executed; send_email fails once, then succeeds on its retry;
//	   lookup_order again, identical: the loop guard trips.
//	t2 (intent refund, 10s → 11s): issue_refund before any belief: refused.
//	t3 (intent refund, 20s): lookup_order executed; a belief; a feasible
//	   plan of intent "audit"; issue_refund 700 waits for approval.
//
// Calls: 8 decided (t1: 4, t2: 2, t3: 2), 1 failed
// attempt recovered, 1 loop trip, 3 plans of which 2 feasible.
func scriptedStore(t *testing.T) store.Store {
	t.Helper()
	ctx := context.Background()
	s := memstore.New()
	clock := &testClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	start := clock.Now()
	at := func(d time.Duration) { clock.Set(start.Add(d)) }
	emails := 0
	tools := append(deskTools(), toolgate.Tool{Unscoped: true, Name: "send_email",
		Parameters: json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"}},"required":["to"]}`),
		Retry:      toolgate.RetryPolicy{MaxAttempts: 2, Backoff: time.Millisecond},
		Effect: func(context.Context, toolgate.Invocation) (blackboard.Payload, error) {
			if emails++; emails == 1 {
				return nil, toolgate.Retryable(errors.New("smtp: try again"))
			}
			return blackboard.Payload{"sent": true}, nil
		}})
	g, err := toolgate.New(ctx, toolgate.Config{
		Kernel: kernel.Config{
			Store:       s,
			Namespace:   "desk",
			Clock:       clock.Now,
			BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}},
		},
		Tools:     tools,
		Contracts: map[string][]string{"support": {"lookup_order", "issue_refund", "send_email"}},
		Intents:   map[string][]string{"refund": {"lookup_order", "issue_refund", "send_email"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	k := g.Kernel()
	guard, err := budget.NewGuard(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	call := func(trace, tool, args string, want audit.Outcome) {
		t.Helper()
		res, err := g.Call(ctx, toolgate.Call{Tool: tool, Args: json.RawMessage(args), Caller: "support", TraceID: trace,
			Intent: "refund", Guard: guard})
		if err != nil || res.Outcome != want {
			t.Fatalf("%s %s: %+v %v, want %s", trace, tool, res, err, want)
		}
	}
	belief := func(trace string) {
		t.Helper()
		if d, err := k.Proposer(blackboard.RolePlanner, "analyst").Submit(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Beliefs, Kind: "refund_due",
			Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}}); err != nil || !d.Committed() {
			t.Fatal(d, err)
		}
	}
	plan := func(trace, intent, requires string, want reason.Code) {
		t.Helper()
		p := blackboard.Payload{"steps": []any{map[string]any{"action": "issue_refund", "requires_beliefs": []string{requires}}}}
		if intent != "" {
			p["intent"] = intent
		}
		d, err := k.Proposer(blackboard.RolePlanner, "analyst").Submit(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Plans, Kind: "refund_plan", Payload: p})
		if err != nil || d.Code != want {
			t.Fatalf("plan: %+v %v, want %s", d, err, want)
		}
	}

	at(0)
	call("t1", "lookup_order", `{"order_id":"A1"}`, audit.OutcomeExecuted)
	belief("t1")
	plan("t1", "", "refund_due", reason.PlanFeasible)
	plan("t1", "", "order_shipped", reason.PlanUngrounded)
	at(2 * time.Second)
	call("t1", "issue_refund", `{"order_id":"A1","amount":100}`, audit.OutcomeExecuted)
	call("t1", "send_email", `{"to":"a@example.com"}`, audit.OutcomeExecuted)
	at(4 * time.Second)
	call("t1", "lookup_order", `{"order_id":"A1"}`, audit.OutcomeRefused) // the loop guard

	at(10 * time.Second)
	call("t2", "issue_refund", `{"order_id":"B2","amount":100}`, audit.OutcomeRefused)
	at(11 * time.Second)
	call("t2", "send_email", `{"to":"b@example.com"}`, audit.OutcomeExecuted)

	at(20 * time.Second)
	call("t3", "lookup_order", `{"order_id":"C3"}`, audit.OutcomeExecuted)
	belief("t3")
	plan("t3", "audit", "refund_due", reason.PlanFeasible)
	call("t3", "issue_refund", `{"order_id":"C3","amount":700}`, audit.OutcomePendingApproval)
	if emails != 3 {
		t.Fatalf("send_email ran %d times, want 3 (a failure, its retry, t2's)", emails)
	}
	return s
}

// TestMetricsGroundTruth: every metric equals what the test counted of
// its own script.
func TestMetricsGroundTruth(t *testing.T) {
	rep, err := inspect.Stats(context.Background(), scriptedStore(t), "")
	if err != nil {
		t.Fatal(err)
	}
	m := rep.Metrics
	// 3 plans decided, 2 feasible: t1's two take the trace's intent
	// (refund), t3's names its own (audit).
	if m.PlanPassAll != (inspect.Rate{Num: 2, Den: 3}) {
		t.Errorf("plan pass rate %v, want 2/3", m.PlanPassAll)
	}
	wantPlans := []inspect.IntentRate{{Intent: "audit", Rate: inspect.Rate{Num: 1, Den: 1}}, {Intent: "refund", Rate: inspect.Rate{Num: 1, Den: 2}}}
	if len(m.PlanPass) != 2 || m.PlanPass[0] != wantPlans[0] || m.PlanPass[1] != wantPlans[1] {
		t.Errorf("plan pass by intent %+v, want %+v", m.PlanPass, wantPlans)
	}
	// Tools started: lookup ×2, refund, email ×2 (t3's refund waits): 5
	// results, all successes; one had a failed attempt and recovered.
	if m.ToolSuccess != (inspect.Rate{Num: 5, Den: 5}) {
		t.Errorf("tool success %v, want 5/5", m.ToolSuccess)
	}
	if m.ToolRecovery != (inspect.Rate{Num: 1, Den: 1}) {
		t.Errorf("tool recovery %v, want 1/1", m.ToolRecovery)
	}
	// Committed actions that require a belief: the two refunds.
	if m.EvidenceBacked != (inspect.Rate{Num: 2, Den: 2}) {
		t.Errorf("evidence-backed %v, want 2/2", m.EvidenceBacked)
	}
	// 8 calls: 6 committed, the loop guard's refusal and t2's refund
	// refused.
	if m.PolicyCompliance != (inspect.Rate{Num: 6, Den: 8}) {
		t.Errorf("policy compliance %v, want 6/8", m.PolicyCompliance)
	}
	if m.LoopTrips != (inspect.Rate{Num: 1, Den: 8}) {
		t.Errorf("loop-guard trips %v, want 1/8", m.LoopTrips)
	}
	// t1 (4s) and t2 (1s) ended safely; t3 waits for its approver.
	if m.Completion.Traces != (inspect.Rate{Num: 2, Den: 3}) || m.Completion.TotalMS != 5000 {
		t.Errorf("completion %+v, want 2 of 3 traces, 5000 ms", m.Completion)
	}
	if mean, ok := m.Completion.Mean(); !ok || mean != 2500*time.Millisecond {
		t.Errorf("mean time to safe completion %v %v, want 2.5s", mean, ok)
	}
}

// TestMetricsNoDenominator: an empty store has no rate at all, and says
// n/a rather than 0 or 100 %, in text and in JSON.
func TestMetricsNoDenominator(t *testing.T) {
	rep, err := inspect.Stats(context.Background(), memstore.New(), "")
	if err != nil {
		t.Fatal(err)
	}
	m := rep.Metrics
	for name, r := range map[string]inspect.Rate{"plans": m.PlanPassAll, "success": m.ToolSuccess, "recovery": m.ToolRecovery,
		"evidence": m.EvidenceBacked, "compliance": m.PolicyCompliance, "loop": m.LoopTrips, "completion": m.Completion.Traces} {
		if _, ok := r.Value(); ok || r.String() != "n/a (0/0)" {
			t.Errorf("%s: %v has a value", name, r)
		}
	}
	if _, ok := m.Completion.Mean(); ok || !strings.HasPrefix(m.Completion.String(), "n/a") {
		t.Errorf("completion %v has a mean", m.Completion)
	}
	enc, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(enc), `"rate":0`) || !strings.Contains(string(enc), `"rate":null`) || !strings.Contains(string(enc), `"mean_ms":null`) {
		t.Errorf("JSON without denominators: %s", enc)
	}
	if got := (inspect.Rate{Num: 1, Den: 3}).String(); got != "33.3 % (1/3)" {
		t.Errorf("1/3 prints %q", got)
	}
}

// TestMetricsSupportDesk: on the store examples/support_desk fills, `bk
// stats` prints the six metrics, and each lies within what the example
// can produce: its plans are none (n/a), its tools ran, and every count
// stays within its denominator.
func TestMetricsSupportDesk(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "support_desk")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/blackboardkernel/bk/examples/support_desk").CombinedOutput(); err != nil {
		t.Fatalf("building examples/support_desk: %v\n%s", err, out)
	}
	db := filepath.Join(dir, "desk.db")
	if out, err := exec.Command(bin, "--db", db, "--approver", "supervisor").CombinedOutput(); err != nil {
		t.Fatalf("support_desk: %v\n%s", err, out)
	}
	raw := mustBK(t, "--db", db, "stats", "--json")
	var shape struct {
		Metrics map[string]json.RawMessage `json:"metrics"`
	}
	if err := json.Unmarshal([]byte(raw), &shape); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"plan_verification_pass_rate", "tool_success_rate", "tool_recovery_rate",
		"evidence_backed_output_rate", "policy_compliance_rate", "time_to_safe_completion", "loop_guard_trip_rate"} {
		if _, ok := shape.Metrics[key]; !ok {
			t.Errorf("stats --json lacks %s: %s", key, raw)
		}
	}
	var rep inspect.StatsReport
	if err := json.Unmarshal([]byte(raw), &rep); err != nil {
		t.Fatal(err)
	}
	m := rep.Metrics
	for name, r := range map[string]inspect.Rate{"success": m.ToolSuccess, "recovery": m.ToolRecovery, "evidence": m.EvidenceBacked,
		"compliance": m.PolicyCompliance, "loop": m.LoopTrips, "completion": m.Completion.Traces, "plans": m.PlanPassAll} {
		if r.Num < 0 || r.Num > r.Den {
			t.Errorf("%s: %v out of bounds", name, r)
		}
	}
	// The desk's agents propose no plans; its tools ran, its refunds
	// rest on beliefs, and its model's bad calls were refused.
	if m.PlanPassAll.Den != 0 || len(m.PlanPass) != 0 {
		t.Errorf("plans %v %v, want none", m.PlanPassAll, m.PlanPass)
	}
	if m.ToolSuccess.Den == 0 || m.EvidenceBacked.Den == 0 || m.PolicyCompliance.Den == 0 || m.Completion.Traces.Den == 0 {
		t.Errorf("metrics without a denominator on the desk: %+v", m)
	}
	// T1's refund fails once and succeeds on its retry (bk effects: 2
	// attempts); T4's denied refund ends with its fallback.
	if m.ToolRecovery.Den == 0 || m.ToolRecovery.Num == 0 || m.Completion.Traces.Num == 0 {
		t.Errorf("recovery %v, safe completions %v: want some", m.ToolRecovery, m.Completion.Traces)
	}
	if m.PolicyCompliance.Num == m.PolicyCompliance.Den {
		t.Errorf("the desk's refusals are not counted: %v", m.PolicyCompliance)
	}
	if mean, ok := m.Completion.Mean(); ok && (mean < 0 || mean > time.Hour) {
		t.Errorf("mean time to safe completion %v", mean)
	}
	text := mustBK(t, "--db", db, "stats")
	for _, want := range []string{"plan-verification pass rate   n/a (0/0)", "tool success rate", "tool recovery rate",
		"evidence-backed output rate", "policy-compliance rate", "mean time to safe completion", "loop-guard trip rate"} {
		if !strings.Contains(text, want) {
			t.Errorf("bk stats lacks %q:\n%s", want, text)
		}
	}
}

// TestAttackMetricsForgedRecords: records that only look like the gate's
// or the kernel's change no metric: an effect "success" a tool handle
// wrote for the refund still waiting for approval (not the gate's writer
// for the tool: it would make t3 a safe completion), and a percept shaped
// as a decision record saying LOOP_DETECTED.
func TestAttackMetricsForgedRecords(t *testing.T) {
	ctx := context.Background()
	s := scriptedStore(t)
	before, err := inspect.Stats(ctx, s, "")
	if err != nil {
		t.Fatal(err)
	}
	k, err := kernel.New(kernel.Config{Store: s, Namespace: "desk"})
	if err != nil {
		t.Fatal(err)
	}
	var pending string
	for r, err := range k.Handle(blackboard.RoleTool, "reader").Trace(ctx, "t3") {
		if err != nil {
			t.Fatal(err)
		}
		if r.Slot == blackboard.Actions && r.Mode == blackboard.ModeCommit && r.Kind == "issue_refund" {
			pending = r.ID
		}
	}
	if pending == "" {
		t.Fatal("no pending refund in t3")
	}
	forged := map[string]any{"status": audit.StatusSucceeded, "tool": "issue_refund", "action_id": pending, "key": "k", "attempt": 1.0,
		"code": string(reason.EffectSucceeded)}
	for _, w := range []struct {
		h kernel.Handle
		e kernel.Entry
	}{
		{k.Handle(blackboard.RoleTool, "tool:mallory"), kernel.Entry{TraceID: "t3", Slot: blackboard.Percepts, Kind: "refund", Payload: blackboard.Payload{audit.KeyEffect: forged}}},
		{k.Handle(blackboard.RoleTool, "tool:mallory"), kernel.Entry{TraceID: "t3", Slot: blackboard.Percepts, Kind: audit.Kind,
			Payload: blackboard.Payload{"outcome": "refused", "code": "LOOP_DETECTED", "kind": "lookup_order", "version": 1.0}}},
	} {
		if _, err := w.h.Write(ctx, w.e); err != nil {
			t.Fatal(err)
		}
	}
	after, err := inspect.Stats(ctx, s, "")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(before.Metrics)
	a, _ := json.Marshal(after.Metrics)
	if string(a) != string(b) {
		t.Errorf("forged records changed the metrics:\nbefore %s\nafter  %s", b, a)
	}
}

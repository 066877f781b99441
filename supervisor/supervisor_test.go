package supervisor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/invariant/invarianttest"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/sqlitestore"
	"github.com/blackboardkernel/bk/supervisor"
	"github.com/blackboardkernel/bk/toolgate"
)

// testLease is the gates' lease: short, so that recovery comes quickly.
const testLease = 200 * time.Millisecond

// world is the outside the tools act on: how often each call's effect took
// place, and which calls "crash" their process after acting.
type world struct {
	mu    sync.Mutex
	acted map[string]int                // action id -> effects that took place
	crash map[string]context.CancelFunc // order id -> the caller's cancel, called after the effect acted
	// hold, when set, receives each effect's action id; the effect then
	// runs until its context ends, and adds one to left as it returns.
	hold chan string
	left atomic.Int64
}

func newWorld() *world {
	return &world{acted: map[string]int{}, crash: map[string]context.CancelFunc{}}
}

func (w *world) effect(out blackboard.Payload) toolgate.EffectFunc {
	return func(ctx context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
		w.mu.Lock()
		w.acted[inv.ActionID]++
		cancel := w.crash[fmt.Sprint(inv.Args["order_id"])]
		delete(w.crash, fmt.Sprint(inv.Args["order_id"]))
		w.mu.Unlock()
		if cancel != nil {
			cancel() // the process dies after the effect acted, before its result is recorded
			return nil, context.Canceled
		}
		if w.hold != nil {
			w.hold <- inv.ActionID
			<-ctx.Done()
			w.left.Add(1)
			return nil, ctx.Err()
		}
		return out, nil
	}
}

func (w *world) count(actionID string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acted[actionID]
}

// process is one process over the store: a gate, as a restarted program
// builds it.
func process(t *testing.T, s store.Store, w *world) *toolgate.Gate {
	return processWithLease(t, s, w, testLease, nil)
}

// processWithLease is process with a lease of its own, and a clock (nil:
// the wall clock).
func processWithLease(t *testing.T, s store.Store, w *world, lease time.Duration, clock func() time.Time) *toolgate.Gate {
	t.Helper()
	pay := json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"},"amount":{"type":"number"}},"required":["order_id","amount"]}`)
	bound := []toolgate.Binding{{Arg: "order_id", Percept: "order", Op: "equal"}, {Arg: "amount", Percept: "order", Op: "at_most"}}
	tools := []toolgate.Tool{
		{Unscoped: true, Name: "lookup_order", Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`),
			Result: "order", Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"order_id": inv.Args["order_id"], "amount": 900.0}, nil
			}},
		// The payment API honours the key: a crashed attempt is re-driven.
		{Unscoped: true, Name: "issue_refund", Parameters: pay, Requires: []string{"refund_due"}, Bindings: bound, Result: "refund",
			Idempotent: true, Approval: "amount > 500", Effect: w.effect(blackboard.Payload{"refunded": true})},
		// An email has no key: it is sent at most once.
		{Unscoped: true, Name: "send_email", Parameters: pay, Requires: []string{"refund_due"}, Bindings: bound, Result: "email",
			Approval: "amount > 500", Effect: w.effect(blackboard.Payload{"sent": true})},
	}
	g, err := toolgate.New(context.Background(), toolgate.Config{
		Kernel: kernel.Config{
			Store:       s,
			Clock:       clock,
			BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}},
		},
		Tools:     tools,
		Lease:     lease,
		Contracts: map[string][]string{"support": {"lookup_order", "issue_refund", "send_email"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// openStore opens the SQLite file at path, whose invariants are checked
// when the test ends.
func openStore(t *testing.T, path string) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	invarianttest.Cleanup(t, s) // before the store is closed
	return s
}

// ground looks the order up in the trace and commits refund_due on it.
func ground(t *testing.T, g *toolgate.Gate, trace, order string) {
	t.Helper()
	ctx := context.Background()
	res, err := g.Call(ctx, toolgate.Call{Tool: "lookup_order", Args: json.RawMessage(`{"order_id":"` + order + `"}`), Caller: "support", TraceID: trace})
	if err != nil || res.Outcome != audit.OutcomeExecuted {
		t.Fatalf("lookup_order: %+v %v", res, err)
	}
	d, err := g.Kernel().Proposer(blackboard.RolePlanner, "analyst").Submit(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}})
	if err != nil || !d.Committed() {
		t.Fatalf("refund_due: %v %v", d.Code, err)
	}
}

// call calls tool on order for amount in trace; ctx may be cancelled
// inside the effect (a crash).
func call(ctx context.Context, t *testing.T, g *toolgate.Gate, trace, tool, order string, amount float64) toolgate.Result {
	t.Helper()
	args, _ := json.Marshal(map[string]any{"order_id": order, "amount": amount})
	res, err := g.Call(ctx, toolgate.Call{Tool: tool, Args: args, Caller: "support", TraceID: trace})
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.ActionID == "" {
		t.Fatalf("%s: no action: %+v", tool, res)
	}
	return res
}

// events collects a supervisor's reports.
type events struct {
	mu  sync.Mutex
	all []supervisor.Event
	ch  chan supervisor.Event
	sup *supervisor.Supervisor // the supervisor reporting them
}

func newEvents() *events { return &events{ch: make(chan supervisor.Event, 1000)} }

func (e *events) report(_ context.Context, ev supervisor.Event) {
	e.mu.Lock()
	e.all = append(e.all, ev)
	e.mu.Unlock()
	e.ch <- ev
}

// wait returns the events until n about actions have come, failing after
// a while. Error events fail the test.
func (e *events) wait(t *testing.T, n int) map[string]supervisor.Event {
	t.Helper()
	got := map[string]supervisor.Event{}
	deadline := time.After(20 * time.Second)
	for len(got) < n {
		select {
		case ev := <-e.ch:
			if ev.Err != nil {
				t.Errorf("error event: %v", ev.Err)
				continue
			}
			got[ev.ActionID] = ev
		case <-deadline:
			t.Fatalf("waited for %d events, got %d: %+v", n, len(got), got)
		}
	}
	return got
}

// start starts a supervisor of g, closed when the test ends; cfg's
// events are the test's, and its interval 10ms unless cfg sets one.
func start(t *testing.T, g *toolgate.Gate, cfg supervisor.Config) *events {
	t.Helper()
	ev := newEvents()
	if cfg.Interval == 0 {
		cfg.Interval = 10 * time.Millisecond
	}
	cfg.Events = ev.report
	sup, err := supervisor.New(g, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := sup.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sup.Close() })
	ev.sup = sup
	return ev
}

// recovered waits for the supervisor's first full recovery pass.
func (e *events) recovered(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a bound on a failing test, not a timing
	defer cancel()
	if err := e.sup.Recovered(ctx); err != nil {
		t.Fatalf("Recovered: %v", err)
	}
}

func TestNew(t *testing.T) {
	g := process(t, openStore(t, filepath.Join(t.TempDir(), "bk.db")), newWorld())
	for _, c := range []struct {
		name string
		g    *toolgate.Gate
		cfg  supervisor.Config
	}{
		{"no gate", nil, supervisor.Config{}},
		{"negative interval", g, supervisor.Config{Interval: -time.Millisecond}},
		{"negative recovery period", g, supervisor.Config{RecoverEvery: -time.Second}},
	} {
		if s, err := supervisor.New(c.g, c.cfg); !errors.Is(err, supervisor.ErrInvalidConfig) || s != nil {
			t.Errorf("%s: %v %v, want ErrInvalidConfig", c.name, s, err)
		}
	}
	if _, err := supervisor.New(g, supervisor.Config{RecoverEvery: time.Minute}); err != nil {
		t.Errorf("valid configuration: %v", err)
	}
	if _, err := supervisor.New(g, supervisor.Config{}); err != nil {
		t.Errorf("zero configuration: %v", err)
	}
	_, err := supervisor.New(g, supervisor.Config{Interval: -1, RecoverEvery: -1})
	if !errors.Is(err, supervisor.ErrInvalidConfig) || !strings.Contains(err.Error(), "Interval") || !strings.Contains(err.Error(), "RecoverEvery") {
		t.Errorf("New reports every problem: %v", err)
	}
}

// An approval is resumed as soon as it is decided: an approved action
// runs once, a denied one escalates to the fallback and does not run, one
// no one decided waits.
func TestResumesDecidedApprovals(t *testing.T) {
	w := newWorld()
	// A long lease: the first recovery pass after the start's comes too
	// late to execute these; only the looks at approvals do.
	g := processWithLease(t, openStore(t, filepath.Join(t.TempDir(), "bk.db")), w, time.Minute, nil)
	ev := start(t, g, supervisor.Config{RecoverEvery: time.Hour})
	ctx := context.Background()
	var ids []string
	for _, trace := range []string{"approve", "deny", "undecided"} {
		ground(t, g, trace, "A1")
		res := call(ctx, t, g, trace, "issue_refund", "A1", 700)
		if res.Outcome != audit.OutcomePendingApproval {
			t.Fatalf("%s: %+v, want pending", trace, res)
		}
		ids = append(ids, res.ActionID)
	}
	pending, err := g.Pending(ctx, "")
	if err != nil || len(pending) != 3 {
		t.Fatalf("Pending: %+v %v", pending, err)
	}
	alice := g.Approver("human:alice")
	for _, p := range pending {
		switch p.TraceID {
		case "approve":
			_, err = alice.Decide(ctx, audit.Approval{TraceID: p.TraceID, ActionID: p.ActionID, Digest: p.Digest, Decision: audit.Approved, Note: "ok"})
		case "deny":
			_, err = alice.Decide(ctx, audit.Approval{TraceID: p.TraceID, ActionID: p.ActionID, Digest: p.Digest, Decision: audit.Denied, Note: "no"})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	got := ev.wait(t, 2)
	if e := got[ids[0]]; e.Op != supervisor.OpResume || e.TraceID != "approve" || e.Result.Outcome != audit.OutcomeExecuted || w.count(ids[0]) != 1 {
		t.Errorf("approved: %+v, %d effects, want executed once", e, w.count(ids[0]))
	}
	if e := got[ids[1]]; e.Result.Code != reason.ApprovalDenied || e.Result.FallbackID == "" || w.count(ids[1]) != 0 {
		t.Errorf("denied: %+v, %d effects, want escalated with a fallback, no effect", e, w.count(ids[1]))
	}
	time.Sleep(50 * time.Millisecond) // a few more looks
	if _, ok := got[ids[2]]; ok || w.count(ids[2]) != 0 {
		t.Errorf("undecided action driven")
	}
	select {
	case e := <-ev.ch:
		t.Errorf("unexpected event %+v: finished work driven again", e)
	default:
	}
}

// A restarted process's supervisor finishes what the crash left, once the
// lease is over: an Idempotent effect is re-driven with its key, an email
// is not sent again but reported EFFECT_UNKNOWN, and an action committed
// but never started runs. A second restart finds everything finished and
// reports and runs nothing: the store remembers.
func TestRecoversAfterARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bk.db")
	w := newWorld()
	ctx := context.Background()
	dead := process(t, openStore(t, path), w)
	var crashed []toolgate.Result
	for i, tool := range []string{"issue_refund", "send_email"} {
		trace, order := fmt.Sprintf("t%d", i), fmt.Sprintf("O%d", i)
		ground(t, dead, trace, order)
		cctx, cancel := context.WithCancel(ctx)
		w.mu.Lock()
		w.crash[order] = cancel
		w.mu.Unlock()
		crashed = append(crashed, call(cctx, t, dead, trace, tool, order, 10))
	}
	// An approved action whose process died before it executed it.
	ground(t, dead, "t2", "O2")
	waiting := call(ctx, t, dead, "t2", "issue_refund", "O2", 700)
	p, err := dead.Pending(ctx, "t2")
	if err != nil || len(p) != 1 {
		t.Fatalf("Pending: %+v %v", p, err)
	}
	if _, err := dead.Approver("human:alice").Decide(ctx, audit.Approval{TraceID: "t2", ActionID: p[0].ActionID, Digest: p[0].Digest, Decision: audit.Approved, Note: "ok"}); err != nil {
		t.Fatal(err)
	}

	g := process(t, openStore(t, path), w)
	ev := start(t, g, supervisor.Config{RecoverEvery: time.Hour})
	got := ev.wait(t, 3)
	refund, email := crashed[0].ActionID, crashed[1].ActionID
	if e := got[refund]; e.Op != supervisor.OpRecover || e.Result.Code != reason.EffectSucceeded || w.count(refund) != 2 {
		t.Errorf("refund: %+v, %d starts, want re-driven once with its key", e, w.count(refund))
	}
	if e := got[email]; e.Result.Code != reason.EffectUnknown || e.TraceID != "t1" || w.count(email) != 1 {
		t.Errorf("email: %+v, sent %d times, want EFFECT_UNKNOWN, sent once", e, w.count(email))
	}
	if e := got[waiting.ActionID]; e.Result.Outcome != audit.OutcomeExecuted || w.count(waiting.ActionID) != 1 {
		t.Errorf("approved before the crash: %+v, want executed once", e)
	}

	again := start(t, process(t, openStore(t, path), w), supervisor.Config{})
	again.recovered(t)
	select {
	case e := <-again.ch:
		t.Errorf("a restart over finished work reported %+v", e)
	default:
	}
	for id, n := range map[string]int{refund: 2, email: 1, waiting.ActionID: 1} {
		if w.count(id) != n {
			t.Errorf("%s: %d starts after the second restart, want %d", id, w.count(id), n)
		}
	}
}

// Two supervisors in two processes over one store run each approved action
// and each crashed attempt once.
func TestTwoSupervisors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bk.db")
	w := newWorld()
	ctx := context.Background()
	a, b := process(t, openStore(t, path), w), process(t, openStore(t, path), w)
	const n = 8
	var ids []string
	for i := range n {
		trace, order := fmt.Sprintf("t%d", i), fmt.Sprintf("O%d", i)
		ground(t, a, trace, order)
		tool := "issue_refund"
		if i%2 == 1 {
			tool = "send_email"
		}
		if i < n/2 {
			ids = append(ids, call(ctx, t, a, trace, tool, order, 700).ActionID) // waits for approval
			continue
		}
		cctx, cancel := context.WithCancel(ctx)
		w.mu.Lock()
		w.crash[order] = cancel
		w.mu.Unlock()
		ids = append(ids, call(cctx, t, a, trace, tool, order, 10).ActionID) // crashes
	}
	evA, evB := start(t, a, supervisor.Config{}), start(t, b, supervisor.Config{})
	pending, err := a.Pending(ctx, "")
	if err != nil || len(pending) != n/2 {
		t.Fatalf("Pending: %+v %v", pending, err)
	}
	for _, p := range pending {
		if _, err := b.Approver("human:bob").Decide(ctx, audit.Approval{TraceID: p.TraceID, ActionID: p.ActionID, Digest: p.Digest, Decision: audit.Approved, Note: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	// Every action is reported by one supervisor or both.
	seen := map[string]supervisor.Event{}
	deadline := time.After(20 * time.Second)
	for len(seen) < n {
		select {
		case e := <-evA.ch:
			seen[e.ActionID] = e
		case e := <-evB.ch:
			seen[e.ActionID] = e
		case <-deadline:
			t.Fatalf("reported %d of %d: %+v", len(seen), n, seen)
		}
	}
	evA.recovered(t) // both have made a full recovery pass
	evB.recovered(t)
	for i, id := range ids {
		want := 1 // approved: run once
		if i >= n/2 && i%2 == 0 {
			want = 2 // a crashed refund: re-driven once, with its key
		}
		if got := w.count(id); got != want {
			t.Errorf("%s (%d): %d effects, want %d (%+v)", id, i, got, want, seen[id])
		}
	}
}

// A supervisor starts once: a second Start, or a Start after Close,
// returns ErrStarted; Close may be called any number of times, and before
// Start.
func TestStartOnce(t *testing.T) {
	g := process(t, openStore(t, filepath.Join(t.TempDir(), "bk.db")), newWorld())
	ctx := context.Background()
	sup, err := supervisor.New(g, supervisor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sup.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sup.Start(ctx); !errors.Is(err, supervisor.ErrStarted) {
		t.Errorf("second Start: %v, want ErrStarted", err)
	}
	for range 2 {
		if err := sup.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
	if err := sup.Start(ctx); !errors.Is(err, supervisor.ErrStarted) {
		t.Errorf("Start after Close: %v, want ErrStarted", err)
	}
	never, err := supervisor.New(g, supervisor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := never.Recovered(ctx); !errors.Is(err, supervisor.ErrNotRunning) {
		t.Errorf("Recovered before Start: %v, want ErrNotRunning", err)
	}
	if err := never.Close(); err != nil {
		t.Errorf("Close before Start: %v", err)
	}
	if err := never.Start(ctx); !errors.Is(err, supervisor.ErrStarted) {
		t.Errorf("Start after Close: %v, want ErrStarted", err)
	}
}

// An error does not stop the supervisor: it is reported, typed, and tried again.
func TestErrorsAreReported(t *testing.T) {
	// The test closes the store itself: openStore would check it after.
	s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "bk.db"))
	if err != nil {
		t.Fatal(err)
	}
	g := process(t, s, newWorld())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ev := start(t, g, supervisor.Config{})
	deadline := time.After(10 * time.Second)
	for _, want := range []supervisor.Op{supervisor.OpRecover, supervisor.OpResume, supervisor.OpResume} {
		for {
			var e supervisor.Event
			select {
			case e = <-ev.ch:
			case <-deadline:
				t.Fatalf("no error event wrapping %v", want)
			}
			if e.Err == nil || e.Op != want {
				continue
			}
			if errors.Unwrap(e.Err) == nil || !strings.HasPrefix(e.Err.Error(), "supervisor: ") {
				t.Errorf("event %+v: want the error of its stage, wrapping the cause", e)
			}
			break
		}
	}
}

// Wake resumes a decided approval at once, however long the interval.
func TestWake(t *testing.T) {
	w := newWorld()
	g := processWithLease(t, openStore(t, filepath.Join(t.TempDir(), "bk.db")), w, time.Minute, nil)
	ev := newEvents()
	sup, err := supervisor.New(g, supervisor.Config{Interval: time.Hour, Events: ev.report})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := sup.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer sup.Close()
	ground(t, g, "t", "A1")
	res := call(ctx, t, g, "t", "issue_refund", "A1", 700)
	p, err := g.Pending(ctx, "t")
	if err != nil || len(p) != 1 {
		t.Fatalf("Pending: %+v %v", p, err)
	}
	if _, err := g.Approver("human:alice").Decide(ctx, audit.Approval{TraceID: "t", ActionID: p[0].ActionID, Digest: p[0].Digest, Decision: audit.Approved, Note: "ok"}); err != nil {
		t.Fatal(err)
	}
	sup.Wake()
	sup.Wake() // folds into the first
	select {
	case e := <-ev.ch:
		if e.ActionID != res.ActionID || e.Op != supervisor.OpResume || e.Result.Outcome != audit.OutcomeExecuted || w.count(res.ActionID) != 1 {
			t.Errorf("event %+v, %d effects, want the refund executed once", e, w.count(res.ActionID))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wake did not resume the approval")
	}
}

// An approved action of a caller-driven tool (no effect registered) is the
// caller's to run: the supervisor's looks neither run it nor report it as
// a failure on every pass, and the caller's retry under its key runs it
// once.
func TestLeavesCallerDrivenToTheCaller(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, filepath.Join(t.TempDir(), "bk.db"))
	pay := json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"},"amount":{"type":"number"}},"required":["order_id","amount"]}`)
	g, err := toolgate.New(ctx, toolgate.Config{
		Kernel: kernel.Config{
			Store:       s,
			BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}},
		},
		Tools: []toolgate.Tool{{Unscoped: true, Name: "lookup_order", Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`),
			Result: "order", Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"order_id": inv.Args["order_id"], "amount": 900.0}, nil
			}}, {Unscoped: true, Name: "issue_refund", Parameters: pay, Requires: []string{"refund_due"}, Result: "refund", Idempotent: true,
			Bindings: []toolgate.Binding{{Arg: "order_id", Percept: "order", Op: "equal"}},
			Approval: "true"}},
		Lease:     time.Minute,
		Contracts: map[string][]string{"support": {"lookup_order", "issue_refund"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ground(t, g, "T", "A1")
	runs := 0
	effect := func(context.Context, toolgate.Invocation) (blackboard.Payload, error) {
		runs++
		return blackboard.Payload{"refunded": true}, nil
	}
	c := toolgate.Call{Tool: "issue_refund", Args: json.RawMessage(`{"order_id":"A1","amount":700}`), Caller: "support", TraceID: "T",
		RetryKey: "call-1", Effect: effect}
	res, err := g.Call(ctx, c)
	if err != nil || res.Outcome != audit.OutcomePendingApproval {
		t.Fatalf("call: %+v %v", res, err)
	}
	if _, err := g.Approver("human:alice").Decide(ctx, audit.Approval{TraceID: "T", ActionID: res.ActionID, Digest: res.ArgsDigest, Decision: audit.Approved, Note: "ok"}); err != nil {
		t.Fatal(err)
	}
	ev := start(t, g, supervisor.Config{RecoverEvery: time.Hour})
	time.Sleep(150 * time.Millisecond) // many looks at the interval
	ev.mu.Lock()
	seen := len(ev.all)
	ev.mu.Unlock()
	if seen != 0 || runs != 0 {
		t.Fatalf("the supervisor reported %d events and ran the effect %d times; want none: it is the caller's", seen, runs)
	}
	res, err = g.Call(ctx, c) // the caller comes back under its key, with the effect
	if err != nil || res.Outcome != audit.OutcomeExecuted || runs != 1 {
		t.Fatalf("retry: %+v %v, %d runs; want executed once", res, err, runs)
	}
}

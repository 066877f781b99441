package orchestrator_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/orchestrator"
	"github.com/blackboardkernel/bk/reason"
)

// sleeps records the waits the orchestrator asked for and returns at
// once.
type sleeps struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waits = append(s.waits, d)
	return ctx.Err()
}

func (s *sleeps) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

// calls records which worker stepped with which step context.
type calls struct {
	mu  sync.Mutex
	log []string
	scs []*orchestrator.StepContext
}

func (c *calls) add(id string, sc *orchestrator.StepContext) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = append(c.log, fmt.Sprintf("%s#%d", id, sc.Attempt()))
	c.scs = append(c.scs, sc)
}

// crew is a coder that fails as told on its first attempt and writes its
// patch on the next one, with the helpers the router can send for: a
// researcher, an identity worker and an alternate coder. Helpers run only
// when sent for.
type crew struct {
	k       *kernel.Kernel
	calls   *calls
	workers []*fake
}

func newCrew(t *testing.T, fail func(attempt int) error) *crew {
	k := newKernel(t)
	c := &crew{k: k, calls: &calls{}}
	tool := k.Handle(blackboard.RoleTool, "coder")
	patched := func(v kernel.View) bool { return v.Has(blackboard.Percepts, "patch") }
	write := func(ctx context.Context, tr, by string) error {
		_, err := tool.Write(ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Percepts, Kind: "patch", Payload: blackboard.Payload{"by": by}})
		return err
	}
	coder := func(id string) *fake {
		return &fake{id: id, h: tool, writes: []blackboard.Slot{blackboard.Percepts},
			activate: func(v kernel.View) bool { return id == "coder" && !patched(v) },
			step: func(ctx context.Context, sc *orchestrator.StepContext) (bool, error) {
				tr := sc.TraceID()
				c.calls.add(id, sc)
				if err := fail(sc.Attempt()); err != nil && id == "coder" {
					return false, err
				}
				return true, write(ctx, tr, id)
			}}
	}
	helper := func(id string) *fake {
		return &fake{id: id, h: k.Handle(blackboard.RoleTool, id), activate: func(kernel.View) bool { return false },
			step: func(ctx context.Context, sc *orchestrator.StepContext) (bool, error) {
				c.calls.add(id, sc)
				return false, nil
			}}
	}
	c.workers = []*fake{coder("coder"), helper("researcher"), helper("identity"), coder("coder-b")}
	return c
}

func (c *crew) orch(t *testing.T, opts ...orchestrator.Option) *orchestrator.Orchestrator {
	t.Helper()
	o := newOrch(t, append([]orchestrator.Option{orchestrator.WithKernel(c.k)}, opts...)...)
	for _, w := range c.workers {
		if err := o.Register(w); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

var coderLane = orchestrator.Lane{Worker: "coder", Helpers: map[failure.Route]string{
	failure.RouteSlowLoop: "researcher", failure.RouteReauth: "identity", failure.RouteFailover: "coder-b"}}

// decisions lists the decision records of a trace with kind.
func decisions(t *testing.T, k *kernel.Kernel, trace, kind string) []audit.Entry {
	t.Helper()
	var out []audit.Entry
	for d, err := range audit.List(context.Background(), k.Reader(), audit.Query{TraceID: trace, Kind: kind}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

func TestRepairRoutes(t *testing.T) {
	for _, tc := range []struct {
		status  failure.ExecStatus
		route   failure.Route
		log     string // the steps of the coder's turn
		wait    time.Duration
		outcome orchestrator.End
	}{
		{failure.StatusSyntax, failure.RouteFastLoop, "coder#1 coder#2", 0, orchestrator.EndQuiescent},
		{failure.StatusFunctionMismatch, failure.RouteFastLoop, "coder#1 coder#2", 0, orchestrator.EndQuiescent},
		{failure.StatusFormat, failure.RouteFastLoop, "coder#1 coder#2", 0, orchestrator.EndQuiescent},
		{failure.StatusEndpointUnknown, failure.RouteSlowLoop, "coder#1 researcher#1 coder#2", 0, orchestrator.EndQuiescent},
		{failure.StatusNotFound, failure.RouteSlowLoop, "coder#1 researcher#1 coder#2", 0, orchestrator.EndQuiescent},
		{failure.StatusAuthExpired, failure.RouteReauth, "coder#1 identity#1 coder#2", 0, orchestrator.EndQuiescent},
		{failure.StatusRateLimited, failure.RouteBackoff, "coder#1 coder#2", time.Second, orchestrator.EndQuiescent},
		// 500ms jittered with u = 0.5: 250ms + 0.5 × 250ms.
		{failure.StatusNetwork, failure.RouteRetryJitter, "coder#1 coder#2", 375 * time.Millisecond, orchestrator.EndQuiescent},
		{failure.StatusProviderDown, failure.RouteFailover, "coder#1 coder-b#2", 0, orchestrator.EndQuiescent},
		{failure.StatusDuplicate, failure.RouteAbort, "coder#1", 0, orchestrator.EndAborted},
		{failure.StatusUnknown, failure.RouteEscalate, "coder#1", 0, orchestrator.EndEscalated},
	} {
		t.Run(string(tc.status), func(t *testing.T) {
			f := failure.New(tc.status, "step failed")
			c := newCrew(t, func(attempt int) error {
				if attempt == 1 {
					return fmt.Errorf("coder: %w", f)
				}
				return nil
			})
			s := &sleeps{}
			o := c.orch(t, orchestrator.WithRepair(3), orchestrator.WithLane(coderLane),
				orchestrator.WithWait(s.sleep, func() float64 { return 0.5 }))
			res, err := o.Run(context.Background(), "t")
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(c.calls.log, " "); got != tc.log {
				t.Errorf("steps %q, want %q", got, tc.log)
			}
			if res.End != tc.outcome || len(res.Repairs) != 1 {
				t.Fatalf("outcome %s, repairs %+v", res.End, res.Repairs)
			}
			r := res.Repairs[0]
			if r.Remedy.Route != tc.route || r.Failure.Status() != tc.status || r.Wait != tc.wait || r.Attempt != 1 || r.WorkerID != "coder" {
				t.Errorf("repair %+v", r)
			}
			if tc.wait > 0 {
				if got := s.got(); len(got) != 1 || got[0] != tc.wait {
					t.Errorf("waits %v, want [%v]", got, tc.wait)
				}
			}
			// The retry, or the helper, has the failure in hand.
			if len(c.calls.scs) > 1 {
				rep, ok := c.calls.scs[1].Repair()
				if !ok || rep.Failure.Status() != tc.status || rep.WorkerID != "coder" {
					t.Errorf("second step's repair %+v %v", rep, ok)
				}
			}
			// The decision is on the blackboard.
			recs := decisions(t, c.k, "t", "worker:coder")
			if len(recs) != 1 || recs[0].ID != r.DecisionID || recs[0].Code != reason.Code(tc.status) ||
				recs[0].Context["route"] != string(tc.route) || recs[0].Detail != r.Remedy.Reason {
				t.Errorf("decision records %+v", recs)
			}
			if _, ok := recs[0].Context["functional_state"].(map[string]any); !ok {
				t.Errorf("no functional state in %+v", recs[0].Context)
			}
			switch tc.outcome {
			case orchestrator.EndEscalated:
				st := res.Stop
				if st == nil || st.ReviewID == "" || st.DecisionID != r.DecisionID {
					t.Fatalf("stop %+v", st)
				}
				review, err := c.k.Handle(blackboard.RoleTool, "x").Get(context.Background(), st.ReviewID)
				if err != nil || review.Kind != kernel.FallbackQueueForReview || review.Payload["reason"] != string(tc.status) {
					t.Errorf("review action %+v %v", review, err)
				}
			case orchestrator.EndAborted:
				if st := res.Stop; st == nil || res.Repairs[len(res.Repairs)-1].Remedy.Route != failure.RouteAbort || st.ReviewID != "" {
					t.Errorf("stop %+v", st)
				}
			default:
				if res.Stop != nil || !res.View.Has(blackboard.Percepts, "patch") {
					t.Errorf("stop %+v, patched %v", res.Stop, res.View.Has(blackboard.Percepts, "patch"))
				}
			}
		})
	}
}

func TestRepairAttemptsRunOut(t *testing.T) {
	c := newCrew(t, func(int) error { return failure.New(failure.StatusSyntax, "unexpected indent") })
	o := c.orch(t, orchestrator.WithRepair(3))
	res, err := o.Run(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.calls.log, " "); got != "coder#1 coder#2 coder#3" {
		t.Errorf("steps %q", got)
	}
	var routes []failure.Route
	for _, r := range res.Repairs {
		routes = append(routes, r.Remedy.Route)
	}
	if fmt.Sprint(routes) != "[fast_loop fast_loop abort]" || res.End != orchestrator.EndAborted {
		t.Errorf("routes %v outcome %s", routes, res.End)
	}
	if len(res.Steps) != 3 || res.Steps[2].Attempt != 3 || len(res.Errors) != 3 {
		t.Errorf("steps %+v errors %d", res.Steps, len(res.Errors))
	}
	// Not retryable: stopped at once.
	c = newCrew(t, func(int) error { return failure.New(failure.StatusSyntax, "x").WithRetryable(false) })
	res, _ = c.orch(t, orchestrator.WithRepair(3)).Run(context.Background(), "t")
	if len(res.Repairs) != 1 || res.Repairs[0].Remedy.Route != failure.RouteAbort {
		t.Errorf("repairs %+v", res.Repairs)
	}
}

func TestRepairWithoutItsWorker(t *testing.T) {
	for status, want := range map[failure.ExecStatus]failure.Route{
		failure.StatusNotFound:     failure.RouteEscalate,
		failure.StatusAuthDenied:   failure.RouteEscalate,
		failure.StatusProviderDown: failure.RouteAbort,
	} {
		c := newCrew(t, func(int) error { return failure.New(status, "x") })
		res, err := c.orch(t, orchestrator.WithRepair(3), orchestrator.WithLane(orchestrator.Lane{Worker: "coder", Helpers: map[failure.Route]string{failure.RouteSlowLoop: "nobody"}})).
			Run(context.Background(), "t")
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Repairs) != 1 || res.Repairs[0].Remedy.Route != want || res.Repairs[0].Remedy.Retry ||
			!strings.Contains(res.Repairs[0].Remedy.Reason, "worker") {
			t.Errorf("%s: repairs %+v", status, res.Repairs)
		}
	}
}

func TestRepairUntypedErrors(t *testing.T) {
	// An error nobody typed: the legacy matcher reads it, and what it
	// cannot read goes to a person.
	c := newCrew(t, func(int) error { return errors.New("the flux capacitor is misaligned") })
	res, _ := c.orch(t, orchestrator.WithRepair(3)).Run(context.Background(), "t")
	if len(res.Repairs) != 1 || !res.Repairs[0].Failure.Legacy() || res.End != orchestrator.EndEscalated {
		t.Errorf("repairs %+v outcome %s", res.Repairs, res.End)
	}
	// A panic too.
	k := newKernel(t)
	w := &fake{id: "p", h: k.Handle(blackboard.RoleTool, "p"), step: func(context.Context, *orchestrator.StepContext) (bool, error) { panic("boom") }}
	o := newOrch(t, orchestrator.WithRepair(3), orchestrator.WithKernel(k))
	if err := o.Register(w); err != nil {
		t.Fatal(err)
	}
	res, err := o.Run(context.Background(), "t")
	if err != nil || res.End != orchestrator.EndEscalated || !errors.Is(res.Errors[0], orchestrator.ErrPanic) {
		t.Errorf("%v %s %v", err, res.End, res.Errors)
	}
}

// Without the router, failures are recorded and the run goes on, as
// before.
func TestRouterOff(t *testing.T) {
	c := newCrew(t, func(attempt int) error { return failure.New(failure.StatusSyntax, "x") })
	res, err := c.orch(t, orchestrator.WithBudget(budget.Limits{Rounds: 10})).Run(context.Background(), "t")
	if err != nil || len(res.Repairs) != 0 || len(res.Errors) != 1 || res.End != orchestrator.EndQuiescent {
		t.Errorf("%v repairs %d errors %d outcome %s", err, len(res.Repairs), len(res.Errors), res.End)
	}
}

func TestBackoffStopsWhenTheContextIsCancelled(t *testing.T) {
	c := newCrew(t, func(int) error { return failure.New(failure.StatusRateLimited, "slow down") })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waiting, waited := make(chan time.Duration, 1), make(chan struct{})
	// A timer that never fires: only the context can end the wait.
	sleep := func(ctx context.Context, d time.Duration) error {
		defer close(waited)
		waiting <- d
		<-ctx.Done()
		return ctx.Err()
	}
	o := c.orch(t, orchestrator.WithRepair(3), orchestrator.WithWait(sleep, nil))
	done := make(chan error, 1)
	var res orchestrator.Summary
	go func() {
		var err error
		res, err = o.Run(ctx, "t")
		done <- err
	}()
	if d := <-waiting; d != time.Second {
		t.Errorf("backoff %v, want 1s", d)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	<-waited // the wait ended
	if got := strings.Join(c.calls.log, " "); got != "coder#1" || res.End != "" {
		t.Errorf("steps %q outcome %q: nothing may run after the cancelled wait", got, res.End)
	}
}

// sink is a worker that writes a new percept every step.
func sink(k *kernel.Kernel, id string, step func(ctx context.Context, sc *orchestrator.StepContext) error) *fake {
	tool := k.Handle(blackboard.RoleTool, id)
	n := 0
	return &fake{id: id, h: tool, writes: []blackboard.Slot{blackboard.Percepts},
		step: func(ctx context.Context, sc *orchestrator.StepContext) (bool, error) {
			tr := sc.TraceID()
			if step != nil {
				if err := step(ctx, sc); err != nil {
					return false, err
				}
			}
			n++
			_, err := tool.Write(ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Percepts, Kind: id, Payload: blackboard.Payload{"n": n}})
			return true, err
		}}
}

func TestRoundBudget(t *testing.T) {
	k := newKernel(t)
	o := newOrch(t, orchestrator.WithBudget(budget.Limits{Rounds: 3}), orchestrator.WithKernel(k))
	if err := o.Register(sink(k, "w", nil)); err != nil {
		t.Fatal(err)
	}
	res, err := o.Run(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	st := res.Stop
	if res.End != orchestrator.EndBudgetExceeded || res.Rounds != 3 || st == nil || st.Reason.Resource != budget.Rounds || st.Round != 4 {
		t.Fatalf("outcome %s rounds %d stop %+v", res.End, res.Rounds, st)
	}
	recs := decisions(t, k, "t", "round")
	if len(recs) != 1 || recs[0].Code != reason.BudgetExceeded || recs[0].ID != st.DecisionID || recs[0].Outcome != audit.OutcomeRefused {
		t.Errorf("records %+v", recs)
	}
	if len(res.States) != 3 {
		t.Errorf("%d states, want one per round", len(res.States))
	}
}

func TestLaneBudgetStopsTheRun(t *testing.T) {
	k := newKernel(t)
	var lane, other *budget.Run
	w := sink(k, "w", func(_ context.Context, sc *orchestrator.StepContext) error {
		lane = sc.Budget()
		return lane.Allow(budget.ToolCalls, 1)
	})
	o := newOrch(t, orchestrator.WithBudget(budget.Limits{ToolCalls: 10}), orchestrator.WithKernel(k),
		orchestrator.WithLane(orchestrator.Lane{Worker: "w", Budget: budget.Limits{ToolCalls: 2}}),
		orchestrator.WithLane(orchestrator.Lane{Worker: "v", Budget: budget.Limits{ToolCalls: 5}}))
	v := sink(k, "v", func(_ context.Context, sc *orchestrator.StepContext) error {
		other = sc.Budget()
		return nil
	})
	if err := o.Register(w, v); err != nil {
		t.Fatal(err)
	}
	res, err := o.Run(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	st := res.Stop
	if res.End != orchestrator.EndBudgetExceeded || st == nil || st.WorkerID != "w" || st.Reason.Resource != budget.ToolCalls ||
		st.Reason.Run != "t/w" || st.Round != 3 {
		t.Fatalf("outcome %s stop %+v", res.End, st)
	}
	if st.State.Budget != 1 || st.State.Round != 3 {
		t.Errorf("state at the stop %+v, want the lane's spent budget as pressure", st.State)
	}
	// Isolation: each lane has its own sub-run; both draw on the run.
	ls, os := lane.Snapshot(), other.Snapshot()
	if lane == other || ls.RunID != "t/w" || os.RunID != "t/v" || ls.Parent == nil || ls.Parent.Used[budget.ToolCalls] != 2 || os.Used[budget.ToolCalls] != 0 {
		t.Errorf("lanes %s %s parent %+v", ls.RunID, os.RunID, ls.Parent)
	}
	recs := decisions(t, k, "t", "worker:w")
	if len(recs) != 1 || recs[0].Code != reason.BudgetExceeded {
		t.Fatalf("records %+v", recs)
	}
	if snap, _ := recs[0].Context["budget"].(map[string]any); snap["run_id"] != "t/w" {
		t.Errorf("snapshot %+v", recs[0].Context["budget"])
	}
}

func TestNoProgressStopsTheLoop(t *testing.T) {
	k := newKernel(t)
	idle := &fake{id: "idle", h: k.Handle(blackboard.RoleTool, "idle"), step: func(context.Context, *orchestrator.StepContext) (bool, error) { return true, nil }}
	o := newOrch(t, orchestrator.WithLoopGuard(0, 0), orchestrator.WithKernel(k))
	if err := o.Register(idle); err != nil {
		t.Fatal(err)
	}
	res, err := o.Run(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if res.End != orchestrator.EndLoopDetected || res.Rounds != 2 || res.Stop.Reason.Loop != budget.NoProgress {
		t.Fatalf("outcome %s rounds %d stop %+v", res.End, res.Rounds, res.Stop)
	}
	// The second state saw the first idle round.
	if len(res.States) != 2 || res.States[0].Loop != 0 || res.States[1].Loop != 0.5 {
		t.Errorf("states %+v", res.States)
	}
	if recs := decisions(t, k, "t", "round"); len(recs) != 1 || recs[0].Code != reason.LoopDetected {
		t.Errorf("records %+v", recs)
	}
	// A worker that writes each round makes progress.
	o = newOrch(t, orchestrator.WithLoopGuard(0, 0), orchestrator.WithMaxRounds(4), orchestrator.WithKernel(k))
	if err := o.Register(sink(k, "w", nil)); err != nil {
		t.Fatal(err)
	}
	if res, _ := o.Run(context.Background(), "u"); res.End != orchestrator.EndRoundLimit {
		t.Errorf("outcome %s, want the round limit", res.End)
	}
}

func TestFunctionalStateIsVisibleAndRecorded(t *testing.T) {
	k := newKernel(t)
	var seen []budget.State
	w := sink(k, "w", func(_ context.Context, sc *orchestrator.StepContext) error {
		s, ok := sc.State()
		if !ok {
			return errors.New("no state")
		}
		seen = append(seen, s)
		return nil
	})
	o := newOrch(t, orchestrator.WithBudget(budget.Limits{Rounds: 5, Soft: 0.5}), orchestrator.WithMaxRounds(5), orchestrator.WithKernel(k))
	if err := o.Register(w); err != nil {
		t.Fatal(err)
	}
	res, err := o.Run(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.States) != 5 || len(seen) != 5 {
		t.Fatalf("%d states, %d seen", len(res.States), len(seen))
	}
	for i, s := range res.States {
		if s != seen[i] || s.Round != int64(i+1) {
			t.Errorf("round %d: recorded %+v, seen %+v", i+1, s, seen[i])
		}
	}
	// Rounds used 1..5 of 5 with a soft threshold of half: pressure 0,
	// 0, 0.2, 0.6, 1.
	for i, want := range []float64{0, 0, 0.2, 0.6, 1} {
		if got := res.States[i].Budget; got < want-1e-9 || got > want+1e-9 {
			t.Errorf("round %d budget pressure %v, want %v", i+1, got, want)
		}
	}
}

func TestLeaseTrajectoryInTheStep(t *testing.T) {
	k := newKernel(t)
	w := sink(k, "w", func(_ context.Context, sc *orchestrator.StepContext) error {
		l := sc.Grant()
		if l.Turns() != 3 {
			return fmt.Errorf("grant of %d turns", l.Turns())
		}
		l.Turn("lint", failure.New(failure.StatusSyntax, "bad indent"))
		l.Turn("run_tests", nil)
		return nil
	})
	o := newOrch(t, orchestrator.WithLane(orchestrator.Lane{Worker: "w", Turns: 3}), orchestrator.WithMaxRounds(1), orchestrator.WithKernel(k))
	if err := o.Register(w); err != nil {
		t.Fatal(err)
	}
	res, err := o.Run(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Steps[0]; s.Trajectory != "T1(lint) × code_syntax → T2(run_tests) ✓" || s.GrantEnd != failure.GrantEnd("") {
		t.Errorf("step %+v", s)
	}
}

// research writes a percept and reports a finding resting on it; assertion
// lets a test break the finding.
func research(k *kernel.Kernel, assertion func(attempt int, evidence string) []orchestrator.Assertion) *fake {
	tool := k.Handle(blackboard.RoleTool, "researcher")
	return &fake{id: "researcher", h: tool, writes: []blackboard.Slot{blackboard.Percepts},
		activate: func(v kernel.View) bool { return !v.Has(blackboard.Percepts, "spec") },
		step: func(ctx context.Context, sc *orchestrator.StepContext) (bool, error) {
			tr := sc.TraceID()
			rec, err := tool.Write(ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Percepts, Kind: "spec",
				Payload: blackboard.Payload{"endpoint": "/v2/patients"}})
			if err != nil {
				return false, err
			}
			sc.Report(orchestrator.Finding{Assertions: assertion(sc.Attempt(), rec)})
			return true, nil
		}}
}

func TestFindingContract(t *testing.T) {
	contract := &orchestrator.FindingContract{Require: []string{"endpoint"}, MinConfidence: 0.7, Evidence: true}
	good := func(ev string) orchestrator.Assertion {
		return orchestrator.Assertion{Kind: "endpoint", Value: "/v2/patients", Evidence: []string{ev}, Confidence: 0.9}
	}
	for _, tc := range []struct {
		name string
		bad  func(ev string) []orchestrator.Assertion
		code reason.Code
	}{
		{"missing assertion", func(ev string) []orchestrator.Assertion {
			return []orchestrator.Assertion{{Kind: "auth", Evidence: []string{ev}, Confidence: 1}}
		},
			reason.FindingMissingAssertion},
		{"low confidence", func(ev string) []orchestrator.Assertion {
			c := good(ev)
			c.Confidence = 0.4
			return []orchestrator.Assertion{c}
		}, reason.FindingLowConfidence},
		{"no assertions", func(string) []orchestrator.Assertion { return nil }, reason.FindingMissingAssertion},
		{"evidence cited nowhere", func(string) []orchestrator.Assertion {
			c := good("x")
			c.Evidence = nil
			return []orchestrator.Assertion{c}
		}, reason.FindingNoEvidence},
		{"hallucinated evidence", func(string) []orchestrator.Assertion { return []orchestrator.Assertion{good("percepts:t:99")} },
			reason.FindingUnresolvedEvidence},
		{"confidence out of range", func(ev string) []orchestrator.Assertion {
			c := good(ev)
			c.Confidence = 1.5
			return []orchestrator.Assertion{c}
		}, reason.FindingInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newKernel(t)
			r := research(k, func(attempt int, ev string) []orchestrator.Assertion {
				if attempt == 1 {
					return tc.bad(ev)
				}
				return []orchestrator.Assertion{good(ev)}
			})
			var seen []orchestrator.Finding
			coder := sink(k, "coder", func(_ context.Context, sc *orchestrator.StepContext) error {
				seen = sc.Findings()
				return nil
			})
			coder.reads, coder.activate = []blackboard.Slot{blackboard.Percepts}, func(v kernel.View) bool { return !v.Has(blackboard.Percepts, "coder") }
			o := newOrch(t, orchestrator.WithRepair(3), orchestrator.WithLane(orchestrator.Lane{Worker: "researcher", Contract: contract}), orchestrator.WithKernel(k))
			if err := o.Register(r, coder); err != nil {
				t.Fatal(err)
			}
			res, err := o.Run(context.Background(), "t")
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Errors) != 1 || !errors.Is(res.Errors[0], orchestrator.ErrFindingRefused) || res.Errors[0].Code != tc.code || res.Errors[0].Phase != orchestrator.PhaseFinding {
				t.Fatalf("errors %v, want a %s refusal", res.Errors, tc.code)
			}
			// The refusal is the researcher's own format error: it gets the
			// fast loop, with the refusal in hand, and its second finding
			// passes.
			if len(res.Repairs) != 1 || res.Repairs[0].Remedy.Route != failure.RouteFastLoop ||
				res.Repairs[0].Failure.Category() != failure.Category("format_error") {
				t.Errorf("repairs %+v", res.Repairs)
			}
			if len(res.Findings) != 1 || res.Findings[0].WorkerID != "researcher" {
				t.Fatalf("findings %+v", res.Findings)
			}
			if c := res.Findings[0].Assertions; len(c) != 1 || c[0].Kind != "endpoint" || c[0].Value != "/v2/patients" {
				t.Errorf("assertion %+v", c)
			}
			if len(seen) != 1 || seen[0].Assertions[0].Kind != "endpoint" {
				t.Errorf("the coder saw %+v", seen)
			}
		})
	}
}

func TestFindingReportsAFailure(t *testing.T) {
	k := newKernel(t)
	n := 0
	w := &fake{id: "executor", h: k.Handle(blackboard.RoleTool, "executor"), activate: func(kernel.View) bool { return n == 0 },
		step: func(ctx context.Context, sc *orchestrator.StepContext) (bool, error) {
			sc.Report(orchestrator.Finding{Failures: []failure.Failure{failure.New(failure.StatusIncompleteFetch, "2 of 5 patients failed")}})
			n++
			return false, nil
		}}
	o := newOrch(t, orchestrator.WithRepair(3), orchestrator.WithKernel(k))
	if err := o.Register(w); err != nil {
		t.Fatal(err)
	}
	res, err := o.Run(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Repairs) != 1 || res.Repairs[0].Failure.Status() != failure.StatusIncompleteFetch ||
		res.Repairs[0].Remedy.Route != failure.RouteEscalate || len(res.Findings) != 0 {
		t.Errorf("repairs %+v findings %+v", res.Repairs, res.Findings)
	}
}

func TestRuntimeOptions(t *testing.T) {
	for name, opt := range map[string]orchestrator.Option{
		"budget limiting nothing": orchestrator.WithBudget(budget.Limits{}),
		"negative budget":         orchestrator.WithBudget(budget.Limits{Rounds: -1}),
		"bad guard":               orchestrator.WithLoopGuard(0, -1),
		"negative attempts":       orchestrator.WithRepair(-1),
		"negative grant":          orchestrator.WithLane(orchestrator.Lane{Worker: "w", Turns: -1}),
		"lane without a worker":   orchestrator.WithLane(orchestrator.Lane{}),
		"helper for a bad route":  orchestrator.WithLane(orchestrator.Lane{Worker: "w", Helpers: map[failure.Route]string{failure.RouteBackoff: "x"}}),
		"bad lane budget":         orchestrator.WithLane(orchestrator.Lane{Worker: "w", Budget: budget.Limits{ToolCalls: -1}}),
		"risk out of range":       orchestrator.WithRisk(2),
	} {
		if _, err := orchestrator.New(opt); !errors.Is(err, orchestrator.ErrInvalidOption) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := orchestrator.New(orchestrator.WithRepair(0)); err != nil {
		t.Errorf("WithRepair(0): %v", err)
	}
}

// TestRuntimeNeedsAKernel: a run whose runtime would record decisions
// (a stop, a repair) and has no kernel to record them with is refused
// before anything runs; the kernel may come with New or with the run.
func TestRuntimeNeedsAKernel(t *testing.T) {
	k := newKernel(t)
	for name, opt := range map[string]orchestrator.Option{
		"budget":     orchestrator.WithBudget(budget.Limits{Rounds: 3}),
		"loop guard": orchestrator.WithLoopGuard(0, 0),
		"repair":     orchestrator.WithRepair(3),
		"lane":       orchestrator.WithLane(orchestrator.Lane{Worker: "w", Turns: 2}),
	} {
		t.Run(name, func(t *testing.T) {
			ran := 0
			w := &fake{id: "w", h: k.Handle(blackboard.RoleTool, "w"), step: func(context.Context, *orchestrator.StepContext) (bool, error) {
				ran++
				return false, nil
			}}
			o := newOrch(t, opt)
			if err := o.Register(w); err != nil {
				t.Fatal(err)
			}
			if _, err := o.Run(context.Background(), "t"); !errors.Is(err, orchestrator.ErrInvalidOption) || ran != 0 {
				t.Fatalf("Run without a kernel: err %v, %d steps; want ErrInvalidOption and none", err, ran)
			}
			res, err := o.Run(context.Background(), "t", orchestrator.WithKernel(k))
			if err != nil || ran != 1 || res.End != orchestrator.EndQuiescent {
				t.Fatalf("Run with the run's kernel: err %v, %d steps, outcome %q", err, ran, res.End)
			}
			o = newOrch(t, opt, orchestrator.WithKernel(k))
			if err := o.Register(w); err != nil {
				t.Fatal(err)
			}
			if _, err := o.Run(context.Background(), "t2"); err != nil || ran != 2 {
				t.Fatalf("Run with New's kernel: err %v, %d steps", err, ran)
			}
		})
	}
}

// TestStepContextIsTheArgument: every step, in a plain run too, gets its
// step context as an argument: the trace, the view taken after the
// previous step, the round and attempt; a plain run grants no budget and
// no grant, a run with a runtime grants both.
func TestStepContextIsTheArgument(t *testing.T) {
	k := newKernel(t)
	sensor, _ := sensorAndAnalyst(k)
	var got []*orchestrator.StepContext
	reader := &fake{id: "reader", h: k.Handle(blackboard.RoleTool, "reader"), reads: []blackboard.Slot{blackboard.Percepts},
		activate: func(v kernel.View) bool { return len(got) == 0 },
		step: func(_ context.Context, sc *orchestrator.StepContext) (bool, error) {
			got = append(got, sc)
			return false, nil
		}}
	o := newOrch(t, orchestrator.WithMaxRounds(1))
	if err := o.Register(reader, sensor); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Run(context.Background(), "plain"); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d steps of the reader", len(got))
	}
	sc := got[0]
	if sc.TraceID() != "plain" || sc.WorkerID() != "reader" || sc.Round() != 1 || sc.Attempt() != 1 {
		t.Errorf("step context: trace %q worker %q round %d attempt %d", sc.TraceID(), sc.WorkerID(), sc.Round(), sc.Attempt())
	}
	if !sc.View().Has(blackboard.Percepts, "temperature") {
		t.Error("the reader's view lacks the percept the sensor wrote before it in the round")
	}
	if sc.Budget() != nil || sc.Grant() != nil || sc.Guard() != nil {
		t.Error("a plain run granted a budget, a guard or a grant")
	}

	got = nil
	o = newOrch(t, orchestrator.WithKernel(k), orchestrator.WithBudget(budget.Limits{ToolCalls: 5}),
		orchestrator.WithLane(orchestrator.Lane{Worker: "reader", Turns: 2}))
	if err := o.Register(reader); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Run(context.Background(), "governed"); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Budget() == nil || got[0].Grant() == nil || got[0].Grant().Turns() != 2 {
		t.Fatalf("a governed step was not granted its lane's budget and grant: %+v", got)
	}
}

// TestNewStepContext: a step driven outside a run sees its trace and view
// and is granted nothing.
func TestNewStepContext(t *testing.T) {
	v := kernel.View{TraceID: "t"}
	sc := orchestrator.NewStepContext("t", v)
	if sc.TraceID() != "t" || sc.View().TraceID != "t" || sc.Round() != 1 || sc.Attempt() != 1 || sc.WorkerID() != "" {
		t.Errorf("step context %q %q %d %d", sc.TraceID(), sc.WorkerID(), sc.Round(), sc.Attempt())
	}
	if sc.Budget() != nil || sc.Grant() != nil || sc.Guard() != nil || len(sc.Findings()) != 0 {
		t.Error("a step outside a run was granted something")
	}
	if _, ok := sc.State(); ok {
		t.Error("a step outside a run has a functional state")
	}
	if _, ok := sc.Repair(); ok {
		t.Error("a step outside a run has a repair")
	}
}

// TestPlainRunKeepsFindings: a finding reported in a run without a
// runtime is checked against the zero contract and kept.
func TestPlainRunKeepsFindings(t *testing.T) {
	k := newKernel(t)
	tool := k.Handle(blackboard.RoleTool, "researcher")
	w := &fake{id: "researcher", h: tool, activate: func(v kernel.View) bool { return !v.Has(blackboard.Percepts, "spec") },
		step: func(ctx context.Context, sc *orchestrator.StepContext) (bool, error) {
			rec, err := tool.Write(ctx, kernel.Entry{TraceID: sc.TraceID(), Slot: blackboard.Percepts, Kind: "spec", Payload: blackboard.Payload{"n": 1}})
			if err != nil {
				return false, err
			}
			sc.Report(orchestrator.Finding{Assertions: []orchestrator.Assertion{{Kind: "spec", Evidence: []string{rec}, Confidence: 0.9}}})
			return true, nil
		}}
	o := newOrch(t)
	if err := o.Register(w); err != nil {
		t.Fatal(err)
	}
	res, err := o.Run(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Findings) != 1 || res.Findings[0].WorkerID != "researcher" {
		t.Fatalf("findings %+v", res.Findings)
	}
}

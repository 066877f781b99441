package kernel_test

import (
	"context"
	"encoding"
	"errors"
	"iter"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
)

// Equivalence runs one scripted scenario, which touches every decision the
// kernel makes, on a kernel over a new [memstore.Store] and on a kernel
// over each of stores, and fails t unless every store gives the same
// results as the memory store: the same record ids, codes, committed
// records, evidence artifacts and error sentinels at every scriptStep, the same
// views and the same records in every trace. Each store must be new and
// empty; the caller closes them.
func equivalence(t *testing.T, stores map[string]store.Store) {
	t.Helper()
	mem := memstore.New()
	defer mem.Close()
	want := runScript(t, mem)
	if len(want.Traces["ep1"]) == 0 || len(want.Views["ep3"].Committed) == 0 {
		t.Fatalf("the script observed nothing: %+v", want)
	}
	names := make([]string, 0, len(stores))
	for name := range stores {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		sameTranscript(t, name, "memory", runScript(t, stores[name]), want)
	}
}

// sameTranscript fails t unless got (the run named name) observed what
// want (the run named wantName) did.
func sameTranscript(t *testing.T, name, wantName string, got, want transcript) {
	t.Helper()
	for i := range max(len(got.Steps), len(want.Steps)) {
		if i >= len(got.Steps) || i >= len(want.Steps) {
			t.Errorf("the %s run took %d steps, the %s run %d", name, len(got.Steps), wantName, len(want.Steps))
			break
		}
		if got.Steps[i] != want.Steps[i] {
			t.Errorf("scriptStep %d differs:\n %-8s %+v\n %-8s %+v", i, name, got.Steps[i], wantName, want.Steps[i])
		}
	}
	for tr, v := range want.Views {
		if !reflect.DeepEqual(got.Views[tr], v) {
			t.Errorf("View(%s) differs:\n %-8s %+v\n %-8s %+v", tr, name, got.Views[tr], wantName, v)
		}
	}
	for tr, recs := range want.Traces {
		if !reflect.DeepEqual(got.Traces[tr], recs) {
			t.Errorf("the records of %s differ:\n %-8s %s\n %-8s %s", tr, name, show(got.Traces[tr]), wantName, show(recs))
		}
	}
}

// hiding is a store that wraps another and offers only what
// [store.Store] declares: none of the optional interfaces of the store
// it wraps. It counts the kernel's ListTrace calls.
type hiding struct {
	store.Store
	lists atomic.Int64
}

func (h *hiding) ListTrace(ctx context.Context, namespace, traceID string) iter.Seq2[blackboard.Record, error] {
	h.lists.Add(1)
	return h.Store.ListTrace(ctx, namespace, traceID)
}

// stateCounter counts the ReadState calls of a forwarding wrapper.
type stateCounter struct {
	ss    store.StateStore
	reads atomic.Int64
}

func (c *stateCounter) ReadState(ctx context.Context, namespace, traceID string) (store.TraceState, error) {
	c.reads.Add(1)
	return c.ss.ReadState(ctx, namespace, traceID)
}

// The forwarding wrappers: each embeds the wrapped store and forwards
// exactly the optional interfaces that store implements, no more.
type (
	fwdState struct {
		store.Store
		*stateCounter
	}
	fwdLister struct {
		store.Store
		store.TraceLister
	}
	fwdBoth struct {
		store.Store
		*stateCounter
		store.TraceLister
	}
)

// forward wraps s in a wrapper that forwards every optional interface s
// implements; reads counts the ReadState calls that reach s through it.
func forward(s store.Store) (w store.Store, reads *atomic.Int64) {
	ss, state := s.(store.StateStore)
	tl, lister := s.(store.TraceLister)
	var c *stateCounter
	if state {
		c = &stateCounter{ss: ss}
		reads = &c.reads
	}
	switch {
	case state && lister:
		return fwdBoth{s, c, tl}, reads
	case state:
		return fwdState{s, c}, reads
	case lister:
		return fwdLister{s, tl}, nil
	}
	return struct{ store.Store }{s}, nil
}

// testWrapperDecisions runs the script of [equivalence] on the store and
// on wrappers around other stores of the same kind: one that hides every
// optional interface (the kernel then reads whole traces where it would
// read the store's decision state) and one that forwards each optional
// interface the store implements (the kernel then takes the same path as
// on the store itself). The kernel must decide alike on all three.
func testWrapperDecisions(t *testing.T, newStore func(t *testing.T) store.Store) {
	direct := openStore(t, newStore)
	want := runScript(t, direct)

	hidden := &hiding{Store: openStore(t, newStore)}
	if _, ok := any(hidden).(store.StateStore); ok {
		t.Fatal("suite bug: the hiding wrapper offers store.StateStore")
	}
	if _, ok := any(hidden).(store.TraceLister); ok {
		t.Fatal("suite bug: the hiding wrapper offers store.TraceLister")
	}
	sameTranscript(t, "hiding", "direct", runScript(t, hidden), want)
	if hidden.lists.Load() == 0 {
		t.Error("the kernel never read a trace through a wrapper that hides store.StateStore")
	}

	fwd, reads := forward(openStore(t, newStore))
	for _, ability := range []struct {
		name     string
		has, got bool
	}{
		{"store.StateStore", is[store.StateStore](direct), is[store.StateStore](fwd)},
		{"store.TraceLister", is[store.TraceLister](direct), is[store.TraceLister](fwd)},
	} {
		if ability.has != ability.got {
			t.Fatalf("suite bug: the store implements %s: %v, the forwarding wrapper: %v", ability.name, ability.has, ability.got)
		}
	}
	sameTranscript(t, "forwarding", "direct", runScript(t, fwd), want)
	if reads != nil && reads.Load() == 0 {
		t.Error("the kernel never called ReadState through a wrapper that forwards store.StateStore: " +
			"it must detect the ability by the exported interface, not by the store's type")
	}
}

// is reports whether s implements I.
func is[I any](s store.Store) bool {
	_, ok := s.(I)
	return ok
}

// scriptStep is one observed result of a scripted kernel operation.
type scriptStep struct {
	Name     string
	ID       string // record written, or proposal decided
	Code     reason.Code
	Record   string // committed record
	Evidence string // evidence artifact
	Count    int    // records expired
	Err      string // the sentinel the error wraps
}

// transcript is everything a script observed.
type transcript struct {
	Steps  []scriptStep
	Views  map[string]kernel.View
	Traces map[string][]blackboard.Record
}

// sentinel names the kernel sentinel err wraps; errors from elsewhere keep
// their text, which makes two stores' transcripts differ.
func sentinel(err error) string {
	if err == nil {
		return ""
	}
	for _, s := range []error{
		blackboard.ErrPermission, blackboard.ErrInvalidInput, blackboard.ErrInvalidPayload, kernel.ErrPayloadTooLarge,
		kernel.ErrInvalidProposal, kernel.ErrInvalidReference, blackboard.ErrNotFound,
		store.ErrDuplicateID, blackboard.ErrDuplicateKey, store.ErrNotActive, blackboard.ErrConflict, blackboard.ErrClosed,
	} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	return "unexpected: " + err.Error()
}

// scriptClock is a clock the script moves by hand.
type scriptClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *scriptClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *scriptClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// script drives one kernel through the scenario and checks the codes it
// expects on the way.
type script struct {
	t     *testing.T
	ctx   context.Context
	store store.Store
	k     *kernel.Kernel
	clk   *scriptClock
	tr    transcript
}

// runScript runs the scenario on a kernel over s.
func runScript(t *testing.T, s store.Store) transcript {
	t.Helper()
	clk := &scriptClock{t: time.UnixMilli(faultTS)}
	sc := &script{t: t, ctx: t.Context(), clk: clk, store: s}
	sc.restart()
	defer func() { _ = sc.k.Close() }() // the kernel does not own the store: nothing to report
	return sc.run()
}

// restart replaces the script's kernel with a new one on the same store,
// which knows of the traces only what the store holds.
func (s *script) restart() *kernel.Kernel {
	if s.k != nil {
		_ = s.k.Close() // the kernel does not own the store: nothing to report
	}
	k, err := kernel.New(kernel.Config{
		Store:       s.store,
		Clock:       s.clk.now,
		ActionSpecs: []kernel.ActionSpec{{Type: "move", Repeatable: true}, {Type: "ship", MinBeliefs: []string{"door_open"}}, {Type: "dock", MinBeliefs: []string{"door_open"}, Once: &kernel.OnceKey{Fields: []string{"open"}, Percept: "door"}}},
	})
	if err != nil {
		s.t.Fatalf("kernel.New: %v", err)
	}
	s.k = k
	return k
}

func (s *script) write(name string, h kernel.Handle, e kernel.Entry) string {
	id, err := h.Write(s.ctx, e)
	if err != nil {
		s.t.Errorf("script %s: %v", name, err)
	}
	s.tr.Steps = append(s.tr.Steps, scriptStep{Name: name, ID: id, Err: sentinel(err)})
	return id
}

func (s *script) decide(name string, want reason.Code, d kernel.Decision, err error) string {
	if d.Code != want {
		s.t.Errorf("script %s: code %s (error %v), want %s", name, d.Code, err, want)
	}
	s.tr.Steps = append(s.tr.Steps, scriptStep{Name: name, ID: d.ProposalID, Code: d.Code, Record: d.CommittedID, Evidence: d.EvidenceID, Err: sentinel(err)})
	return d.ProposalID
}

func (s *script) submit(name string, want reason.Code, p interface {
	Submit(context.Context, kernel.Entry) (kernel.Decision, error)
}, e kernel.Entry) string {
	d, err := p.Submit(s.ctx, e)
	return s.decide(name, want, d, err)
}

func (s *script) run() transcript {
	const ep1, ep2, ep3 = "ep1", "ep2", "ep3"
	k := s.k
	tool, planner := k.Handle(blackboard.RoleTool, "sensor"), k.Proposer(blackboard.RolePlanner, "planner")
	var sym *kernel.Symbolic // taken after the restart, as the simulator is
	var sim *kernel.Proposer
	percept := func(traceID, kind string, p blackboard.Payload, conf *float64, ttl time.Duration) kernel.Entry {
		return kernel.Entry{TraceID: traceID, Slot: blackboard.Percepts, Kind: kind, Payload: p, Confidence: conf, TTL: ttl}
	}
	action := func(traceID, kind string, p blackboard.Payload) kernel.Entry {
		return kernel.Entry{TraceID: traceID, Slot: blackboard.Actions, Kind: kind, Payload: p}
	}
	belief := func(traceID, kind string, deps ...any) kernel.Entry {
		return kernel.Entry{TraceID: traceID, Slot: blackboard.Beliefs, Kind: kind,
			Payload: blackboard.Payload{"value": true, "depends_on": deps}}
	}
	reqs := func(kinds ...any) blackboard.Payload { return blackboard.Payload{"requires_beliefs": kinds} }
	with := func(p blackboard.Payload, key string, v any) blackboard.Payload { p[key] = v; return p }
	plan := func(scriptStep blackboard.Payload) kernel.Entry {
		return kernel.Entry{TraceID: ep1, Slot: blackboard.Plans, Kind: "route",
			Payload: blackboard.Payload{"steps": []any{map[string]any(with(scriptStep, "action", "move"))}}}
	}
	c := func(v float64) *float64 { return new(v) }

	s.write("percept door", tool, percept(ep1, "door", blackboard.Payload{"open": true, "door_blocked": false}, c(0.9), 0))
	s.write("percept battery with TTL", tool, percept(ep1, "battery", blackboard.Payload{"level": 0.8}, c(0.95), time.Second))
	s.write("percept camera stale", tool, percept(ep1, "camera", blackboard.Payload{"stale": true}, nil, 0))
	s.write("percept lidar conflicted", tool, percept(ep1, "lidar", blackboard.Payload{"conflict": true}, c(0.6), 0))
	s.write("percept gps conflicted, confident", tool, percept(ep1, "gps", blackboard.Payload{"conflict": true, "lat": 1.5}, c(0.8), 0))
	s.write("percept sonar unreliable", tool, percept(ep1, "sonar", blackboard.Payload{"range": []any{3.0, 4.5}}, c(0.3), 0))

	s.submit("belief committed", reason.Committed, planner, belief(ep1, "door_open", "door"))
	s.submit("belief on stale evidence", reason.StaleEvidence, planner, belief(ep1, "camera_ok", "camera"))
	s.submit("belief on unresolved conflict", reason.UnresolvedConflict, planner, belief(ep1, "lidar_ok", "lidar"))
	s.submit("belief on arbitrated conflict", reason.Committed, planner, belief(ep1, "position_ok", "gps"))
	s.submit("belief on low confidence", reason.LowConfidence, planner, belief(ep1, "sonar_ok", "sonar"))
	s.submit("belief without evidence", reason.MissingEvidence, planner, belief(ep1, "radar_ok", "radar"))
	s.clk.advance(2 * time.Second)
	s.submit("belief on expired evidence", reason.StaleEvidence, planner, belief(ep1, "power_ok", "battery"))

	// Another kernel takes the trace over, as after a restart: it decides
	// from what the store kept (its decision state, or the trace).
	k = s.restart()
	tool, planner, sym, sim = k.Handle(blackboard.RoleTool, "sensor"), k.Proposer(blackboard.RolePlanner, "planner"), k.Symbolic("rules"), k.Proposer(blackboard.RoleSimulator, "sim")

	if _, err := sym.CommitConstraint(s.ctx, ep1, kernel.Constraint{Name: "no_open_door", Enabled: true, BlocksField: "door_blocked"}, ""); err != nil {
		s.t.Errorf("script episode constraint: %v", err)
	}
	feasible := s.submit("plan feasible", reason.PlanFeasible, planner, plan(with(reqs("door_open"), "door_blocked", false)))
	s.submit("plan scriptStep without the constraint's field", "PLAN_"+reason.Blocked("no_open_door"), planner, plan(reqs("door_open")))
	s.submit("plan blocked", "PLAN_"+reason.Blocked("no_open_door"), planner, plan(with(reqs("door_open"), "door_blocked", true)))
	s.submit("plan missing belief", reason.PlanMissingBelief, planner, plan(reqs("bridge_down")))
	s.submit("action committed", reason.Committed, planner, action(ep1, "move", with(reqs("door_open"), "door_blocked", false)))
	s.submit("once-keyed action", reason.Committed, planner, action(ep1, "dock", with(reqs("door_open"), "door_blocked", false)))
	s.submit("action using up its observation", reason.Committed, planner, action(ep1, "ship", with(reqs("door_open"), "door_blocked", false)))
	s.submit("belief again on the used observation", reason.Committed, planner, belief(ep1, "door_open", "door"))
	s.submit("action on the used observation", reason.DuplicateAction, planner, action(ep1, "ship", with(reqs("door_open"), "door_blocked", false)))
	s.submit("action ungrounded", reason.UngroundedAction, planner, action(ep1, "move", reqs()))
	s.submit("action blocked", reason.Blocked("no_open_door"), planner, action(ep1, "move", with(reqs("door_open"), "door_blocked", true)))
	s.submit("fallback", reason.Committed, planner, action(ep1, kernel.FallbackQueueForReview,
		with(reqs(), "reason", string(reason.UngroundedAction))))
	s.submit("prediction", reason.Committed, sim, kernel.Entry{TraceID: ep1, Slot: blackboard.Predictions, Kind: "move_outcome",
		Payload: with(with(reqs("door_open"), "action_type", "move"), "expected_outcome", -1.0)})
	s.submit("action with a negative prediction", reason.NegativePrediction, planner,
		action(ep1, "move", with(with(reqs("door_open"), "require_prediction", true), "door_blocked", false)))
	d, err := planner.Commit(s.ctx, ep1, feasible)
	if !errors.Is(err, kernel.ErrInvalidProposal) {
		s.t.Errorf("script: a second commit of a decided proposal: %v, want ErrInvalidProposal", err)
	}
	s.decide("second commit of a decided proposal", reason.InvalidProposal, d, err)
	if _, err := sym.CommitConstraint(s.ctx, ep1, kernel.Constraint{Name: "speed_limit", Enabled: true, BlocksField: "too_fast"}, blackboard.ScopePersistent); err != nil {
		s.t.Errorf("script persistent constraint: %v", err)
	}

	s.write("percept door in ep2", tool, percept(ep2, "door", blackboard.Payload{"open": true}, nil, 0))
	s.write("percept wind in ep2 with TTL", tool, percept(ep2, "wind", blackboard.Payload{"speed": 12.0}, nil, 500*time.Millisecond))
	s.submit("belief in ep2", reason.Committed, planner, belief(ep2, "door_open", "door"))
	s.submit("action blocked by the persistent constraint", reason.Blocked("speed_limit"), planner,
		action(ep2, "move", with(reqs("door_open"), "too_fast", true)))
	s.submit("action in ep2", reason.Committed, planner, action(ep2, "move", with(reqs("door_open"), "too_fast", false)))
	s.submit("once-key used up in ep1", reason.DuplicateAction, planner, action(ep2, "dock", with(reqs("door_open"), "too_fast", false)))
	s.write("pending proposal in ep2", planner, kernel.Entry{TraceID: ep2, Slot: blackboard.Beliefs, Kind: "later",
		Payload: blackboard.Payload{"depends_on": []any{"door"}}})
	s.clk.advance(time.Second)
	n, err := k.Expire(s.ctx, ep2)
	if n != 1 {
		s.t.Errorf("script: Expire(ep2) = %d, %v; want 1", n, err)
	}
	s.tr.Steps = append(s.tr.Steps, scriptStep{Name: "expire ep2", Count: n, Err: sentinel(err)})

	s.tr.Views, s.tr.Traces = map[string]kernel.View{}, map[string][]blackboard.Record{}
	for _, tr := range []string{ep1, ep2, ep3} {
		v, err := k.Reader().View(s.ctx, tr, tr != ep1)
		if err != nil {
			s.t.Fatalf("script: View(%s): %v", tr, err)
		}
		s.tr.Views[tr] = v
		s.tr.Traces[tr] = collect(s.t, "Trace("+tr+")", tool.Trace(s.ctx, tr))
	}
	return s.tr
}

// openStore calls the factory and registers the store's Close.
func openStore(t *testing.T, newStore func(t *testing.T) store.Store) store.Store {
	t.Helper()
	s := newStore(t)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// staleState is a memory store whose decision state lies: once a trace
// has a state, ReadState answers with that first state and calls it
// current, whatever was written since.
type staleState struct {
	*memstore.Store
	mu    sync.Mutex
	first map[string]encoding.BinaryMarshaler
}

func (s *staleState) ReadState(ctx context.Context, namespace, traceID string) (store.TraceState, error) {
	ts, err := s.Store.ReadState(ctx, namespace, traceID)
	if err != nil || ts.Value == nil {
		return ts, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.first[traceID]; ok {
		ts.Value, ts.StateVersion = v, ts.Version
	} else {
		s.first[traceID] = ts.Value
	}
	return ts, nil
}

// staleStateEnv marks the helper process of
// TestWrapperDecisionsCatchesStaleState.
const staleStateEnv = "BK_STOREFLOW_STALE_STATE"

// TestWrapperDecisionsCatchesStaleState: testWrapperDecisions fails on a
// memory store whose decision state lies (it answers a trace's first
// state as current whatever was written since). It runs in a helper
// process, since the failure is the point.
func TestWrapperDecisionsCatchesStaleState(t *testing.T) {
	if os.Getenv(staleStateEnv) != "" {
		testWrapperDecisions(t, func(*testing.T) store.Store {
			return &staleState{Store: memstore.New(), first: map[string]encoding.BinaryMarshaler{}}
		})
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWrapperDecisionsCatchesStaleState$", "-test.count=1")
	cmd.Env = append(os.Environ(), staleStateEnv+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("testWrapperDecisions passed a store whose decision state is stale (error %v):\n%s", err, out)
	}
	if !strings.Contains(string(out), "differs") {
		t.Errorf("the failure on a stale decision state does not say %q:\n%s", "differs", out)
	}
}

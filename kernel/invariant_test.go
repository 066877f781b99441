package kernel_test

// Model-based tests: random sequences of operations through every handle,
// checked after every step against invariants written from the paper and
// the package documentation, not from the kernel's code. The checker holds
// an independent model of the pipeline: it decides every proposal again
// from the trace as the kernel read it and compares, for commits and (when
// one goroutine drives the kernel) for refusals too. The generator and the
// checker are shared with FuzzOps (fuzz_ops_test.go).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/canon"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

var invSeed = flag.Uint64("invseed", 0, "seed for TestInvariants* (0: a fresh one, printed on failure)")

// Vocabulary of the generator: small, so that random operations meet.
var (
	invPercepts = []string{"charge", "refund", "sensor"}
	invBeliefs  = []string{"refund_due", "alarm", "charge_ok"}
	// Registered types, a case and a whitespace alias, an unregistered one.
	invActions = []string{"issue_refund", "notify", "ship", kernel.FallbackQueueForReview, "Issue_Refund", "issue_refund ", "wire_money"}
	invDerived = []string{"uses_stale_data", "uses_conflicted_data", "uses_low_confidence_data", "has_negative_prediction"}
	// Constraint names with the field each usually blocks on.
	invConstraints = map[string]string{"no_duplicate": "is_duplicate", "no_danger": "danger", "block_stale": "uses_stale_data",
		"block_conflicted": "uses_conflicted_data", "block_low": "uses_low_confidence_data", "block_negative": "has_negative_prediction"}
	invConstraintNames = slices.Sorted(maps.Keys(invConstraints))
	invFields          = append([]string{"is_duplicate", "danger", ""}, invDerived...)
	invBinds           = []string{"refund", "charge", "nowhere"}
	// JSON values, truthy and not.
	invValues = []any{true, false, nil, 0.0, 1.0, -2.5, "", "yes", []any{}, []any{"x"}, map[string]any{}, map[string]any{"a": 1.0}}
	invConfs  = []float64{0, 0.2, 0.3, 0.49, 0.5, 0.69, 0.7, 0.71, 0.8, 0.9, 1}
	invTTLs   = []time.Duration{time.Millisecond, 1500 * time.Microsecond, 5 * time.Millisecond, 20 * time.Millisecond, 100 * time.Millisecond, time.Second}
	invTicks  = []time.Duration{0, time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond, 100 * time.Millisecond, time.Second}
	// Once-key values: a few, so that keys repeat; nil is a missing key.
	invOrders = []any{1.0, 2.0, "A", nil}
	invSpecs  = []kernel.ActionSpec{
		{Type: "issue_refund", MinBeliefs: []string{"refund_due"}},
		{Type: "notify", MinBeliefs: []string{"alarm"}, RequirePrediction: true},
		{Type: "ship", RequirePlan: true},
		{Type: kernel.FallbackQueueForReview, SafeFallback: true},
	}
)

// invSource drives the generator: a seeded PRNG, or the bytes of a fuzz input.
type invSource interface {
	intn(n int) int // in [0, n), n ≤ 256
	done() bool
}

type invRNG struct{ r *rand.Rand }

func newInvRNG(seed uint64) invRNG {
	return invRNG{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}
func (s invRNG) intn(n int) int { return s.r.IntN(n) }
func (invRNG) done() bool       { return false }

// invSlots and invModes are what a fuzzed write picks from, in the order
// of their former numeric values: the zero value first and, past the valid
// ones, a name the kernel refuses.
var (
	invSlots = [...]blackboard.Slot{"", blackboard.Percepts, blackboard.Beliefs, blackboard.Constraints, blackboard.Plans,
		blackboard.Evidence, blackboard.Predictions, blackboard.Actions, "Actions"}
	invModes = [...]blackboard.Mode{"", blackboard.ModePropose, blackboard.ModeCommit, "proposal"}
)

func pick[T any](s invSource, l []T) T { return l[s.intn(len(l))] }
func oneIn(s invSource, n int) bool    { return s.intn(n) == 0 }
func invSubset(s invSource, l []string) []string {
	out := []string{}
	for _, x := range l {
		if oneIn(s, 2) {
			out = append(out, x)
		}
	}
	return out
}

// invModel is what the checker must know of the kernel's configuration.
type invModel struct {
	minConf, threshold float64
	strict             bool
	specs              map[string]kernel.ActionSpec
	beliefSpecs        map[string][]string          // belief kind -> percept kinds it must rest on
	shared             map[blackboard.Slot][]string // persistent kinds shared across traces (Config.SharedPersistent)
	namespace          string                       // the kernel's namespace
	foreign            map[string]string            // traces of other applications sharing the store -> their namespace
}

// invForeignNS is the namespace of the other application that shares the
// store in sequential runs.
const invForeignNS = "foreign"

// invWorld is a kernel with a handle per role, a fake clock and its traces.
type invWorld struct {
	ctx        context.Context
	k          *kernel.Kernel
	store      store.Store
	clock      *fakeClock
	m          invModel
	traces     []string
	persistent bool         // the generator may write persistent-scope records
	episodes   bool         // the generator opens new traces as it goes (one goroutine only)
	mu         sync.RWMutex // steps hold it shared, clock moves exclusive: one op sees one time
	tool       kernel.Handle
	planner    *kernel.Proposer
	sym        *kernel.Symbolic
	ev         kernel.Handle
	sim        *kernel.Proposer
	// Another application on the same store, in its own namespace, with
	// one trace (nil when the store cannot keep namespaces apart).
	ftool  kernel.Handle
	fsym   *kernel.Symbolic
	ftrace string
}

// newInvWorld builds an invWorld whose configuration the source chooses
// (the zero choice is always the plain configuration); tweaks adjust the
// model before the kernel is built from it. With persistent set (one
// goroutine only) the generator also writes persistent-scope records, opens
// new traces as it goes and has a foreign application share the store;
// without, the goroutines share the first traces for good.
func newInvWorld(tb testing.TB, store store.Store, s invSource, traces int, persistent bool, tweaks ...func(*invModel)) *invWorld {
	tb.Helper()
	m := invModel{minConf: pick(s, []float64{0.5, 0.3, 0.8}), threshold: pick(s, []float64{0.7, 0.5, 0.9}), strict: oneIn(s, 2),
		specs: map[string]kernel.ActionSpec{}, beliefSpecs: map[string][]string{}, shared: map[blackboard.Slot][]string{},
		namespace: blackboard.DefaultNamespace, foreign: map[string]string{}}
	specs := slices.Clone(invSpecs)
	specs[1].Predictors = pick(s, [][]string{nil, nil, {"planner"}, {"simulator", "planner"}})
	specs[2].Repeatable = s.intn(3) == 1
	if s.intn(3) > 0 {
		specs[0].Once = pick(s, []*kernel.OnceKey{{Fields: []string{"order_id"}}, {Fields: []string{"order_id"}, Percept: "refund", Limit: 2}})
	}
	for _, sp := range specs {
		m.specs[sp.Type] = sp
	}
	if oneIn(s, 2) {
		m.beliefSpecs["refund_due"] = []string{"charge"}
	}
	if s.intn(2) == 1 {
		m.shared[blackboard.Percepts] = []string{"sensor"}
	}
	if s.intn(3) == 1 {
		m.namespace = "app"
	}
	if persistent {
		m.foreign["f0"] = invForeignNS
	}
	for _, tw := range tweaks {
		tw(&m)
	}
	w := &invWorld{ctx: context.Background(), store: store, clock: newFakeClock(), m: m, persistent: persistent, episodes: persistent}
	cfg := kernel.Config{Store: store, Clock: w.clock.Now, MinConfidence: m.minConf, ConflictThreshold: m.threshold, Namespace: m.namespace,
		StrictActions: m.strict, SharedPersistent: map[blackboard.Slot][]string{}}
	for _, sp := range slices.Sorted(maps.Keys(m.specs)) {
		cfg.ActionSpecs = append(cfg.ActionSpecs, m.specs[sp])
	}
	for _, kind := range slices.Sorted(maps.Keys(m.beliefSpecs)) {
		cfg.BeliefSpecs = append(cfg.BeliefSpecs, kernel.BeliefSpec{Kind: kind, DependsOn: m.beliefSpecs[kind]})
	}
	for slot, kinds := range m.shared {
		cfg.SharedPersistent[slot] = append(cfg.SharedPersistent[slot], kinds...)
	}
	k, err := kernel.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { k.Close() })
	w.k = k
	w.tool, w.planner, w.sym = k.Handle(blackboard.RoleTool, "tool"), k.Proposer(blackboard.RolePlanner, "planner"), k.Symbolic("symbolic")
	w.ev, w.sim = k.Handle(blackboard.RoleEvidence, "evidence"), k.Proposer(blackboard.RoleSimulator, "simulator")
	for i := range traces {
		w.traces = append(w.traces, "t"+strconv.Itoa(i))
	}
	for trace := range m.foreign {
		fk, err := kernel.New(kernel.Config{
			Store:            store,
			Clock:            w.clock.Now,
			Namespace:        invForeignNS,
			SharedPersistent: map[blackboard.Slot][]string{blackboard.Percepts: {"sensor"}},
		})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { fk.Close() })
		w.ftool, w.fsym, w.ftrace = fk.Handle(blackboard.RoleTool, "tool"), fk.Symbolic("symbolic"), trace
	}
	return w
}

func (w *invWorld) handles() []kernel.Handle {
	return []kernel.Handle{w.tool, w.planner, w.sym, w.ev, w.sim}
}

// allTraces is every trace the store holds: the kernel's and the foreign
// application's.
func (w *invWorld) allTraces() []string {
	return append(slices.Clone(w.traces), slices.Sorted(maps.Keys(w.m.foreign))...)
}

func (w *invWorld) list(trace string) ([]blackboard.Record, error) {
	ns := w.m.namespace
	if f, ok := w.m.foreign[trace]; ok {
		ns = f
	}
	var out []blackboard.Record
	for r, err := range w.store.ListTrace(w.ctx, ns, trace) {
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// invOp is the kind of call a step made, which says what it may change.
type invOp uint8

const (
	opNone   invOp = iota // nothing called (the clock moved)
	opWrite               // a handle wrote, or tried to: no status may change
	opSubmit              // a proposal written and decided at once
	opCommit              // a pending proposal decided
	opExpire              // Kernel.Expire
	opView                // a view: it never writes
)

var invOpNames = [...]string{"no call", "write", "Submit", "Commit", "Expire", "View"}

// invCall is what one step called and got back, for the checker.
type invCall struct {
	op      invOp
	role    blackboard.Role // the proposer of a Submit or Commit
	id      string          // the proposal a Commit named
	d       kernel.Decision
	err     error
	expired int // what Expire returned
	view    kernel.View
	shared  bool // the view included persistent records
}

// invGen generates operations for one goroutine.
type invGen struct {
	w        *invWorld
	s        invSource
	goal     string              // the action type the generator works towards
	ids      []string            // ids handed to this generator, for references and re-commits
	percepts []string            // percept ids handed out, for beliefs that name one
	got      []blackboard.Record // records as handed out, for the overwrite check
	call     invCall             // what the last step called
	// An episode in progress: the operations left, its trace and goal.
	script      []invScriptStep
	scriptTrace string
	scriptGoal  string
	scripted    bool // the current step is one of them: choices that let the goal commit
	aside       bool // and it is about the side belief (see invAsideScript)
}

// invScriptStep is one operation (see step) of an episode.
type invScriptStep struct {
	op    int
	aside bool
}

// invScripts are the operations of an episode that reaches each goal:
// observe, believe, plan or predict when the spec needs it, act.
var invScripts = map[string][]invScriptStep{"issue_refund": {{0, false}, {5, false}, {12, false}},
	"notify": {{0, false}, {5, false}, {11, false}, {12, false}}, "ship": {{0, false}, {5, false}, {9, false}, {12, false}},
	kernel.FallbackQueueForReview: {{12, false}}}

// invAsideScript is a notify episode whose prediction also rests on a side
// belief that expires before the action is decided: the prediction no
// longer counts.
var invAsideScript = []invScriptStep{{0, false}, {5, false}, {5, true}, {11, true}, {4, true}, {12, false}}

// invAside is the side belief of invAsideScript.
const invAside = "charge_ok"

// invScriptPercept is the percept kind an episode observes for its goal.
var invScriptPercept = map[string]string{"issue_refund": "charge", "notify": "sensor", "ship": "charge", kernel.FallbackQueueForReview: "refund"}

func (g *invGen) saw(recs ...blackboard.Record) {
	for _, r := range recs {
		if r.ID == "" {
			continue
		}
		if len(g.ids) < 256 {
			g.ids = append(g.ids, r.ID)
		} else {
			g.ids[g.s.intn(256)] = r.ID
		}
		if r.Slot == blackboard.Percepts {
			if len(g.percepts) < 64 {
				g.percepts = append(g.percepts, r.ID)
			} else {
				g.percepts[g.s.intn(64)] = r.ID
			}
		}
		if !g.w.persistent && len(g.got) < 4096 { // kept for the concurrent check
			g.got = append(g.got, r.Clone())
		}
	}
}

// ref returns a record id: one handed out, a guess, or one that does not exist.
func (g *invGen) ref() string {
	switch {
	case len(g.ids) > 0 && !oneIn(g.s, 4):
		return pick(g.s, g.ids)
	case oneIn(g.s, 2):
		return store.RecordID(pick(g.s, blackboard.AllSlots()), g.w.m.namespace, pick(g.s, g.w.traces), 1+g.s.intn(40))
	}
	return "percepts:elsewhere:1"
}

// perceptOf returns the id of an observation of the trace handed out
// earlier (often superseded since), or a guess.
func (g *invGen) perceptOf(trace string) string {
	var mine []string
	for _, id := range g.percepts {
		if strings.HasPrefix(id, "percepts:"+trace+":") {
			mine = append(mine, id)
		}
	}
	if len(mine) == 0 {
		return g.ref()
	}
	return pick(g.s, mine)
}

// action picks an action type: half the time the generator's current
// goal, so that episodes get somewhere, else mostly a registered one.
func (g *invGen) action() string {
	switch {
	case oneIn(g.s, 2):
		return g.goal
	case oneIn(g.s, 3):
		return pick(g.s, invActions)
	}
	return pick(g.s, invActions[:4])
}

// invNeeds is the belief each action type is usually grounded in.
var invNeeds = map[string][]string{"issue_refund": {"refund_due"}, "notify": {"alarm"}, "ship": {"charge_ok"},
	kernel.FallbackQueueForReview: {}, "Issue_Refund": {"refund_due"}, "issue_refund ": {"refund_due"}, "wire_money": {"refund_due"}}

// requires returns the beliefs a step or an action declares: often what
// it needs, else any subset.
func (g *invGen) requires(action string) []string {
	if oneIn(g.s, 3) {
		return invSubset(g.s, invBeliefs)
	}
	return invNeeds[action]
}

func (g *invGen) extras(p blackboard.Payload) blackboard.Payload {
	if oneIn(g.s, 2) { // what a careful planner proposes
		p["is_duplicate"], p["danger"] = false, false
		return p
	}
	for _, key := range append([]string{"is_duplicate", "danger", "require_prediction"}, invDerived...) {
		if oneIn(g.s, 8) {
			p[key] = pick(g.s, invValues)
		}
	}
	return p
}

func (g *invGen) confidence() *float64 {
	if oneIn(g.s, 3) {
		return nil
	}
	return new(pick(g.s, invConfs))
}

func (g *invGen) ttl() time.Duration {
	if g.s.intn(4) > 0 {
		return 0
	}
	return pick(g.s, invTTLs)
}

func (g *invGen) scope() blackboard.Scope {
	if g.w.persistent && oneIn(g.s, 8) {
		return blackboard.ScopePersistent
	}
	return ""
}

// appliesTo returns the action types a constraint names, usually none.
func (g *invGen) appliesTo() []string {
	if !oneIn(g.s, 4) {
		return nil
	}
	return []string{g.action()}
}

// invTyped accepts an error only if it is a typed refusal.
func invTyped(err error) error {
	var kerr *kernel.Error
	if !errors.As(err, &kerr) || kerr.Code == "" {
		return fmt.Errorf("untyped error: %w", err)
	}
	for _, s := range []error{blackboard.ErrInvalidInput, blackboard.ErrInvalidPayload, kernel.ErrPayloadTooLarge,
		kernel.ErrInvalidProposal, kernel.ErrInvalidReference, blackboard.ErrPermission} {
		if errors.Is(err, s) {
			return nil
		}
	}
	return fmt.Errorf("unexpected error: %w", err)
}

// invRefused accepts an error only if it is a typed refusal, and a
// permission refusal only where the caller expects one: every handle
// writes within its authority, in its kernel's namespace.
func invRefused(err error, mayDeny bool) error {
	if err := invTyped(err); err != nil {
		return err
	}
	if errors.Is(err, blackboard.ErrPermission) && !mayDeny {
		return fmt.Errorf("refused a call within the handle's authority: %w", err)
	}
	return nil
}

// invProposer is a planner or a simulator.
type invProposer interface {
	kernel.Handle
	Submit(ctx context.Context, e kernel.Entry) (kernel.Decision, error)
	Commit(ctx context.Context, traceID, proposalID string) (kernel.Decision, error)
}

// step runs one random operation. It returns the trace it touched and how
// many records it must have appended there (-1 when unknown), or an error
// if the operation itself broke a rule (an untyped error, a write outside
// authority accepted, a Decision the store disagrees with); g.call says
// what it called.
func (g *invGen) step() (trace string, added int, err error) {
	w, s := g.w, g.s
	g.call = invCall{}
	if w.episodes && oneIn(s, 120) { // a new episode; older traces stay in reach
		w.traces = append(w.traces, "t"+strconv.Itoa(len(w.traces)))
	}
	trace = pick(s, w.traces[max(0, len(w.traces)-2):])
	if oneIn(s, 10) {
		trace = pick(s, w.traces)
	}
	if g.goal == "" || oneIn(s, 40) {
		g.goal = pick(s, invActions[:4])
	}
	op := s.intn(21)
	if len(g.script) == 0 && oneIn(s, 12) { // now and then, an episode that gets somewhere
		g.script, g.scriptTrace, g.scriptGoal = invScripts[g.goal], trace, g.goal
		if g.goal == "notify" && oneIn(s, 3) {
			g.script = invAsideScript
		}
	}
	if g.scripted, g.aside = len(g.script) > 0, false; g.scripted {
		op, trace, g.aside = g.script[0].op, g.scriptTrace, g.script[0].aside
		g.script = g.script[1:]
	}
	if op == 4 { // the clock moves while no operation runs
		tick := pick(s, invTicks)
		if g.aside {
			tick = 2 * time.Millisecond // past the side belief's TTL
		}
		w.mu.Lock()
		w.clock.Advance(tick)
		w.mu.Unlock()
		return trace, 0, nil
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	e := kernel.Entry{TraceID: trace}
	switch op {
	case 0, 1, 2, 3: // a tool observes
		p := blackboard.Payload{"amount": float64(s.intn(250))}
		clean := oneIn(s, 2) // a plain observation, so that episodes get somewhere
		for _, f := range []struct {
			key string
			n   int
		}{{"stale", 4}, {"conflict", 4}, {"low_confidence", 8}, {"is_duplicate", 3}, {"danger", 4}} {
			if clean {
				p[f.key] = false
			} else if oneIn(s, f.n) {
				p[f.key] = pick(s, invValues)
			}
		}
		if !oneIn(s, 3) {
			p["order_id"] = pick(s, invOrders)
		}
		e.Slot, e.Kind, e.Payload, e.Confidence, e.TTL, e.Scope = blackboard.Percepts, pick(s, invPercepts), p, g.confidence(), g.ttl(), g.scope()
		if clean {
			e.Confidence = nil
		}
		if g.scripted {
			e.Kind, e.TTL, e.Scope, e.InputRefs = invScriptPercept[g.scriptGoal], 0, "", nil
			return g.write(w.tool, e)
		}
		if oneIn(s, 8) {
			e.InputRefs = []string{g.ref()}
		}
		if w.ftool != nil && oneIn(s, 16) { // the other application observes, for every trace of its own
			e.TraceID, e.Kind, e.Scope, e.InputRefs = w.ftrace, "sensor", blackboard.ScopePersistent, nil
			return g.write(w.ftool, e)
		}
		return g.write(w.tool, e)
	case 5, 6, 7, 8: // a belief, depending on percept kinds, ids, or nothing
		deps := []string{}
		for range pick(s, []int{0, 1, 1, 1, 1, 2, 3}) {
			switch s.intn(12) {
			case 0:
				deps = append(deps, "ghost")
			case 1, 2:
				deps = append(deps, g.ref())
			case 3, 4:
				deps = append(deps, g.perceptOf(trace))
			default:
				deps = append(deps, pick(s, invPercepts))
			}
		}
		val := any(s.intn(3) > 0)
		if oneIn(s, 4) {
			val = pick(s, invValues)
		}
		kind := pick(s, invBeliefs)
		if need := invNeeds[g.goal]; len(need) > 0 && oneIn(s, 2) {
			kind = need[0]
		}
		e.Slot, e.Kind, e.Payload, e.Scope = blackboard.Beliefs, kind, blackboard.Payload{"value": val, "depends_on": deps}, g.scope()
		if oneIn(s, 10) {
			delete(e.Payload, "depends_on")
		}
		if oneIn(s, 6) {
			e.EvidenceRefs = []string{g.ref()} // a planner naming evidence of its choosing
		}
		if need := invNeeds[g.scriptGoal]; g.scripted && len(need) > 0 {
			e.Kind, e.Scope, e.EvidenceRefs = need[0], "", nil
			e.Payload = blackboard.Payload{"value": true, "depends_on": []string{invScriptPercept[g.scriptGoal]}}
			if g.aside {
				e.Kind, e.TTL = invAside, time.Millisecond
			}
		}
		return g.propose(w.planner, e)
	case 9, 10: // a plan
		var steps []any
		for range 1 + s.intn(2) {
			a := g.action()
			steps = append(steps, map[string]any(g.extras(blackboard.Payload{"action": a, "requires_beliefs": g.requires(a)})))
		}
		if g.scripted {
			steps = []any{map[string]any{"action": g.scriptGoal, "requires_beliefs": invNeeds[g.scriptGoal], "is_duplicate": false, "danger": false}}
		}
		e.Slot, e.Kind, e.Payload = blackboard.Plans, "plan", blackboard.Payload{"steps": steps}
		return g.propose(w.planner, e)
	case 11: // a prediction, from the planner or the simulator
		e.Slot, e.Kind = blackboard.Predictions, "pred"
		a := g.action()
		e.Payload = blackboard.Payload{"action_type": a, "expected_outcome": pick(s, []float64{-1, -0.5, 0, 0.5, 1, 2}),
			"requires_beliefs": g.requires(a)}
		p := pick(s, []invProposer{w.planner, w.sim})
		if g.scripted { // a trusted proposer, usually optimistic, sometimes resting on one more belief
			reqs := invNeeds[g.scriptGoal]
			if g.aside {
				reqs = append(slices.Clone(reqs), invAside)
			} else if oneIn(s, 3) {
				reqs = append(slices.Clone(reqs), pick(s, invBeliefs))
			}
			e.Payload["action_type"], e.Payload["requires_beliefs"] = g.scriptGoal, reqs
			e.Payload["expected_outcome"] = pick(s, []float64{-1, 0.5, 1, 2})
			if g.aside {
				e.Payload["expected_outcome"] = 1.0
			}
			if pr := w.m.specs[g.scriptGoal].Predictors; len(pr) > 0 && !slices.Contains(pr, w.sim.Name()) {
				p = w.planner
			} else {
				p = w.sim
			}
		}
		return g.propose(p, e)
	case 12, 13, 14: // an action
		a := g.action()
		e.Slot, e.Kind, e.Payload = blackboard.Actions, a, g.extras(blackboard.Payload{"requires_beliefs": g.requires(a)})
		if oneIn(s, 6) { // what an executor dispatching on the payload would run
			e.Payload["type"] = pick(s, []any{a, g.action(), 1.0})
		}
		if !oneIn(s, 4) {
			e.Payload["order_id"] = pick(s, invOrders)
		}
		e.TTL = g.ttl()
		if g.scripted {
			e.Kind = g.scriptGoal
			e.Payload = blackboard.Payload{"requires_beliefs": invNeeds[g.scriptGoal], "is_duplicate": false, "danger": false,
				"order_id": pick(s, invOrders)}
		}
		return g.propose(w.planner, e)
	case 15: // a constraint, bound or not, on a plain or a derived field
		name := pick(s, invConstraintNames)
		c := kernel.Constraint{Name: name, Enabled: !oneIn(s, 4), BlocksField: invConstraints[name], AppliesTo: g.appliesTo()}
		if oneIn(s, 4) {
			c.BlocksField = pick(s, invFields)
		}
		if oneIn(s, 2) {
			c.BindPercept = pick(s, invBinds)
		}
		h, scope := w.sym, g.scope()
		if w.fsym != nil && oneIn(s, 6) { // the other application's rule, for its traces only
			h, trace, scope = w.fsym, w.ftrace, blackboard.ScopePersistent
		}
		g.call.op = opWrite
		id, err := h.CommitConstraint(w.ctx, trace, c, scope)
		return g.wrote(trace, id, err, false)
	case 16: // a constraint written raw: defaults, a name other than its kind, a TTL
		p := blackboard.Payload{}
		if !oneIn(s, 3) {
			p["blocks_field"] = pick(s, invFields)
		}
		if oneIn(s, 3) {
			p["enabled"] = oneIn(s, 2)
		}
		if oneIn(s, 3) {
			p["name"] = pick(s, invConstraintNames)
		}
		if oneIn(s, 3) {
			p["bind_percept"] = pick(s, invBinds)
		}
		if oneIn(s, 5) {
			p["applies_to"] = invSubset(s, invActions) // sometimes empty: refused
		}
		e.Slot, e.Kind, e.Payload, e.TTL, e.Scope = blackboard.Constraints, pick(s, invConstraintNames), p, g.ttl(), g.scope()
		return g.write(w.sym, e)
	case 17: // commit something again, from any trace, by either proposer
		id := g.ref()
		if oneIn(s, 2) {
			if _, rest, ok := strings.Cut(id, ":"); ok {
				if i := strings.LastIndexByte(rest, ':'); i > 0 {
					trace = rest[:i]
				}
			}
			if !slices.Contains(w.traces, trace) {
				trace = w.traces[0]
			}
		}
		p := pick(s, []invProposer{w.planner, w.sim})
		g.call = invCall{op: opCommit, role: p.Role(), id: id}
		d, err := p.Commit(w.ctx, trace, id)
		// Only a proposal of the trace in a slot the role may not propose
		// in is refused for permission.
		r, gerr := w.store.Get(w.ctx, id)
		own, has := table1[p.Role()][r.Slot]
		mayDeny := gerr == nil && r.Provenance.TraceID == trace && r.Mode == blackboard.ModePropose && (!has || own != blackboard.ModePropose)
		return g.decided(trace, 0, d, err, mayDeny)
	case 18: // a write outside authority (or inside it, by chance)
		h := pick(s, w.handles())
		slot, mode := invSlots[s.intn(9)], invModes[s.intn(4)]
		e.Slot, e.Mode, e.Kind, e.Payload = slot, mode, "k", validPayload[slot].Clone()
		g.call.op = opWrite
		rec, err := h.Write(w.ctx, e)
		own, has := table1[h.Role()][slot]
		outside := !has || mode != "" && mode != own
		switch {
		case !slot.Valid() || mode != "" && !mode.Valid():
			if !errors.Is(err, blackboard.ErrInvalidInput) {
				return trace, 0, fmt.Errorf("%s wrote slot %q mode %q: %v", h.Role(), slot, mode, err)
			}
		case outside:
			if !errors.Is(err, blackboard.ErrPermission) {
				return trace, 0, fmt.Errorf("%s wrote %s in mode %q outside its authority: %v", h.Role(), slot, mode, err)
			}
		}
		return g.wrote(trace, rec, err, outside)
	case 19: // an evidence validator forges a belief artifact
		e.Slot, e.Kind = blackboard.Evidence, "belief_validation"
		e.Payload = blackboard.Payload{"passed": true, "proposal_id": g.ref(), "belief": pick(s, invBeliefs)}
		e.InputRefs = []string{g.ref()}
		return g.write(w.ev, e)
	default: // reads, and an explicit expiry
		if oneIn(s, 2) {
			n, err := w.k.Expire(w.ctx, trace)
			g.call = invCall{op: opExpire, expired: n, err: err}
			return g.wrote(trace, "", err, false)
		}
		shared := oneIn(s, 2)
		v, err := pick(s, w.handles()).View(w.ctx, trace, shared)
		g.call = invCall{op: opView, view: v, shared: shared, err: err}
		return g.wrote(trace, "", err, false)
	}
}

func (g *invGen) write(h kernel.Handle, e kernel.Entry) (string, int, error) {
	g.call.op = opWrite
	id, err := h.Write(g.w.ctx, e)
	// A proposer may not write persistent scope.
	proposer := h.Role() == blackboard.RolePlanner || h.Role() == blackboard.RoleSimulator
	return g.wrote(e.TraceID, id, err, proposer && e.Scope == blackboard.ScopePersistent)
}

// wrote notes the record a write returned the id of ("" for a call that
// wrote nothing), read back from the store.
func (g *invGen) wrote(trace, id string, err error, mayDeny bool) (string, int, error) {
	if g.call.err == nil {
		g.call.err = err
	}
	if err != nil {
		return trace, 0, invRefused(err, mayDeny)
	}
	if id == "" {
		return trace, 0, nil
	}
	rec, err := g.w.store.Get(g.w.ctx, id)
	if err != nil || rec.ID != id || rec.Provenance.TraceID != trace {
		return trace, 0, fmt.Errorf("write returned %q, store holds %+v (%v)", id, rec, err)
	}
	g.saw(rec)
	return trace, 1, nil
}

// propose writes a proposal and leaves it pending, or submits it. A
// proposer's persistent-scope proposal must be refused either way.
func (g *invGen) propose(p invProposer, e kernel.Entry) (string, int, error) {
	if e.TTL == 0 && oneIn(g.s, 12) || e.Slot == blackboard.Beliefs && !g.scripted && oneIn(g.s, 4) {
		e.TTL = g.ttl()
	}
	persistent := e.Scope == blackboard.ScopePersistent
	var trace string
	var added int
	var err error
	if !g.scripted && oneIn(g.s, 4) {
		trace, added, err = g.write(p, e)
	} else {
		g.call = invCall{op: opSubmit, role: p.Role()}
		d, derr := p.Submit(g.w.ctx, e)
		trace, added, err = g.decided(e.TraceID, 1, d, derr, persistent)
	}
	if err == nil && persistent && !errors.Is(g.call.err, blackboard.ErrPermission) {
		return trace, added, fmt.Errorf("%s proposed in persistent scope: %v", p.Role(), g.call.err)
	}
	return trace, added, err
}

// decided checks a Decision against the store. proposed is the number of
// proposals the call wrote before deciding.
func (g *invGen) decided(trace string, proposed int, d kernel.Decision, err error, mayDeny bool) (string, int, error) {
	g.call.d, g.call.err = d, err
	if err != nil {
		return trace, 0, invRefused(err, mayDeny)
	}
	ctx, st := g.w.ctx, g.w.store
	if d.ID != "decision:"+d.ProposalID {
		return trace, 0, fmt.Errorf("decision %q of proposal %q", d.ID, d.ProposalID)
	}
	p, perr := st.Get(ctx, d.ProposalID)
	if perr != nil || p.Mode != blackboard.ModePropose || p.Status != blackboard.StatusInvalidated {
		return trace, 0, fmt.Errorf("decided proposal %q in store: %+v, %v", d.ProposalID, p, perr)
	}
	g.saw(p)
	if !d.Committed() {
		if d.CommittedID != "" || d.EvidenceID != "" || p.Reason != d.Code {
			return trace, 0, fmt.Errorf("rejection %s: record %q evidence %q, proposal reason %s", d.Code, d.CommittedID, d.EvidenceID, p.Reason)
		}
		return trace, proposed, nil
	}
	r, rerr := st.Get(ctx, d.CommittedID)
	if rerr != nil || r.Mode != blackboard.ModeCommit || r.Status != blackboard.StatusActive || r.Slot != p.Slot || r.Kind != p.Kind ||
		r.Provenance.Role != blackboard.RoleKernel || r.Provenance.TraceID != p.Provenance.TraceID || len(r.Provenance.InputRefs) == 0 ||
		r.Provenance.InputRefs[0] != p.ID || p.Reason != reason.SupersededByCommit || r.Reason != d.Code {
		return trace, 0, fmt.Errorf("commit %s: committed %q, store %+v (%v), proposal reason %s", d.Code, d.CommittedID, r, rerr, p.Reason)
	}
	if d.Rule != "" || d.Failed != "" || len(d.Causes) > 0 {
		return trace, 0, fmt.Errorf("commit %s with rule %q, failed %q, causes %v", d.Code, d.Rule, d.Failed, d.Causes)
	}
	g.saw(r)
	if (d.EvidenceID != "") != (r.Slot == blackboard.Beliefs) {
		return trace, 0, fmt.Errorf("commit of %s with evidence %q", r.Slot, d.EvidenceID)
	}
	if d.EvidenceID != "" {
		ev, err := st.Get(ctx, d.EvidenceID)
		if err != nil {
			return trace, 0, fmt.Errorf("evidence %s: %v", d.EvidenceID, err)
		}
		g.saw(ev)
		return trace, proposed + 2, nil
	}
	return trace, proposed + 1, nil
}

// invChecker verifies the invariants on the listings of a store's traces.
type invChecker struct {
	m       invModel
	first   map[string]blackboard.Record // each record as first seen
	last    map[string]blackboard.Record // and as last seen
	seq     map[string]int               // order of first sight, across traces
	traces  map[string][]blackboard.Record
	persist []blackboard.Record   // committed persistent records, every namespace, in order of first sight
	once    map[string][]invClaim // once-key -> the committed actions that took it, in order of first sight
}

// invClaim is a committed action holding a once-key.
type invClaim struct {
	id  string
	seq int
}

func newInvChecker(m invModel) *invChecker {
	return &invChecker{m: m, first: map[string]blackboard.Record{}, last: map[string]blackboard.Record{}, seq: map[string]int{},
		traces: map[string][]blackboard.Record{}, once: map[string][]invClaim{}}
}

// invTruthy is the pipeline's truth value of a JSON value, written out here.
func invTruthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case float64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

func invStrs(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// invPast reports whether r's TTL has run out at ms.
func invPast(r *blackboard.Record, ms int64) bool {
	p := r.Provenance
	return p.TTLMS > 0 && ms > p.TimestampMS+p.TTLMS
}

// invLive reports whether r was committed and within its TTL at ms.
func invLive(r *blackboard.Record, ms int64) bool {
	return r.Mode == blackboard.ModeCommit && !invPast(r, ms)
}

// invNS is a record's namespace; a store keeps an empty one as the
// default namespace (the Store contract).
func invNS(ns string) string {
	if ns == "" {
		return blackboard.DefaultNamespace
	}
	return ns
}

func invNormNS(r blackboard.Record) blackboard.Record { r.Namespace = invNS(r.Namespace); return r }

func invStripped(r blackboard.Record) blackboard.Record {
	r.Status, r.Reason = "", ""
	return invNormNS(r)
}

// invSame reports whether a and b agree in everything but status and
// reason: reflect.DeepEqual, written out for speed (the checker compares
// every record of a trace after every step).
func invSame(a, b *blackboard.Record) bool {
	pa, pb := a.Provenance, b.Provenance
	return a.ID == b.ID && a.Slot == b.Slot && a.Mode == b.Mode && a.Kind == b.Kind && a.Scope == b.Scope && invNS(a.Namespace) == invNS(b.Namespace) &&
		pa.Role == pb.Role && pa.Writer == pb.Writer && pa.TraceID == pb.TraceID && pa.TimestampMS == pb.TimestampMS &&
		pa.TTLMS == pb.TTLMS && (pa.Confidence == nil) == (pb.Confidence == nil) && (pa.Confidence == nil || *pa.Confidence == *pb.Confidence) &&
		invSameRefs(pa.InputRefs, pb.InputRefs) && invSameRefs(a.EvidenceRefs, b.EvidenceRefs) &&
		(a.Payload == nil) == (b.Payload == nil) && invSameJSON(map[string]any(a.Payload), map[string]any(b.Payload))
}

func invSameRefs(a, b []string) bool { return (a == nil) == (b == nil) && slices.Equal(a, b) }

func invSameJSON(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) || (x == nil) != (y == nil) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !invSameJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) || (x == nil) != (y == nil) {
			return false
		}
		for i := range x {
			if !invSameJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case nil, bool, float64, string:
		return a == b
	}
	return reflect.DeepEqual(a, b)
}

// invIDShaped reports whether s reads as "{slot}:{trace}:{n}".
func invIDShaped(s string) bool {
	slot, rest, ok := strings.Cut(s, ":")
	i := strings.LastIndexByte(rest, ':')
	if !ok || !blackboard.Slot(slot).Valid() || i <= 0 {
		return false
	}
	n := rest[i+1:]
	return n != "" && strings.Trim(n, "0123456789") == ""
}

// nsOf is the namespace of a trace: the kernel's, or a foreign application's.
func (c *invChecker) nsOf(trace string) string {
	if ns, ok := c.m.foreign[trace]; ok {
		return ns
	}
	return c.m.namespace
}

// sharedWith reports whether f, a record of another trace, is shared with
// every trace of namespace ns: a committed persistent record of ns that is
// a constraint or of a kind the kernel shares.
func (c *invChecker) sharedWith(f *blackboard.Record, ns string) bool {
	if f.Scope != blackboard.ScopePersistent || f.Mode != blackboard.ModeCommit || invNS(f.Namespace) != ns {
		return false
	}
	return f.Slot == blackboard.Constraints || ns == c.m.namespace && slices.Contains(c.m.shared[f.Slot], f.Kind)
}

// observe checks the listing of one trace after a step that was to append
// added records to it (-1: any number), with the clock at nowMS.
func (c *invChecker) observe(trace string, recs []blackboard.Record, added int, nowMS int64) error {
	return c.observeStep(trace, recs, added, nil, nowMS)
}

// observeStep is observe after a step that made call (nil: unknown), run
// by the only goroutine using the kernel: it also checks what the call
// did to the trace against the model.
func (c *invChecker) observeStep(trace string, recs []blackboard.Record, added int, call *invCall, nowMS int64) error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	old := c.traces[trace]
	seen := len(c.seq)
	if len(recs) < len(old) {
		return fmt.Errorf("trace %s shrank from %d to %d records", trace, len(old), len(recs))
	}
	if added >= 0 && len(recs)-len(old) != added {
		bad("trace %s: %d records appended, want %d", trace, len(recs)-len(old), added)
	}
	ns := c.nsOf(trace)
	twins := map[string]int{}
	for i := range recs {
		r := &recs[i]
		if want := store.RecordID(r.Slot, ns, trace, i+1); r.ID != want || r.Provenance.TraceID != trace {
			bad("record %d of trace %s is %q of trace %q, want id %q", i+1, trace, r.ID, r.Provenance.TraceID, want)
		}
		if i >= len(old) {
			if _, dup := c.first[r.ID]; dup {
				bad("id %s appended twice", r.ID)
			}
			if invNS(r.Namespace) != ns {
				bad("%s: namespace %q in a trace of namespace %q", r.ID, r.Namespace, ns)
			}
			c.first[r.ID], c.last[r.ID], c.seq[r.ID] = r.Clone(), *r, len(c.seq)
			if r.Scope == blackboard.ScopePersistent && r.Mode == blackboard.ModeCommit {
				c.persist = append(c.persist, *r)
			}
		} else if f := c.first[r.ID]; !invSame(r, &f) {
			bad("%s overwritten:\n was %+v\n now %+v", r.ID, c.first[r.ID], *r)
		}
		prev := c.last[r.ID]
		switch {
		case prev.Status != blackboard.StatusActive && (r.Status != prev.Status || r.Reason != prev.Reason):
			bad("%s moved from %s (%s) to %s (%s)", r.ID, prev.Status, prev.Reason, r.Status, r.Reason)
		case r.Status == blackboard.StatusActive && r.Reason != prev.Reason:
			bad("%s is ACTIVE but its reason moved from %q to %q", r.ID, prev.Reason, r.Reason)
		case r.Status != blackboard.StatusActive && r.Reason == "":
			bad("%s is %s without a code", r.ID, r.Status)
		case r.Status == blackboard.StatusExpired && (r.Reason != reason.TTLExpired || !invPast(r, nowMS)):
			bad("%s is EXPIRED (%s) with ttl %d ms at ts %d, now %d", r.ID, r.Reason, r.Provenance.TTLMS, r.Provenance.TimestampMS, nowMS)
		case r.Status == blackboard.StatusInvalidated && r.Mode != blackboard.ModePropose:
			bad("%s: a committed record was invalidated (%s)", r.ID, r.Reason)
		case r.Status == blackboard.StatusActive && (r.Mode == blackboard.ModePropose) != (r.Reason == ""):
			bad("%s: active %s record with reason %q", r.ID, r.Mode, r.Reason)
		case r.Status != blackboard.StatusActive && r.Status != blackboard.StatusInvalidated && r.Status != blackboard.StatusExpired:
			bad("%s: status %q", r.ID, r.Status)
		}
		c.last[r.ID] = *r
		if r.Provenance.Role == blackboard.RoleKernel && r.Slot != blackboard.Evidence && len(r.Provenance.InputRefs) > 0 {
			twins[r.Provenance.InputRefs[0]]++
		}
	}
	c.traces[trace] = recs
	for i := range recs {
		r := &recs[i]
		superseded := r.Mode == blackboard.ModePropose && r.Status == blackboard.StatusInvalidated && r.Reason == reason.SupersededByCommit
		if n := twins[r.ID]; n > 1 || superseded != (n == 1) {
			bad("%s (%s, %s) has %d committed records", r.ID, r.Status, r.Reason, n)
		}
		if i >= len(old) {
			if err := c.verify(recs, i); err != nil {
				bad("%s: %v", r.ID, err)
			}
		}
	}
	if call != nil {
		errs = append(errs, c.checkCall(trace, old, recs, seen, call, nowMS)...)
	}
	return errors.Join(errs...)
}

// invChange is a status move a call must make.
type invChange struct {
	status blackboard.Status
	reason reason.Code
}

// checkCall checks what one call did to its trace: a read or a write moves
// no status (views never write), Expire marks EXPIRED exactly what is past
// its TTL now, a decision marks EXPIRED what it read that is (some of what
// is past its TTL: at least what its decision rests on, which the decision
// checks), a decision invalidates its proposal,
// and its Decision is the model's. old is the trace before the call, seen
// the number of records first seen before it.
func (c *invChecker) checkCall(trace string, old, recs []blackboard.Record, seen int, call *invCall, now int64) []error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	n := len(old)
	expiries := map[int]invChange{} // what a decision or Expire must mark now
	for i := range old {
		if old[i].Status == blackboard.StatusActive && invPast(&old[i], now) {
			expiries[i] = invChange{blackboard.StatusExpired, reason.TTLExpired}
		}
	}
	want := map[int]invChange{}
	switch call.op {
	case opExpire:
		if call.err != nil {
			bad("Expire(%s): %v", trace, call.err)
		} else if want = expiries; call.expired != len(expiries) {
			bad("Expire(%s) returned %d, %d records were past their TTL", trace, call.expired, len(expiries))
		}
	case opView:
		if call.err == nil {
			if err := c.checkView(trace, recs, call.view, call.shared, seen, now); err != nil {
				errs = append(errs, err)
			}
		}
	case opSubmit:
		if call.err != nil {
			break
		}
		want = expiries
		if len(recs) <= n || recs[n].ID != call.d.ProposalID {
			bad("Submit decided %q, not a proposal it appended", call.d.ProposalID)
			break
		}
		errs = append(errs, c.checkDecision(recs[:n+1], &recs[n], call.d, seen, now)...)
	case opCommit:
		pi := slices.IndexFunc(old, func(q blackboard.Record) bool { return q.ID == call.id })
		var wantErr error
		if pi < 0 || old[pi].Mode != blackboard.ModePropose {
			wantErr = kernel.ErrInvalidProposal
		} else if own, ok := table1[call.role][old[pi].Slot]; !ok || own != blackboard.ModePropose {
			wantErr = blackboard.ErrPermission
		} else if st := invStatusAt(&old[pi], now); st != blackboard.StatusActive {
			wantErr = kernel.ErrInvalidProposal
			if st == blackboard.StatusExpired && len(expiries) > 0 {
				want = expiries // refusing an expired proposal records its expiry
			}
		}
		switch {
		case wantErr != nil && !errors.Is(call.err, wantErr):
			bad("Commit(%s, %s) by %s: %v, want %v", trace, call.id, call.role, call.err, wantErr)
		case wantErr == nil && call.err != nil:
			bad("Commit(%s, %s) by %s: %v, want a decision", trace, call.id, call.role, call.err)
		case wantErr == nil:
			want = maps.Clone(expiries)
			why := call.d.Code
			if call.d.Committed() {
				why = reason.SupersededByCommit
			}
			want[pi] = invChange{blackboard.StatusInvalidated, why}
			errs = append(errs, c.checkDecision(recs[:n], &recs[pi], call.d, seen, now)...)
		}
	}
	decision := call.op == opSubmit || call.op == opCommit
	for i := range old {
		got := invChange{recs[i].Status, recs[i].Reason}
		w, ok := want[i]
		if !ok {
			w = invChange{old[i].Status, old[i].Reason}
		}
		if _, past := expiries[i]; past && decision && w == expiries[i] && got == (invChange{old[i].Status, old[i].Reason}) {
			continue // a decision expires what it reads, not every record of the trace
		}
		if got != w {
			bad("%s: %s (%s) after a %s at %d, want %s (%s)", recs[i].ID, got.status, got.reason, invOpNames[call.op], now, w.status, w.reason)
		}
	}
	return errs
}

// invStatusAt is r's status as a decision at ms sees it: an active record
// past its TTL is expired.
func invStatusAt(r *blackboard.Record, ms int64) blackboard.Status {
	if r.Status == blackboard.StatusActive && invPast(r, ms) {
		return blackboard.StatusExpired
	}
	return r.Status
}

// checkDecision compares the Decision on proposal p with the model's,
// deciding p on recs, the trace as the kernel read it, at now. A commit's
// record is checked by verify when it is first seen.
func (c *invChecker) checkDecision(recs []blackboard.Record, p *blackboard.Record, d kernel.Decision, seen int, now int64) []error {
	var errs []error
	if d.ID != "decision:"+p.ID || d.ProposalID != p.ID {
		errs = append(errs, fmt.Errorf("decision %q on proposal %q, want one on %s", d.ID, d.ProposalID, p.ID))
	}
	if d.Committed() {
		if d.Rule != "" || d.Failed != "" || len(d.Causes) > 0 {
			errs = append(errs, fmt.Errorf("commit of %s with rule %q, failed %q, causes %v", p.ID, d.Rule, d.Failed, d.Causes))
		}
		return errs
	}
	s := &invSnap{c: c, recs: recs, ts: now, limit: seen, ns: c.nsOf(p.Provenance.TraceID)}
	if v := s.decide(p); v.code != d.Code || v.rule != d.Rule || v.failed != d.Failed {
		errs = append(errs, fmt.Errorf("%s decided %s (rule %q, failed %q), the model decides %s (rule %q, failed %q): %s",
			p.ID, d.Code, d.Rule, d.Failed, v.code, v.rule, v.failed, v.why))
	}
	return errs
}

// checkView compares a view of the trace with the model's: the latest
// committed payload of each kind not past its TTL now (and the persistent
// ones other traces share, if asked), and the pending proposals.
func (c *invChecker) checkView(trace string, recs []blackboard.Record, v kernel.View, shared bool, seen int, now int64) error {
	want := map[blackboard.Slot]map[string]blackboard.Payload{}
	put := func(r *blackboard.Record) {
		if want[r.Slot] == nil {
			want[r.Slot] = map[string]blackboard.Payload{}
		}
		want[r.Slot][r.Kind] = r.Payload
	}
	if shared {
		for i := range c.persist {
			q := &c.persist[i]
			if c.seq[q.ID] < seen && q.Provenance.TraceID != trace && invLive(q, now) && c.sharedWith(q, c.nsOf(trace)) {
				put(q)
			}
		}
	}
	var pending []string
	for i := range recs {
		r := &recs[i]
		switch {
		case invStatusAt(r, now) != blackboard.StatusActive:
		case r.Mode == blackboard.ModeCommit:
			put(r)
		default:
			pending = append(pending, r.ID)
		}
	}
	var got []string
	for _, r := range v.Pending {
		got = append(got, r.ID)
	}
	if v.TraceID != trace || !slices.Equal(got, pending) {
		return fmt.Errorf("view of %s: trace %q, pending %v, want %v", trace, v.TraceID, got, pending)
	}
	for _, slot := range blackboard.AllSlots() {
		if len(v.Committed[slot]) != len(want[slot]) {
			return fmt.Errorf("view of %s at %d: %s holds %v, want %v", trace, now, slot, slices.Sorted(maps.Keys(v.Committed[slot])), slices.Sorted(maps.Keys(want[slot])))
		}
		for kind, p := range want[slot] {
			if got, ok := v.Committed[slot][kind]; !ok || !invSameJSON(map[string]any(got), map[string]any(p)) {
				return fmt.Errorf("view of %s: %s %s is %v, want %v", trace, slot, kind, got, p)
			}
		}
	}
	return nil
}

// verify checks a record when it first appears: its authority, its
// references and, for what the kernel commits, the decision that let it in.
func (c *invChecker) verify(recs []blackboard.Record, i int) error {
	r := &recs[i]
	role := r.Provenance.Role
	if role == blackboard.RoleKernel {
		if r.Mode != blackboard.ModeCommit || r.Slot == blackboard.Percepts || r.Slot == blackboard.Constraints || r.Provenance.Writer != "kernel" {
			return fmt.Errorf("kernel wrote %s in %s as %q", r.Slot, r.Mode, r.Provenance.Writer)
		}
	} else if own, ok := table1[role][r.Slot]; !ok || own != r.Mode {
		return fmt.Errorf("%s wrote %s in %s", role, r.Slot, r.Mode)
	}
	if (role == blackboard.RolePlanner || role == blackboard.RoleSimulator) && r.Scope == blackboard.ScopePersistent {
		return fmt.Errorf("a %s wrote persistent scope", role)
	}
	if r.Mode == blackboard.ModeCommit && r.Status == blackboard.StatusActive && r.Reason != reason.Committed && r.Reason != reason.PlanFeasible {
		return fmt.Errorf("committed with reason %s", r.Reason)
	}
	ns := c.nsOf(r.Provenance.TraceID)
	for _, ref := range slices.Concat(r.Provenance.InputRefs, r.EvidenceRefs) {
		f, ok := c.first[ref]
		switch {
		case !ok:
			return fmt.Errorf("reference %q out of reach: no such record", ref)
		case f.Provenance.TraceID == r.Provenance.TraceID:
			if c.seq[ref] >= c.seq[r.ID] {
				return fmt.Errorf("reference %q out of reach: not written before", ref)
			}
		case !c.sharedWith(&f, ns):
			return fmt.Errorf("reference %q out of reach: %s %s %s of trace %s in namespace %q is not shared with namespace %q",
				ref, f.Scope, f.Mode, f.Slot, f.Provenance.TraceID, f.Namespace, ns)
		}
	}
	if r.Slot == blackboard.Beliefs && r.Mode == blackboard.ModePropose {
		for _, d := range invStrs(r.Payload["depends_on"]) {
			if f, ok := c.first[d]; invIDShaped(d) && (!ok || f.Slot != blackboard.Percepts || f.Provenance.TraceID != r.Provenance.TraceID) {
				return fmt.Errorf("depends on %q, not a percept of its trace", d)
			}
		}
	}
	if role != blackboard.RoleKernel {
		return nil
	}
	if r.Slot == blackboard.Evidence {
		if i+1 >= len(recs) || !slices.Equal(recs[i+1].EvidenceRefs, []string{r.ID}) || recs[i+1].Slot != blackboard.Beliefs {
			return errors.New("kernel evidence artifact without its belief")
		}
		return nil
	}
	// A committed record names its proposal first.
	if len(r.Provenance.InputRefs) == 0 {
		return errors.New("committed without naming a proposal")
	}
	pi := slices.IndexFunc(recs[:i], func(q blackboard.Record) bool { return q.ID == r.Provenance.InputRefs[0] })
	if pi < 0 {
		return errors.New("its proposal is not an earlier record of the trace")
	}
	p := &recs[pi]
	ts := r.Provenance.TimestampMS
	if p.Slot != r.Slot || p.Kind != r.Kind || p.Mode != blackboard.ModePropose || p.Scope != r.Scope ||
		!reflect.DeepEqual(p.Provenance.Confidence, r.Provenance.Confidence) {
		return fmt.Errorf("does not match its proposal %s", p.ID)
	}
	if invPast(p, ts) {
		return fmt.Errorf("proposal %s was past its TTL at commit time %d", p.ID, ts)
	}
	// Committed plans and actions never expire; beliefs and predictions
	// keep the proposal's TTL.
	wantTTL := p.Provenance.TTLMS
	if r.Slot == blackboard.Plans || r.Slot == blackboard.Actions {
		wantTTL = 0
	}
	if r.Provenance.TTLMS != wantTTL {
		return fmt.Errorf("committed %s keeps ttl %d ms, want %d (proposal's %d)", r.Slot, r.Provenance.TTLMS, wantTTL, p.Provenance.TTLMS)
	}
	s := &invSnap{c: c, recs: recs[:i], ts: ts, limit: c.seq[r.ID], ns: ns}
	v := s.decide(p)
	if !v.code.OK() {
		return fmt.Errorf("committed, but the model decides %s (failed %q): %s", v.code, v.failed, v.why)
	}
	if r.Status == blackboard.StatusActive && r.Reason != v.code {
		return fmt.Errorf("committed with %s, the model decides %s", r.Reason, v.code)
	}
	refs := append([]string{p.ID}, p.Provenance.InputRefs...)
	for _, in := range v.inputs {
		if !slices.Contains(refs, in) {
			refs = append(refs, in)
		}
	}
	if !slices.Equal(r.Provenance.InputRefs, refs) {
		return fmt.Errorf("input refs %v, want %v", r.Provenance.InputRefs, refs)
	}
	switch r.Slot {
	case blackboard.Beliefs:
		if !reflect.DeepEqual(r.Payload, p.Payload) {
			return fmt.Errorf("payload %v differs from proposal's %v", r.Payload, p.Payload)
		}
		return c.verifyArtifact(recs, i, p, &v)
	case blackboard.Actions:
		want := p.Payload.Clone()
		for k, f := range v.flags {
			want[k] = f
		}
		if !reflect.DeepEqual(r.Payload, want) {
			return fmt.Errorf("committed payload %v, want the proposal's with derived flags %v", r.Payload, want)
		}
		if !slices.Equal(r.EvidenceRefs, v.evidence) {
			return fmt.Errorf("action with evidence refs %v, want its beliefs' %v", r.EvidenceRefs, v.evidence)
		}
		if v.once != "" {
			c.once[v.once] = append(c.once[v.once], invClaim{r.ID, c.seq[r.ID]})
		}
	default:
		if !reflect.DeepEqual(r.Payload, p.Payload) {
			return fmt.Errorf("payload %v differs from proposal's %v", r.Payload, p.Payload)
		}
		if len(r.EvidenceRefs) > 0 {
			return fmt.Errorf("%s with evidence refs %v", r.Slot, r.EvidenceRefs)
		}
	}
	return nil
}

// verifyArtifact checks the evidence artifact a committed belief names:
// the kernel's, written with it, recording the checks that passed on the
// percepts the model resolved.
func (c *invChecker) verifyArtifact(recs []blackboard.Record, i int, p *blackboard.Record, v *invVerdict) error {
	r := &recs[i]
	if len(r.EvidenceRefs) != 1 {
		return fmt.Errorf("belief with evidence refs %v", r.EvidenceRefs)
	}
	var ev *blackboard.Record
	if i > 0 && recs[i-1].ID == r.EvidenceRefs[0] {
		ev = &recs[i-1]
	}
	if ev == nil || ev.Slot != blackboard.Evidence || ev.Provenance.Role != blackboard.RoleKernel || ev.Payload["passed"] != true ||
		ev.Payload["proposal_id"] != p.ID || ev.Payload["belief"] != p.Kind || ev.Provenance.TimestampMS != r.Provenance.TimestampMS ||
		!slices.Equal(ev.Provenance.InputRefs, v.percepts) || ev.Payload["arbitrated"] != v.arbitrated {
		return fmt.Errorf("belief evidence %s is not a passed kernel artifact on %v (arbitrated %v)", r.EvidenceRefs[0], v.percepts, v.arbitrated)
	}
	checks := invStrs(ev.Payload["checks"])
	if len(checks) != len(v.checks) {
		return fmt.Errorf("belief evidence %s records checks %v, want %v", ev.ID, checks, v.checks)
	}
	for j, want := range v.checks {
		if !strings.Contains(checks[j], want) {
			return fmt.Errorf("belief evidence %s records checks %v, want %v", ev.ID, checks, v.checks)
		}
	}
	return nil
}

// invSnap is a trace as a decision read it: its records, the time of the
// decision, and the persistent records of other traces first seen before
// limit (in order of first sight).
type invSnap struct {
	c     *invChecker
	recs  []blackboard.Record
	ts    int64
	limit int
	ns    string
}

// invVerdict is the model's decision on a proposal: the code, the rule and
// the record behind a refusal, why; and for a commit, what its record must
// hold.
type invVerdict struct {
	code         reason.Code
	rule, failed string
	why          string
	inputs       []string        // refs the committed record adds to its proposal's
	evidence     []string        // an action's evidence refs
	flags        map[string]bool // an action's derived flags
	percepts     []string        // a belief's artifact: the percepts checked
	checks       []string        // and how each conflict check passed
	arbitrated   bool
	once         string // an action's once-key
}

func invRefuse(code reason.Code, failed, format string, a ...any) invVerdict {
	return invVerdict{code: code, failed: failed, why: fmt.Sprintf(format, a...)}
}

func (s *invSnap) byID(id string) int {
	return slices.IndexFunc(s.recs, func(q blackboard.Record) bool { return q.ID == id })
}

// invObservation: a percept observation counts as soon as a tool commits it.
func invObservation(q *blackboard.Record) bool {
	return q.Slot == blackboard.Percepts && q.Mode == blackboard.ModeCommit
}

// latest returns the latest record of the snapshot that keep accepts.
func (s *invSnap) latest(keep func(q *blackboard.Record) bool) *blackboard.Record {
	for j := len(s.recs) - 1; j >= 0; j-- {
		if keep(&s.recs[j]) {
			return &s.recs[j]
		}
	}
	return nil
}

// current is the newest observation of a percept kind, past its TTL or not.
func (s *invSnap) current(kind string) *blackboard.Record {
	return s.latest(func(q *blackboard.Record) bool { return invObservation(q) && q.Kind == kind })
}

// belief is the newest committed belief of kind within its TTL.
func (s *invSnap) belief(kind string) *blackboard.Record {
	return s.latest(func(q *blackboard.Record) bool {
		return q.Slot == blackboard.Beliefs && q.Kind == kind && invLive(q, s.ts)
	})
}

// perceptFor resolves a belief dependency: an observation named by id, or
// the current observation of a kind.
func (s *invSnap) perceptFor(dep string) *blackboard.Record {
	if j := s.byID(dep); j >= 0 && invObservation(&s.recs[j]) {
		return &s.recs[j]
	}
	return s.current(dep)
}

// evidence runs the evidence checks on one observation: fresh, conflict
// free or arbitrated, confident.
func (s *invSnap) evidence(q *blackboard.Record) (code reason.Code, arbitrated bool, why string) {
	conf := q.Provenance.Confidence
	if invTruthy(q.Payload["stale"]) || invPast(q, s.ts) {
		return reason.StaleEvidence, false, fmt.Sprintf("stale percept %s at %d", q.ID, s.ts)
	}
	if invTruthy(q.Payload["conflict"]) {
		if conf == nil || *conf < s.c.m.threshold {
			return reason.UnresolvedConflict, false, "unresolved conflict on " + q.ID
		}
		arbitrated = true
	}
	if invTruthy(q.Payload["low_confidence"]) || conf != nil && *conf < s.c.m.minConf {
		return reason.LowConfidence, false, "low-confidence percept " + q.ID
	}
	return "", arbitrated, ""
}

func (s *invSnap) decide(p *blackboard.Record) invVerdict {
	switch p.Slot {
	case blackboard.Beliefs:
		return s.decideBelief(p)
	case blackboard.Plans:
		return s.decidePlan(p)
	case blackboard.Actions:
		return s.decideAction(p)
	case blackboard.Predictions:
		return s.decidePrediction(p)
	}
	return invRefuse("", "", "no decision on a proposal in %s", p.Slot)
}

// decideBelief: every dependency resolves to an observation that is the
// current one of its kind and passes the evidence checks, and the belief
// spec's percept kinds are among them.
func (s *invSnap) decideBelief(p *blackboard.Record) invVerdict {
	deps := invStrs(p.Payload["depends_on"])
	if len(deps) == 0 {
		return invRefuse(reason.MissingEvidence, "", "belief without dependencies")
	}
	for _, need := range s.c.m.beliefSpecs[p.Kind] {
		if !slices.ContainsFunc(deps, func(d string) bool {
			pr := s.perceptFor(d)
			return d == need || pr != nil && pr.Kind == need
		}) {
			return invRefuse(reason.MissingEvidence, "", "belief without depending on %s", need)
		}
	}
	var v invVerdict
	for _, d := range deps {
		pr := s.perceptFor(d)
		if pr == nil {
			return invRefuse(reason.MissingEvidence, "", "belief with no percept for %q", d)
		}
		if cur := s.current(pr.Kind); cur != pr {
			return invRefuse(reason.SupersededEvidence, pr.ID, "belief on percept %s, superseded by %s", pr.ID, cur.ID)
		}
		code, arb, why := s.evidence(pr)
		if code != "" {
			return invRefuse(code, pr.ID, "belief on %s", why)
		}
		check := "conflict_free"
		if arb {
			check, v.arbitrated = "conflict_arbitrated", true
		}
		v.percepts, v.checks = append(v.percepts, pr.ID), append(v.checks, check)
	}
	v.code, v.inputs = reason.Committed, v.percepts
	return v
}

// decidePrediction: a prediction names the beliefs it rests on, and each
// is committed.
func (s *invSnap) decidePrediction(p *blackboard.Record) invVerdict {
	reqs := invStrs(p.Payload["requires_beliefs"])
	if len(reqs) == 0 {
		return invRefuse(reason.PredictionMissingBelief, "", "prediction without beliefs")
	}
	var v invVerdict
	for _, kind := range reqs {
		b := s.belief(kind)
		if b == nil {
			return invRefuse(reason.PredictionMissingBelief, s.whyMissing(kind), "prediction without committed belief %s", kind)
		}
		v.inputs = append(v.inputs, b.ID)
	}
	v.code = reason.Committed
	return v
}

// whyMissing names the record that explains why no belief of kind is
// committed: the newest one of that kind that is neither active nor
// replaced by its commit (a refused proposal, an expired belief).
func (s *invSnap) whyMissing(kind string) string {
	if q := s.latest(func(q *blackboard.Record) bool {
		return q.Slot == blackboard.Beliefs && q.Kind == kind && invStatusAt(q, s.ts) != blackboard.StatusActive && q.Reason != reason.SupersededByCommit
	}); q != nil {
		return q.ID
	}
	return ""
}

// decidePlan: every step passes the gate.
func (s *invSnap) decidePlan(p *blackboard.Record) invVerdict {
	var v invVerdict
	for _, st := range p.Payload["steps"].([]any) {
		step := blackboard.Payload(st.(map[string]any))
		a, _ := step["action"].(string)
		g, refusal := s.gate(a, invStrs(step["requires_beliefs"]), step, false)
		if refusal != nil {
			refusal.why = "plan step " + a + ": " + refusal.why
			return *refusal
		}
		for _, b := range g.beliefs {
			v.inputs = append(v.inputs, b.ID)
		}
	}
	v.code = reason.PlanFeasible
	return v
}

// decideAction: the gate, then the once-key.
func (s *invSnap) decideAction(p *blackboard.Record) invVerdict {
	g, refusal := s.gate(p.Kind, invStrs(p.Payload["requires_beliefs"]), p.Payload, true)
	if refusal != nil {
		return *refusal
	}
	v := invVerdict{code: reason.Committed, flags: g.flags}
	if g.plan != nil {
		v.inputs = append(v.inputs, g.plan.ID)
	}
	for _, b := range g.beliefs {
		v.inputs = append(v.inputs, b.ID)
		for _, ev := range b.EvidenceRefs {
			if !slices.Contains(v.evidence, ev) {
				v.evidence = append(v.evidence, ev)
			}
		}
	}
	for _, pr := range g.preds {
		v.inputs = append(v.inputs, pr.ID)
	}
	if o := s.c.m.specs[p.Kind].Once; o != nil {
		src := p.Payload
		if o.Percept != "" {
			pr := s.current(o.Percept)
			if pr == nil {
				return invRefuse(reason.OnceKeyMissing, "", "no observation %s for the once-key", o.Percept)
			}
			if code, _, why := s.evidence(pr); code != "" {
				return invRefuse(reason.OnceKeyMissing, pr.ID, "once-key percept: %s", why)
			}
			src = pr.Payload
		}
		values := make([]any, len(o.Fields))
		for i, f := range o.Fields {
			if values[i] = src[f]; values[i] == nil {
				return invRefuse(reason.OnceKeyMissing, "", "once-key field %s missing", f)
			}
		}
		enc, err := canon.Encode(values)
		if err != nil {
			return invRefuse("", "", "once-key %v: %v", values, err)
		}
		v.once = s.ns + "/" + p.Kind + "/" + string(enc)
		var holders []string
		for _, cl := range s.c.once[v.once] {
			if cl.seq < s.limit {
				holders = append(holders, cl.id)
			}
		}
		if len(holders) >= max(o.Limit, 1) {
			return invRefuse(reason.DuplicateAction, holders[0], "once-key %s used up by %v", v.once, holders)
		}
	}
	return v
}

// invGateResult is what a plan step or an action that passed the gate
// rests on.
type invGateResult struct {
	plan    *blackboard.Record
	beliefs []*blackboard.Record
	preds   []*blackboard.Record
	flags   map[string]bool
}

// gate recomputes what a plan step or an action must satisfy: grounded in
// its spec, (a plan,) beliefs committed and true, their evidence chains
// still passing the evidence checks now, (the grounding not used up, the
// prediction gate, the payload's type,) the derived flags, and the
// constraints that apply. It returns what the step or action rests on, or
// the refusal.
func (s *invSnap) gate(action string, reqs []string, payload blackboard.Payload, isAction bool) (invGateResult, *invVerdict) {
	var g invGateResult
	refuse := func(code reason.Code, failed, format string, a ...any) (invGateResult, *invVerdict) {
		v := invRefuse(code, failed, format, a...)
		return g, &v
	}
	spec, registered := s.c.m.specs[action]
	if s.c.m.strict && !registered {
		return refuse(reason.UnknownActionType, "", "unregistered action type %s", action)
	}
	ungrounded, missing, unsatisfied := reason.PlanUngrounded, reason.PlanMissingBelief, reason.PlanBeliefNotSatisfied
	if isAction {
		ungrounded, missing, unsatisfied = reason.UngroundedAction, reason.NoCommittedBelief, reason.BeliefNotSatisfied
	}
	if len(reqs) == 0 && !spec.SafeFallback {
		return refuse(ungrounded, "", "no required beliefs for %s", action)
	}
	for _, need := range spec.MinBeliefs {
		if !slices.Contains(reqs, need) {
			return refuse(ungrounded, "", "%s declares fewer beliefs than its spec demands", action)
		}
	}
	if isAction && spec.RequirePlan {
		g.plan = s.latest(func(q *blackboard.Record) bool {
			return q.Slot == blackboard.Plans && invLive(q, s.ts) && slices.ContainsFunc(q.Payload["steps"].([]any), func(st any) bool {
				return st.(map[string]any)["action"] == action
			})
		})
		if g.plan == nil {
			return refuse(reason.NoFeasiblePlan, "", "no committed plan for %s", action)
		}
	}
	for _, kind := range reqs {
		b := s.belief(kind)
		if b == nil {
			return refuse(missing, s.whyMissing(kind), "required belief %s not committed or not true: none live", kind)
		}
		if !invTruthy(b.Payload["value"]) {
			return refuse(unsatisfied, b.ID, "required belief %s not committed or not true: %s says %v", kind, b.ID, b.Payload["value"])
		}
		g.beliefs = append(g.beliefs, b)
	}
	// The evidence chain, as of now: each percept a belief's artifact
	// names, and every newer observation of its kind, passes the evidence
	// checks; then a belief that names an observation by id rests on it
	// only while it is the current one of its kind.
	conflicted := false
	for _, b := range g.beliefs {
		for _, evID := range b.EvidenceRefs {
			e := s.byID(evID)
			if e < 0 || s.recs[e].Slot != blackboard.Evidence {
				return refuse(reason.MissingEvidence, b.ID, "belief evidence %s missing", evID)
			}
			for _, pid := range s.recs[e].Provenance.InputRefs {
				at := s.byID(pid)
				if at < 0 || !invObservation(&s.recs[at]) {
					return refuse(reason.MissingEvidence, b.ID, "belief evidence %s names %s, not an observation", evID, pid)
				}
				for j := at; j < len(s.recs); j++ {
					q := &s.recs[j]
					if j > at && (q.Kind != s.recs[at].Kind || !invObservation(q)) {
						continue
					}
					code, arb, why := s.evidence(q)
					if code != "" {
						return refuse(code, q.ID, "%s under belief %s", why, b.ID)
					}
					conflicted = conflicted || arb
				}
			}
		}
		for _, d := range invStrs(b.Payload["depends_on"]) {
			at := s.byID(d)
			if at < 0 || !invObservation(&s.recs[at]) {
				continue
			}
			if cur := s.current(s.recs[at].Kind); cur != nil && cur.ID != d {
				return refuse(reason.SupersededEvidence, d, "belief %s computed from %s, superseded by %s", b.ID, d, cur.ID)
			}
		}
	}
	if isAction && !spec.Repeatable && len(g.beliefs) > 0 {
		// A committed action of the type already rests on an observation
		// the beliefs rest on: the observations are the input refs of the
		// validation artifacts (the kernel's, not the planner's) that the
		// beliefs and the action name as evidence. The refusal names the
		// earliest such action, whatever the order of the beliefs.
		observed := func(evidence []string) []string {
			var out []string
			for _, ev := range evidence {
				for j := range s.recs {
					if a := &s.recs[j]; a.ID == ev && a.Slot == blackboard.Evidence && a.Provenance.Role == blackboard.RoleKernel && a.Kind == "belief_validation" {
						out = append(out, a.Provenance.InputRefs...)
					}
				}
			}
			return out
		}
		var mine []string
		for _, b := range g.beliefs {
			mine = append(mine, observed(b.EvidenceRefs)...)
		}
		for j := range s.recs {
			q := &s.recs[j]
			if q.Slot != blackboard.Actions || q.Mode != blackboard.ModeCommit || q.Kind != action {
				continue
			}
			if slices.ContainsFunc(observed(q.EvidenceRefs), func(o string) bool { return slices.Contains(mine, o) }) {
				return refuse(reason.DuplicateAction, q.ID, "grounding already used by %s", q.ID)
			}
		}
	}
	// Predictions count when committed, live, for this type, from a
	// trusted proposer, resting on beliefs all still committed.
	negative := false
	for j := range s.recs {
		q := &s.recs[j]
		if q.Slot != blackboard.Predictions || !invLive(q, s.ts) || q.Payload["action_type"] != any(action) || !s.trusted(q, spec) {
			continue
		}
		reqs := invStrs(q.Payload["requires_beliefs"])
		if len(reqs) == 0 || slices.ContainsFunc(reqs, func(k string) bool { return s.belief(k) == nil }) {
			continue
		}
		g.preds = append(g.preds, q)
		negative = negative || q.Payload["expected_outcome"].(float64) < 0
	}
	if isAction && (spec.RequirePrediction || invTruthy(payload["require_prediction"])) {
		if len(g.preds) == 0 {
			return refuse(reason.NoPrediction, "", "no counted prediction for %s", action)
		}
		if negative {
			return refuse(reason.NegativePrediction, "", "negative prediction for %s", action)
		}
	}
	if t, ok := payload["type"]; isAction && ok && t != any(action) {
		return refuse(reason.FieldMismatch, "", "payload type %v of a %s action", t, action)
	}
	// Stale and low-confidence evidence never gets this far.
	g.flags = map[string]bool{"uses_stale_data": false, "uses_conflicted_data": conflicted,
		"uses_low_confidence_data": false, "has_negative_prediction": negative}
	for _, k := range invDerived {
		if given, ok := payload[k]; ok && invTruthy(given) != g.flags[k] {
			return refuse(reason.FieldMismatch, "", "derived flag %s given as %v, evidence says %v", k, given, g.flags[k])
		}
	}
	for _, con := range s.inForce() {
		name := con.Kind
		if n, ok := con.Payload["name"].(string); ok && n != "" {
			name = n
		}
		enabled, isBool := con.Payload["enabled"].(bool)
		field, _ := con.Payload["blocks_field"].(string)
		if isBool && !enabled || field == "" {
			continue
		}
		if types, named := con.Payload["applies_to"]; named && !slices.Contains(invStrs(types), action) || !named && spec.SafeFallback {
			continue
		}
		blocked := func(format string, a ...any) (invGateResult, *invVerdict) {
			code := reason.Code(invCodeName(name) + "_BLOCKED")
			if !isAction {
				code = "PLAN_" + code
			}
			v := invRefuse(code, con.ID, "blocked by constraint %s: %s", con.ID, fmt.Sprintf(format, a...))
			v.rule = name
			return g, &v
		}
		var value any
		switch bind, _ := con.Payload["bind_percept"].(string); {
		case slices.Contains(invDerived, field):
			value = g.flags[field]
		case bind != "":
			pr := s.current(bind)
			if pr == nil {
				return blocked("bound to %s, never observed", bind)
			}
			if code, _, why := s.evidence(pr); code != "" {
				return blocked("bound percept fails %s: %s", code, why)
			}
			observed, has := pr.Payload[field]
			if !has {
				return blocked("bound percept %s has no %s", pr.ID, field)
			}
			if given, ok := payload[field]; ok && !reflect.DeepEqual(given, observed) {
				v := invRefuse(reason.FieldMismatch, pr.ID, "bound field %s given as %v, percept %s says %v", field, given, pr.ID, observed)
				v.rule = name
				return g, &v
			}
			value = observed
		default:
			v, has := payload[field]
			if !has {
				return blocked("the proposal has no %s", field)
			}
			value = v
		}
		if invTruthy(value) {
			return blocked("%s=%v", field, value)
		}
	}
	return g, nil
}

// trusted reports whether a committed prediction's proposer is one the
// spec trusts: a simulator, or a writer it names.
func (s *invSnap) trusted(pred *blackboard.Record, spec kernel.ActionSpec) bool {
	if len(pred.Provenance.InputRefs) == 0 {
		return false
	}
	j := s.byID(pred.Provenance.InputRefs[0])
	if j < 0 {
		return false
	}
	if len(spec.Predictors) == 0 {
		return s.recs[j].Provenance.Role == blackboard.RoleSimulator
	}
	return slices.Contains(spec.Predictors, s.recs[j].Provenance.Writer)
}

// invCodeName is a constraint name as a code token: upper case, anything
// outside [A-Z0-9_] as '_'.
func invCodeName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			return r
		}
		return '_'
	}, name)
}

// inForce returns the enabled-or-not constraints in force for the
// snapshot, in the order a decision consults them: the latest live one of
// each kind among the trace's own episode constraints, in trace order,
// then the latest live one of each kind among the persistent constraints
// of the namespace first seen before the decision, in that order.
func (s *invSnap) inForce() []*blackboard.Record {
	var out []*blackboard.Record
	latestOfKind := func(recs []blackboard.Record, in func(q *blackboard.Record) bool) {
		for j := range recs {
			q := &recs[j]
			if in(q) && !slices.ContainsFunc(recs[j+1:], func(l blackboard.Record) bool { return l.Kind == q.Kind && in(&l) }) {
				out = append(out, q)
			}
		}
	}
	latestOfKind(s.recs, func(q *blackboard.Record) bool {
		return q.Slot == blackboard.Constraints && q.Scope != blackboard.ScopePersistent && invLive(q, s.ts)
	})
	latestOfKind(s.c.persist, func(q *blackboard.Record) bool {
		return q.Slot == blackboard.Constraints && invNS(q.Namespace) == s.ns && s.c.seq[q.ID] < s.limit && invLive(q, s.ts)
	})
	return out
}

// final checks every trace again without a step, and that the store's slot
// listings hold exactly what its trace listings hold.
func (c *invChecker) final(w *invWorld) error {
	bySlot := map[string]blackboard.Record{}
	for _, slot := range blackboard.AllSlots() {
		for r, err := range w.store.ListSlot(w.ctx, slot, store.Filter{}) {
			if err != nil {
				return err
			}
			if _, dup := bySlot[r.ID]; dup || r.Slot != slot {
				return fmt.Errorf("ListSlot(%s) yields %s (%s) twice or in the wrong slot", slot, r.ID, r.Slot)
			}
			bySlot[r.ID] = r.Clone()
		}
	}
	n := 0
	for _, trace := range w.allTraces() {
		recs, err := w.list(trace)
		if err != nil {
			return err
		}
		if err := c.observe(trace, recs, 0, w.clock.ms.Load()); err != nil {
			return err
		}
		for _, r := range recs {
			if !reflect.DeepEqual(bySlot[r.ID], r) {
				return fmt.Errorf("%s: ListSlot and ListTrace disagree", r.ID)
			}
		}
		n += len(recs)
	}
	if n != len(bySlot) {
		return fmt.Errorf("traces hold %d records, slots %d", n, len(bySlot))
	}
	return nil
}

// run drives g for steps steps, checking after each; it returns the number
// of steps run and the first violation.
func (w *invWorld) run(g *invGen, c *invChecker, steps int) (int, error) {
	for n := 0; n < steps && !g.s.done(); n++ {
		trace, added, err := g.step()
		if err == nil {
			var recs []blackboard.Record
			if recs, err = w.list(trace); err == nil {
				err = c.observeStep(trace, recs, added, &g.call, w.clock.ms.Load())
			}
		}
		if err != nil {
			return n, fmt.Errorf("step %d: %w", n, err)
		}
	}
	return steps, c.final(w)
}

func invOpenSQLite(t *testing.T) store.Store {
	s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "bk.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// invStores are the stores the invariant tests run against, with the steps
// to run, divided by raceDiv under the race detector (which slows the pure-Go
// SQLite driver about tenfold) and by 4 more with -short.
var invStores = []struct {
	name           string
	open           func(t *testing.T) store.Store
	steps, raceDiv int
}{
	{"memstore", func(t *testing.T) store.Store { return memstore.New() }, 10000, 4},
	{"sqlite", invOpenSQLite, 1500, 4},
}

func invSteps(steps, raceDiv int) int {
	if bi, ok := debug.ReadBuildInfo(); ok && slices.Contains(bi.Settings, debug.BuildSetting{Key: "-race", Value: "true"}) {
		steps /= raceDiv
	}
	if testing.Short() {
		steps /= 4
	}
	return steps
}

func invSeedFor(t *testing.T) uint64 {
	seed := *invSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay with: go test ./kernel -run '^%s$' -invseed %d", strings.Split(t.Name(), "/")[0], seed)
		}
	})
	return seed
}

// TestInvariants runs seeded random operations through every handle against
// each store and checks the invariants after every step.
func TestInvariants(t *testing.T) {
	for _, st := range invStores {
		t.Run(st.name, func(t *testing.T) {
			seed, steps := invSeedFor(t), invSteps(st.steps, st.raceDiv)
			src := newInvRNG(seed)
			w := newInvWorld(t, st.open(t), src, 2, true)
			c := newInvChecker(w.m)
			if _, err := w.run(&invGen{w: w, s: src}, c, steps); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			t.Logf("seed %d: %d steps, %d records", seed, steps, len(c.first))
		})
	}
}

// TestInvariantsConcurrent runs generators on several goroutines over a few
// shared traces, then checks the invariants on the final store and that
// every record any goroutine was handed is still there, unchanged but for
// a permitted status move. (Persistent scope stays off: a persistent
// constraint committed in one trace while another trace decides has no
// order the checker could rely on.)
func TestInvariantsConcurrent(t *testing.T) {
	for _, st := range invStores {
		t.Run(st.name, func(t *testing.T) {
			seed := invSeedFor(t)
			const goroutines = 4
			steps := invSteps(st.steps/goroutines/2, st.raceDiv)
			w := newInvWorld(t, st.open(t), newInvRNG(seed), 3, false)
			gens := make([]*invGen, goroutines)
			errs := make([]error, goroutines)
			var wg sync.WaitGroup
			for i := range gens {
				gens[i] = &invGen{w: w, s: newInvRNG(seed + uint64(i) + 1)}
				wg.Go(func() {
					for n := range steps {
						if _, _, err := gens[i].step(); err != nil {
							errs[i] = fmt.Errorf("goroutine %d step %d: %w", i, n, err)
							return
						}
					}
				})
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			c := newInvChecker(w.m)
			for _, trace := range w.traces {
				recs, err := w.list(trace)
				if err == nil {
					err = c.observe(trace, recs, -1, w.clock.ms.Load())
				}
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
			}
			if err := c.final(w); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			for _, g := range gens {
				for _, r := range g.got {
					now := c.last[r.ID]
					if !reflect.DeepEqual(invStripped(now), invStripped(r)) ||
						r.Status != blackboard.StatusActive && (now.Status != r.Status || now.Reason != r.Reason) {
						t.Fatalf("seed %d: %s handed out as %+v, now %+v", seed, r.ID, r, now)
					}
				}
			}
			t.Logf("seed %d: %d goroutines × %d steps, %d records", seed, goroutines, steps, len(c.first))
		})
	}
}

// invZeroSource always chooses the first option: the paper's thresholds and a
// strict registry.
type invZeroSource struct{}

func (invZeroSource) intn(int) int { return 0 }
func (invZeroSource) done() bool   { return false }

// TestCheckerCatchesViolations feeds the checker a store listing doctored
// in one way at a time, and expects it to name the violation: a checker
// that never fails proves nothing.
func TestCheckerCatchesViolations(t *testing.T) {
	w := newInvWorld(t, memstore.New(), invZeroSource{}, 1, true)
	ctx, tr := w.ctx, w.traces[0]
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	percept := func(kind string, p blackboard.Payload, conf *float64, ttl time.Duration) {
		must(w.tool.Write(ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Percepts, Kind: kind, Payload: p, Confidence: conf, TTL: ttl}))
	}
	submit := func(slot blackboard.Slot, kind string, p blackboard.Payload) {
		must(w.planner.Submit(ctx, kernel.Entry{TraceID: tr, Slot: slot, Kind: kind, Payload: p}))
	}
	// Records 1-2 percepts, 3 a bound constraint, 4 a disabled one, 5-7 a
	// belief (proposal, artifact, belief), 8-9 a plan, 10-11 a refund, 12 a
	// rejected action, 13 a percept that expires.
	percept("charge", blackboard.Payload{"amount": 10}, new(0.9), 0)
	percept("refund", blackboard.Payload{"is_duplicate": false}, nil, 0)
	must(w.sym.CommitConstraint(ctx, tr, kernel.Constraint{Name: "no_duplicate", Enabled: true, BlocksField: "is_duplicate", BindPercept: "refund"}, ""))
	must(w.sym.CommitConstraint(ctx, tr, kernel.Constraint{Name: "no_danger", BlocksField: "danger"}, ""))
	submit(blackboard.Beliefs, "refund_due", blackboard.Payload{"value": true, "depends_on": []string{"charge"}})
	submit(blackboard.Plans, "plan", blackboard.Payload{"steps": []any{map[string]any{"action": "issue_refund", "requires_beliefs": []string{"refund_due"}}}})
	submit(blackboard.Actions, "issue_refund", blackboard.Payload{"requires_beliefs": []string{"refund_due"}, "danger": true, "is_duplicate": false})
	submit(blackboard.Actions, "wire_money", blackboard.Payload{"requires_beliefs": []string{}})
	percept("sensor", nil, nil, time.Millisecond)
	w.clock.Advance(5 * time.Millisecond)
	must(w.k.Expire(ctx, tr))
	clean, err := w.list(tr)
	if err != nil || len(clean) != 13 || clean[10].Reason != reason.Committed || clean[11].Reason != reason.UnknownActionType || clean[12].Status != blackboard.StatusExpired {
		t.Fatalf("scenario: %d records, %v", len(clean), err)
	}
	now := w.clock.ms.Load()
	if err := newInvChecker(w.m).observe(tr, clean, -1, now); err != nil {
		t.Fatalf("clean listing: %v", err)
	}
	doctor := func(edit func(r []blackboard.Record) []blackboard.Record) []blackboard.Record {
		cp := make([]blackboard.Record, len(clean))
		for i := range clean {
			cp[i] = clean[i].Clone()
		}
		return edit(cp)
	}
	both := func(i int, key string, v any) func(r []blackboard.Record) []blackboard.Record { // a proposal and its committed twin
		return func(r []blackboard.Record) []blackboard.Record {
			r[i].Payload[key], r[i+2].Payload[key] = v, v
			return r
		}
	}
	for _, tc := range []struct {
		name  string
		edit  func(r []blackboard.Record) []blackboard.Record
		prior int // records of the clean listing the checker saw in an earlier step
		want  string
	}{
		{"stale evidence", func(r []blackboard.Record) []blackboard.Record { r[0].Payload["stale"] = true; return r }, 0, "stale percept"},
		{"expired evidence", func(r []blackboard.Record) []blackboard.Record {
			r[0].Provenance.TTLMS, r[0].Provenance.TimestampMS = 1, r[0].Provenance.TimestampMS-10
			return r
		}, 0, "stale percept"},
		{"unresolved conflict", func(r []blackboard.Record) []blackboard.Record {
			r[0].Payload["conflict"], r[0].Provenance.Confidence = true, new(0.6)
			return r
		}, 0, "unresolved conflict"},
		{"low confidence", func(r []blackboard.Record) []blackboard.Record {
			r[0].Provenance.Confidence = new(0.4)
			return r
		}, 0, "low-confidence"},
		{"no dependencies", both(4, "depends_on", []any{}), 0, "without dependencies"},
		{"dependency in another trace", both(4, "depends_on", []any{"percepts:elsewhere:1"}), 0, "not a percept of its trace"},
		{"belief without artifact", func(r []blackboard.Record) []blackboard.Record { r[6].EvidenceRefs = nil; return r }, 0, "evidence refs"},
		{"artifact not the kernel's", func(r []blackboard.Record) []blackboard.Record {
			r[5].Provenance.Role = blackboard.RoleEvidence
			return r
		}, 0, "kernel artifact"},
		{"false belief", both(4, "value", false), 0, "not committed or not true"},
		{"no required beliefs", both(9, "requires_beliefs", []any{}), 0, "no required beliefs"},
		{"enabled constraint blocks", func(r []blackboard.Record) []blackboard.Record { r[3].Payload["enabled"] = true; return r }, 0, "blocked by constraint constraints:t0:4"},
		{"bound field contradicts percept", func(r []blackboard.Record) []blackboard.Record { r[1].Payload["is_duplicate"] = true; return r }, 0, "bound field is_duplicate"},
		{"payload type is another action", both(9, "type", "wire_money"), 0, "payload type wire_money"},
		{"derived flag forged", both(9, "uses_stale_data", true), 0, "derived flag uses_stale_data"},
		{"derived flag rewritten", func(r []blackboard.Record) []blackboard.Record {
			r[10].Payload["uses_conflicted_data"] = true
			return r
		}, 0, "with derived flags"},
		{"action committed by the planner", func(r []blackboard.Record) []blackboard.Record {
			r[10].Provenance.Role = blackboard.RolePlanner
			return r
		}, 0, "planner wrote actions in commit"},
		{"committed twice", func(r []blackboard.Record) []blackboard.Record {
			dup := r[10].Clone()
			dup.ID = "actions:t0:14"
			return append(r, dup)
		}, 0, "has 2 committed records"},
		{"superseded without a commit", func(r []blackboard.Record) []blackboard.Record {
			r[11].Reason = reason.SupersededByCommit
			return r
		}, 0, "has 0 committed records"},
		{"proposal past its TTL", func(r []blackboard.Record) []blackboard.Record {
			r[9].Provenance.TTLMS, r[10].Provenance.TTLMS, r[9].Provenance.TimestampMS = 1, 1, r[9].Provenance.TimestampMS-10
			return r
		}, 0, "past its TTL"},
		{"expired without a code", func(r []blackboard.Record) []blackboard.Record { r[12].Reason = ""; return r }, 0, "EXPIRED without a code"},
		{"invalidated without a code", func(r []blackboard.Record) []blackboard.Record { r[11].Reason = ""; return r }, 0, "INVALIDATED without a code"},
		{"expired early", func(r []blackboard.Record) []blackboard.Record { r[12].Provenance.TTLMS = 1e6; return r }, 0, "is EXPIRED"},
		{"commit invalidated", func(r []blackboard.Record) []blackboard.Record {
			r[6].Status, r[6].Reason = blackboard.StatusInvalidated, reason.StaleEvidence
			return r
		}, 0, "committed record was invalidated"},
		{"malformed id", func(r []blackboard.Record) []blackboard.Record { r[1].ID = "percepts:t0:x"; return r }, 0, `want id "percepts:t0:2"`},
		{"reference out of reach", func(r []blackboard.Record) []blackboard.Record {
			r[1].Provenance.InputRefs = []string{"percepts:elsewhere:1"}
			return r
		}, 0, "out of reach"},
		{"unregistered type", func(r []blackboard.Record) []blackboard.Record {
			r[9].Kind, r[10].Kind = "Issue_Refund", "Issue_Refund"
			r[7].Payload["steps"].([]any)[0].(map[string]any)["action"] = "Issue_Refund"
			r[8].Payload = r[7].Payload.Clone()
			return r
		}, 0, "unregistered action type Issue_Refund"},
		{"payload overwritten", func(r []blackboard.Record) []blackboard.Record { r[0].Payload["amount"] = 11.0; return r }, 13, "overwritten"},
		{"confidence overwritten", func(r []blackboard.Record) []blackboard.Record {
			r[0].Provenance.Confidence = new(0.95)
			return r
		}, 13, "overwritten"},
		{"evidence refs overwritten", func(r []blackboard.Record) []blackboard.Record { r[6].EvidenceRefs = []string{}; return r }, 13, "overwritten"},
		{"nested payload overwritten", func(r []blackboard.Record) []blackboard.Record {
			r[7].Payload["steps"].([]any)[0].(map[string]any)["action"] = "ship"
			return r
		}, 13, "overwritten"},
		{"status moved back", func(r []blackboard.Record) []blackboard.Record {
			r[11].Status, r[11].Reason = blackboard.StatusActive, ""
			return r
		}, 13, "moved from INVALIDATED"},
		{"reason rewritten", func(r []blackboard.Record) []blackboard.Record {
			r[11].Reason = reason.MissingEvidence
			return r
		}, 13, "moved from INVALIDATED"},
		{"records lost", func(r []blackboard.Record) []blackboard.Record { return r[:5] }, 13, "shrank"},
		{"unannounced records", func(r []blackboard.Record) []blackboard.Record { return r }, 7, "appended, want 0"},
	} {
		c, added := newInvChecker(w.m), -1
		if tc.prior > 0 {
			if err := c.observe(tr, clean[:tc.prior], -1, now); err != nil {
				t.Fatal(err)
			}
			added = 0
		}
		err := c.observe(tr, doctor(tc.edit), added, now)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: checker says %v; want a violation mentioning %q", tc.name, err, tc.want)
		}
	}
	// Under a belief spec the clean belief lacks its evidence; under a
	// registry without issue_refund the action is unregistered.
	m := w.m
	m.beliefSpecs = map[string][]string{"refund_due": {"sensor"}}
	if err := newInvChecker(m).observe(tr, clean, -1, now); err == nil || !strings.Contains(err.Error(), "without depending on sensor") {
		t.Errorf("belief spec: checker says %v", err)
	}
	m = w.m
	m.specs = map[string]kernel.ActionSpec{}
	if err := newInvChecker(m).observe(tr, clean, -1, now); err == nil || !strings.Contains(err.Error(), "unregistered action type issue_refund") {
		t.Errorf("registry: checker says %v", err)
	}
}

// TestCheckerCatchesNewRules does the same for the rules of current
// evidence, trusted and grounded predictions, used-up groundings,
// once-keys, scoped fail-closed constraints, namespaces and reads that do
// not write: a listing (and calls) doctored one way at a time, or a model
// that disagrees with the kernel's configuration.
func TestCheckerCatchesNewRules(t *testing.T) {
	issueRefund := func(edit func(*kernel.ActionSpec)) func(*invModel) {
		return func(m *invModel) {
			sp := m.specs["issue_refund"]
			edit(&sp)
			m.specs["issue_refund"] = sp
		}
	}
	repeatable := issueRefund(func(sp *kernel.ActionSpec) { sp.Repeatable = true })
	w := newInvWorld(t, memstore.New(), invZeroSource{}, 2, true, repeatable)
	ctx, tr := w.ctx, w.traces[0]
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	percept := func(trace, kind string, p blackboard.Payload, conf *float64, ttl time.Duration, scope blackboard.Scope) {
		t.Helper()
		must(w.tool.Write(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: kind, Payload: p, Confidence: conf, TTL: ttl, Scope: scope}))
	}
	submit := func(p invProposer, slot blackboard.Slot, kind string, pl blackboard.Payload) kernel.Decision {
		t.Helper()
		d, err := p.Submit(ctx, kernel.Entry{TraceID: tr, Slot: slot, Kind: kind, Payload: pl})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	// Another trace's persistent reading, and the foreign application's
	// persistent rule: neither is the trace's to use.
	percept("t1", "sensor", blackboard.Payload{}, nil, 0, blackboard.ScopePersistent)
	must(w.fsym.CommitConstraint(ctx, w.ftrace, kernel.Constraint{Name: "no_danger", Enabled: true, BlocksField: "danger"}, blackboard.ScopePersistent))
	// Records 1-3 percepts; 4 a constraint on notify only; 5-7 and 8-10
	// beliefs; 11-12 a simulator's prediction; 13-14 a notify; 15-16 and
	// 17-18 two refunds on one belief (the type is repeatable here); 19 a
	// newer charge; 20-21 a plan; 22 a percept that has expired when 23, a
	// refused action, is decided.
	percept(tr, "charge", blackboard.Payload{"amount": 10.0}, new(0.9), 0, "")
	percept(tr, "sensor", blackboard.Payload{}, nil, 0, "")
	percept(tr, "refund", blackboard.Payload{"is_duplicate": false}, nil, 0, "")
	must(w.sym.CommitConstraint(ctx, tr, kernel.Constraint{Name: "no_danger", Enabled: true, BlocksField: "danger", AppliesTo: []string{"notify"}}, ""))
	submit(w.planner, blackboard.Beliefs, "refund_due", blackboard.Payload{"value": true, "depends_on": []string{"charge"}})
	submit(w.planner, blackboard.Beliefs, "alarm", blackboard.Payload{"value": true, "depends_on": []string{"sensor"}})
	submit(w.sim, blackboard.Predictions, "pred", blackboard.Payload{"action_type": "notify", "expected_outcome": 1.0, "requires_beliefs": []string{"alarm"}})
	submit(w.planner, blackboard.Actions, "notify", blackboard.Payload{"requires_beliefs": []string{"alarm"}, "danger": false})
	for range 2 {
		submit(w.planner, blackboard.Actions, "issue_refund", blackboard.Payload{"requires_beliefs": []string{"refund_due"}, "danger": true, "order_id": 7.0})
	}
	percept(tr, "charge", blackboard.Payload{"amount": 11.0}, nil, 0, "")
	submit(w.planner, blackboard.Plans, "plan", blackboard.Payload{"steps": []any{map[string]any{"action": "issue_refund", "requires_beliefs": []string{"refund_due"}}}})
	percept(tr, "sensor", blackboard.Payload{"reading": 22.0}, nil, time.Millisecond, "")
	w.clock.Advance(5 * time.Millisecond)
	refused := submit(w.planner, blackboard.Actions, "wire_money", blackboard.Payload{"requires_beliefs": []string{}})
	clean, err := w.list(tr)
	if err != nil || len(clean) != 23 || refused.Code != reason.UnknownActionType || clean[21].Status != blackboard.StatusExpired ||
		slices.ContainsFunc(clean[:21], func(r blackboard.Record) bool {
			return r.Status != blackboard.StatusActive && r.Reason != reason.SupersededByCommit
		}) {
		t.Fatalf("scenario: %d records, %v, %+v", len(clean), err, clean)
	}
	now := w.clock.ms.Load()
	// checker returns a checker under model m that has seen the other
	// traces, and the trace up to (not including) record n as prior.
	checker := func(m invModel, prior []blackboard.Record) *invChecker {
		t.Helper()
		c := newInvChecker(m)
		for _, other := range []string{"t1", w.ftrace} {
			recs, err := w.list(other)
			if err == nil {
				err = c.observe(other, recs, -1, now)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if prior != nil {
			if err := c.observe(tr, prior, -1, now); err != nil {
				t.Fatalf("prior listing: %v", err)
			}
		}
		return c
	}
	if err := checker(w.m, nil).observe(tr, clean, -1, now); err != nil {
		t.Fatalf("clean listing: %v", err)
	}
	doctor := func(edit func(r []blackboard.Record)) []blackboard.Record {
		cp := make([]blackboard.Record, len(clean))
		for i := range clean {
			cp[i] = clean[i].Clone()
		}
		edit(cp)
		return cp
	}
	both := func(i, j int, edit func(r *blackboard.Record)) func(r []blackboard.Record) { // a proposal and its committed record
		return func(r []blackboard.Record) { edit(&r[i]); edit(&r[j]) }
	}
	ttl := func(ms int64) func(r *blackboard.Record) {
		return func(r *blackboard.Record) { r.Provenance.TTLMS = ms }
	}
	set := func(key string, v any) func(r *blackboard.Record) {
		return func(r *blackboard.Record) { r.Payload[key] = v }
	}
	unset := func(key string) func(r *blackboard.Record) {
		return func(r *blackboard.Record) { delete(r.Payload, key) }
	}
	for _, tc := range []struct {
		name string
		edit func(r []blackboard.Record)
		want string
	}{
		{"committed action keeps its TTL", both(12, 13, ttl(60000)), "committed actions keeps ttl 60000 ms, want 0"},
		{"committed plan keeps its TTL", both(19, 20, ttl(60000)), "committed plans keeps ttl 60000 ms, want 0"},
		{"belief drops its TTL", func(r []blackboard.Record) { r[4].Provenance.TTLMS = 60000 }, "committed beliefs keeps ttl 0 ms, want 60000"},
		{"belief on a superseded observation", func(r []blackboard.Record) {
			r[1].Kind = "charge"
			both(4, 6, set("depends_on", []any{"percepts:t0:1"}))(r)
		}, "superseded by percepts:t0:2"},
		{"source flags low confidence", func(r []blackboard.Record) { r[0].Payload["low_confidence"] = true }, "low-confidence percept percepts:t0:1"},
		{"newer observation stale at the gate", func(r []blackboard.Record) { r[18].Payload["stale"] = true }, "stale percept percepts:t0:19"},
		{"arbitrated conflict not flagged", func(r []blackboard.Record) { r[0].Payload["conflict"] = true }, "with derived flags"},
		{"prediction from an untrusted proposer", func(r []blackboard.Record) { r[10].Provenance.Role = blackboard.RolePlanner }, "no counted prediction for notify"},
		{"prediction resting on no belief", both(10, 11, set("requires_beliefs", []any{})), "prediction without beliefs"},
		{"constraint applies to the type", func(r []blackboard.Record) { r[3].Payload["applies_to"] = []any{"issue_refund"} }, "constraints:t0:4: danger=true"},
		{"constraint for every type", func(r []blackboard.Record) { delete(r[3].Payload, "applies_to") }, "constraints:t0:4: danger=true"},
		{"absent field does not fail closed", both(12, 13, unset("danger")), "constraints:t0:4: the proposal has no danger"},
		{"planner writes persistent scope", both(4, 6, func(r *blackboard.Record) { r.Scope = blackboard.ScopePersistent }), "a planner wrote persistent scope"},
		{"reference to another trace's unshared record", func(r []blackboard.Record) { r[0].Provenance.InputRefs = []string{"percepts:t1:1"} }, "is not shared"},
		{"reference to another namespace's constraint", func(r []blackboard.Record) { r[0].Provenance.InputRefs = []string{"constraints@foreign:f0:1"} },
			`namespace "foreign" is not shared with namespace "default"`},
		{"record of another namespace", func(r []blackboard.Record) { r[2].Namespace = "other" }, `namespace "other" in a trace of namespace "default"`},
	} {
		err := checker(w.m, nil).observe(tr, doctor(tc.edit), -1, now)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: checker says %v; want a violation mentioning %q", tc.name, err, tc.want)
		}
	}
	// Models that disagree with the kernel's configuration.
	for _, tc := range []struct {
		name  string
		tweak func(*invModel)
		want  string // "" for none
	}{
		{"grounding used up", issueRefund(func(sp *kernel.ActionSpec) { sp.Repeatable = false }), "grounding already used by actions:t0:16"},
		{"once-key used up", issueRefund(func(sp *kernel.ActionSpec) { sp.Once = &kernel.OnceKey{Fields: []string{"order_id"}} }),
			"once-key default/issue_refund/[7] used up by [actions:t0:16]"},
		{"once-key with room", issueRefund(func(sp *kernel.ActionSpec) { sp.Once = &kernel.OnceKey{Fields: []string{"order_id"}, Limit: 2} }), ""},
		{"once-key field missing", issueRefund(func(sp *kernel.ActionSpec) { sp.Once = &kernel.OnceKey{Fields: []string{"order"}} }), "once-key field order missing"},
		{"only the planner predicts", func(m *invModel) {
			sp := m.specs["notify"]
			sp.Predictors = []string{"planner"}
			m.specs["notify"] = sp
		}, "no counted prediction for notify"},
	} {
		m := w.m
		m.specs = maps.Clone(m.specs)
		tc.tweak(&m)
		err := checker(m, nil).observe(tr, clean, -1, now)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: checker says %v; want %q", tc.name, err, tc.want)
		}
	}
	m := w.m
	m.shared = map[blackboard.Slot][]string{blackboard.Percepts: {"sensor"}}
	if err := checker(m, nil).observe(tr, doctor(func(r []blackboard.Record) { r[0].Provenance.InputRefs = []string{"percepts:t1:1"} }), -1, now); err != nil {
		t.Errorf("shared percept kind: checker says %v", err)
	}
	// Calls: the trace before the refused action (record 22 not yet
	// expired), then after it.
	before := doctor(func(r []blackboard.Record) {
		r[21].Status, r[21].Reason = blackboard.StatusActive, reason.Committed
	})[:22]
	view, err := w.k.Reader().View(ctx, tr, false)
	if err != nil {
		t.Fatal(err)
	}
	submitted := invCall{op: opSubmit, role: blackboard.RolePlanner, d: refused}
	if err := checker(w.m, before).observeStep(tr, clean, 1, &submitted, now); err != nil {
		t.Errorf("the refused action: %v", err)
	}
	for _, tc := range []struct {
		name  string
		prior []blackboard.Record
		after []blackboard.Record
		call  invCall
		want  string
	}{
		{"decision with another code", before, clean, func() invCall { c := submitted; c.d.Code = reason.UngroundedAction; return c }(),
			"the model decides UNKNOWN_ACTION_TYPE"},
		{"decision naming a failed record", before, clean, func() invCall { c := submitted; c.d.Failed = "percepts:t0:1"; return c }(),
			`failed "percepts:t0:1"), the model decides UNKNOWN_ACTION_TYPE (rule "", failed "")`},
		{"decision with another id", before, clean, func() invCall { c := submitted; c.d.ID = "decision:x"; return c }(), `decision "decision:x"`},
		{"view writes an expiry", before[:22], clean[:22], invCall{op: opView, view: view}, "EXPIRED (TTL_EXPIRED) after a View"},
		{"view shows an expired record", clean, clean, invCall{op: opView, view: func() kernel.View {
			v := view
			v.Committed = maps.Clone(v.Committed)
			v.Committed[blackboard.Percepts] = maps.Clone(v.Committed[blackboard.Percepts])
			v.Committed[blackboard.Percepts]["sensor"] = clean[21].Payload
			return v
		}()}, "view of t0: percepts sensor"},
		{"write moves a status", before[:22], clean[:22], invCall{op: opWrite}, "after a write"},
		{"Expire miscounts", before[:22], clean[:22], invCall{op: opExpire}, "Expire(t0) returned 0, 1 records were past their TTL"},
		{"Commit of a decided proposal", clean, clean, invCall{op: opCommit, role: blackboard.RolePlanner, id: "actions:t0:23"}, "want kernel: invalid proposal"},
	} {
		err := checker(w.m, tc.prior).observeStep(tr, tc.after, len(tc.after)-len(tc.prior), &tc.call, now)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: checker says %v; want a violation mentioning %q", tc.name, err, tc.want)
		}
	}
}

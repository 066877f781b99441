package kernel_test

// Model-based tests: random sequences of operations through every handle,
// checked after every step against invariants written from the paper and
// the package documentation, not from the kernel's code. The generator and
// the checker are shared with FuzzOps (fuzz_ops_test.go).

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

	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

var invSeed = flag.Uint64("invseed", 0, "seed for TestInvariants* (0: a fresh one, printed on failure)")

// Vocabulary of the generator: small, so that random operations meet.
var (
	invPercepts = []string{"charge", "refund", "sensor"}
	invBeliefs  = []string{"refund_due", "alarm", "charge_ok"}
	// Registered types, a case and a whitespace alias, an unregistered one.
	invActions = []string{"issue_refund", "notify", "ship", kernel.FallbackQueueForReview, "Issue_Refund", "issue_refund ", "wire_money"}
	invDerived = []string{kernel.KeyUsesStaleData, kernel.KeyUsesConflictedData, kernel.KeyUsesLowConfidenceData, kernel.KeyHasNegativePrediction}
	// Constraint names with the field each usually blocks on.
	invConstraints = map[string]string{"no_duplicate": "is_duplicate", "no_danger": "danger", "block_stale": kernel.KeyUsesStaleData,
		"block_conflicted": kernel.KeyUsesConflictedData, "block_low": kernel.KeyUsesLowConfidenceData, "block_negative": kernel.KeyHasNegativePrediction}
	invConstraintNames = slices.Sorted(maps.Keys(invConstraints))
	invFields          = append([]string{"is_duplicate", "danger", ""}, invDerived...)
	invBinds           = []string{"refund", "charge", "nowhere"}
	// JSON values, truthy and not.
	invValues = []any{true, false, nil, 0.0, 1.0, -2.5, "", "yes", []any{}, []any{"x"}, map[string]any{}, map[string]any{"a": 1.0}}
	invConfs  = []float64{0, 0.2, 0.3, 0.49, 0.5, 0.69, 0.7, 0.71, 0.8, 0.9, 1}
	invTTLs   = []time.Duration{time.Millisecond, 1500 * time.Microsecond, 5 * time.Millisecond, 20 * time.Millisecond, 100 * time.Millisecond, time.Second}
	invTicks  = []time.Duration{0, time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond, 100 * time.Millisecond, time.Second}
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
func (s invRNG) intn(n int) int        { return s.r.IntN(n) }
func (invRNG) done() bool              { return false }
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
	beliefSpecs        map[string][]string // belief kind -> percept kinds it must rest on
}

// invWorld is a kernel with a handle per role, a fake clock and its traces.
type invWorld struct {
	ctx        context.Context
	k          *kernel.Kernel
	store      kernel.Store
	clock      *fakeClock
	m          invModel
	traces     []string
	persistent bool         // the generator may write persistent-scope records
	episodes   bool         // the generator opens new traces as it goes (one goroutine only)
	mu         sync.RWMutex // steps hold it shared, clock moves exclusive: one op sees one time
	tool       *kernel.Tool
	planner    *kernel.Planner
	sym        *kernel.Symbolic
	ev         *kernel.EvidenceValidator
	sim        *kernel.Simulator
}

// newInvWorld builds an invWorld whose configuration the source chooses.
// With persistent set (one goroutine only) the generator also writes
// persistent-scope records and opens new traces as it goes; without, the
// goroutines share the first traces for good.
func newInvWorld(tb testing.TB, store kernel.Store, s invSource, traces int, persistent bool) *invWorld {
	tb.Helper()
	m := invModel{minConf: pick(s, []float64{0.5, 0.3, 0.8}), threshold: pick(s, []float64{0.7, 0.5, 0.9}), strict: oneIn(s, 2),
		specs: map[string]kernel.ActionSpec{}, beliefSpecs: map[string][]string{}}
	for _, sp := range invSpecs {
		m.specs[sp.Type] = sp
	}
	if oneIn(s, 2) {
		m.beliefSpecs["refund_due"] = []string{"charge"}
	}
	w := &invWorld{ctx: context.Background(), store: store, clock: newFakeClock(), m: m, persistent: persistent, episodes: persistent}
	opts := []kernel.Option{kernel.WithStore(store), kernel.WithClock(w.clock.Now), kernel.WithActionSpecs(invSpecs...),
		kernel.WithMinConfidence(m.minConf), kernel.WithConflictThreshold(m.threshold)}
	if m.strict {
		opts = append(opts, kernel.WithStrictActions())
	}
	for kind, deps := range m.beliefSpecs {
		opts = append(opts, kernel.WithBeliefSpecs(kernel.BeliefSpec{Kind: kind, DependsOn: deps}))
	}
	k, err := kernel.New(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { k.Close() })
	w.k = k
	w.tool, w.planner, w.sym = k.Tool("tool"), k.Planner("planner"), k.Symbolic("symbolic")
	w.ev, w.sim = k.EvidenceValidator("evidence"), k.Simulator("simulator")
	for i := range traces {
		w.traces = append(w.traces, "t"+strconv.Itoa(i))
	}
	return w
}

func (w *invWorld) handles() []kernel.Handle {
	return []kernel.Handle{w.tool, w.planner, w.sym, w.ev, w.sim}
}

func (w *invWorld) list(trace string) ([]kernel.Record, error) {
	var out []kernel.Record
	for r, err := range w.store.ListTrace(w.ctx, trace) {
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// invGen generates operations for one goroutine.
type invGen struct {
	w    *invWorld
	s    invSource
	goal string          // the action type the generator works towards
	ids  []string        // ids handed to this generator, for references and re-commits
	got  []kernel.Record // records as handed out, for the overwrite check
}

func (g *invGen) saw(recs ...kernel.Record) {
	for _, r := range recs {
		if r.ID == "" {
			continue
		}
		if len(g.ids) < 256 {
			g.ids = append(g.ids, r.ID)
		} else {
			g.ids[g.s.intn(256)] = r.ID
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
		return fmt.Sprintf("%s:%s:%d", pick(g.s, kernel.AllSlots()), pick(g.s, g.w.traces), 1+g.s.intn(40))
	}
	return "percepts:elsewhere:1"
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

func (g *invGen) extras(p kernel.Payload) kernel.Payload {
	for _, key := range append([]string{"is_duplicate", "danger", kernel.KeyRequirePrediction}, invDerived...) {
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
	return kernel.Confidence(pick(g.s, invConfs))
}

func (g *invGen) ttl() time.Duration {
	if g.s.intn(4) > 0 {
		return 0
	}
	return pick(g.s, invTTLs)
}

func (g *invGen) scope() kernel.Scope {
	if g.w.persistent && oneIn(g.s, 8) {
		return kernel.ScopePersistent
	}
	return 0
}

// invTyped accepts an error only if it is a typed refusal.
func invTyped(err error) error {
	var kerr *kernel.Error
	if !errors.As(err, &kerr) || kerr.Code == "" {
		return fmt.Errorf("untyped error: %w", err)
	}
	for _, s := range []error{kernel.ErrInvalidInput, kernel.ErrInvalidPayload, kernel.ErrPayloadTooLarge,
		kernel.ErrInvalidProposal, kernel.ErrInvalidReference, kernel.ErrPermission} {
		if errors.Is(err, s) {
			return nil
		}
	}
	return fmt.Errorf("unexpected error: %w", err)
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
// authority accepted, a Decision the store disagrees with).
func (g *invGen) step() (trace string, added int, err error) {
	w, s := g.w, g.s
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
	if op == 4 { // the clock moves while no operation runs
		w.mu.Lock()
		w.clock.Advance(pick(s, invTicks))
		w.mu.Unlock()
		return trace, 0, nil
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	e := kernel.Entry{TraceID: trace}
	switch op {
	case 0, 1, 2, 3: // a tool observes
		p := kernel.Payload{"amount": float64(s.intn(250))}
		for _, f := range []struct {
			key string
			n   int
		}{{kernel.KeyStale, 4}, {kernel.KeyConflict, 4}, {kernel.KeyLowConfidence, 8}, {"is_duplicate", 3}, {"danger", 4}} {
			if oneIn(s, f.n) {
				p[f.key] = pick(s, invValues)
			}
		}
		e.Slot, e.Kind, e.Payload, e.Confidence, e.TTL, e.Scope = kernel.Percepts, pick(s, invPercepts), p, g.confidence(), g.ttl(), g.scope()
		if oneIn(s, 8) {
			e.InputRefs = []string{g.ref()}
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
		e.Slot, e.Kind, e.Payload, e.Scope = kernel.Beliefs, kind, kernel.Payload{kernel.KeyValue: val, kernel.KeyDependsOn: deps}, g.scope()
		if oneIn(s, 10) {
			delete(e.Payload, kernel.KeyDependsOn)
		}
		if oneIn(s, 6) {
			e.EvidenceRefs = []string{g.ref()} // a planner naming evidence of its choosing
		}
		return g.propose(w.planner, e)
	case 9, 10: // a plan
		var steps []any
		for range 1 + s.intn(2) {
			a := g.action()
			steps = append(steps, map[string]any(g.extras(kernel.Payload{kernel.KeyAction: a, kernel.KeyRequiresBeliefs: g.requires(a)})))
		}
		e.Slot, e.Kind, e.Payload = kernel.Plans, "plan", kernel.Payload{kernel.KeySteps: steps}
		return g.propose(w.planner, e)
	case 11: // a prediction, from the planner or the simulator
		e.Slot, e.Kind = kernel.Predictions, "pred"
		a := g.action()
		e.Payload = kernel.Payload{kernel.KeyActionType: a, kernel.KeyExpectedOutcome: pick(s, []float64{-1, -0.5, 0, 0.5, 1, 2}),
			kernel.KeyRequiresBeliefs: g.requires(a)}
		return g.propose(pick(s, []invProposer{w.planner, w.sim}), e)
	case 12, 13, 14: // an action
		a := g.action()
		e.Slot, e.Kind, e.Payload = kernel.Actions, a, g.extras(kernel.Payload{kernel.KeyRequiresBeliefs: g.requires(a)})
		if oneIn(s, 6) { // what an executor dispatching on the payload would run
			e.Payload[kernel.KeyType] = pick(s, []any{a, g.action(), 1.0})
		}
		e.TTL = g.ttl()
		return g.propose(w.planner, e)
	case 15: // a constraint, bound or not, on a plain or a derived field
		name := pick(s, invConstraintNames)
		c := kernel.Constraint{Name: name, Enabled: !oneIn(s, 4), BlocksField: invConstraints[name]}
		if oneIn(s, 4) {
			c.BlocksField = pick(s, invFields)
		}
		if oneIn(s, 2) {
			c.BindPercept = pick(s, invBinds)
		}
		rec, err := w.sym.CommitConstraint(w.ctx, trace, c, g.scope())
		return g.wrote(trace, rec, err)
	case 16: // a constraint written raw: defaults, a name other than its kind, a TTL
		p := kernel.Payload{}
		if !oneIn(s, 3) {
			p[kernel.KeyBlocksField] = pick(s, invFields)
		}
		if oneIn(s, 3) {
			p[kernel.KeyEnabled] = oneIn(s, 2)
		}
		if oneIn(s, 3) {
			p[kernel.KeyName] = pick(s, invConstraintNames)
		}
		if oneIn(s, 3) {
			p[kernel.KeyBindPercept] = pick(s, invBinds)
		}
		e.Slot, e.Kind, e.Payload, e.TTL, e.Scope = kernel.Constraints, pick(s, invConstraintNames), p, g.ttl(), g.scope()
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
		d, err := pick(s, []invProposer{w.planner, w.sim}).Commit(w.ctx, trace, id)
		return g.decided(trace, 0, d, err)
	case 18: // a write outside authority (or inside it, by chance)
		h := pick(s, w.handles())
		slot, mode := kernel.Slot(s.intn(9)), kernel.Mode(s.intn(4))
		e.Slot, e.Mode, e.Kind, e.Payload = slot, mode, "k", validPayload[slot].Clone()
		rec, err := h.Write(w.ctx, e)
		own, has := table1[h.Role()][slot]
		switch {
		case !slot.Valid() || mode > kernel.ModeCommit:
			if !errors.Is(err, kernel.ErrInvalidInput) {
				return trace, 0, fmt.Errorf("%s wrote slot %d mode %d: %v", h.Role(), slot, mode, err)
			}
		case !has || mode != 0 && mode != own:
			if !errors.Is(err, kernel.ErrPermission) {
				return trace, 0, fmt.Errorf("%s wrote %s in mode %d outside its authority: %v", h.Role(), slot, mode, err)
			}
		}
		return g.wrote(trace, rec, err)
	case 19: // an evidence validator forges a belief artifact
		e.Slot, e.Kind = kernel.Evidence, "belief_validation"
		e.Payload = kernel.Payload{"passed": true, "proposal_id": g.ref(), "belief": pick(s, invBeliefs)}
		e.InputRefs = []string{g.ref()}
		return g.write(w.ev, e)
	default: // reads that expire
		if oneIn(s, 2) {
			_, err := w.k.Expire(w.ctx, trace)
			return g.wrote(trace, kernel.Record{}, err)
		}
		_, err := pick(s, w.handles()).View(w.ctx, trace, kernel.ViewOptions{IncludePersistent: oneIn(s, 2)})
		return g.wrote(trace, kernel.Record{}, err)
	}
}

func (g *invGen) write(h kernel.Handle, e kernel.Entry) (string, int, error) {
	rec, err := h.Write(g.w.ctx, e)
	return g.wrote(e.TraceID, rec, err)
}

func (g *invGen) wrote(trace string, rec kernel.Record, err error) (string, int, error) {
	if err != nil {
		return trace, 0, invTyped(err)
	}
	g.saw(rec)
	return trace, min(len(rec.ID), 1), nil
}

// propose writes a proposal and leaves it pending, or submits it.
func (g *invGen) propose(p invProposer, e kernel.Entry) (string, int, error) {
	if e.TTL == 0 && oneIn(g.s, 12) {
		e.TTL = g.ttl()
	}
	if oneIn(g.s, 4) {
		return g.write(p, e)
	}
	d, err := p.Submit(g.w.ctx, e)
	return g.decided(e.TraceID, 1, d, err)
}

// decided checks a Decision against the store. proposed is the number of
// proposals the call wrote before deciding.
func (g *invGen) decided(trace string, proposed int, d kernel.Decision, err error) (string, int, error) {
	if err != nil {
		return trace, 0, invTyped(err)
	}
	ctx, st := g.w.ctx, g.w.store
	p, perr := st.Get(ctx, d.ProposalID)
	if perr != nil || p.Mode != kernel.ModePropose || p.Status != kernel.StatusInvalidated {
		return trace, 0, fmt.Errorf("decided proposal %q in store: %+v, %v", d.ProposalID, p, perr)
	}
	g.saw(p)
	if !d.Committed() {
		if d.Record.ID != "" || d.EvidenceID != "" || p.Reason != d.Code {
			return trace, 0, fmt.Errorf("rejection %s: record %q evidence %q, proposal reason %s", d.Code, d.Record.ID, d.EvidenceID, p.Reason)
		}
		return trace, proposed, nil
	}
	r, rerr := st.Get(ctx, d.Record.ID)
	if rerr != nil || !reflect.DeepEqual(r, d.Record) || p.Reason != kernel.CodeSupersededByCommit || r.Reason != d.Code {
		return trace, 0, fmt.Errorf("commit %s: Decision.Record %+v, store %+v (%v), proposal reason %s", d.Code, d.Record, r, rerr, p.Reason)
	}
	g.saw(r)
	if (d.EvidenceID != "") != (r.Slot == kernel.Beliefs) {
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
	first   map[string]kernel.Record // each record as first seen
	last    map[string]kernel.Record // and as last seen
	seq     map[string]int           // order of first sight, across traces
	traces  map[string][]kernel.Record
	persist []kernel.Record // persistent constraints in order of first sight
}

func newInvChecker(m invModel) *invChecker {
	return &invChecker{m: m, first: map[string]kernel.Record{}, last: map[string]kernel.Record{}, seq: map[string]int{},
		traces: map[string][]kernel.Record{}}
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

// invLive reports whether r was committed and within its TTL at ms.
func invLive(r *kernel.Record, ms int64) bool {
	p := r.Provenance
	return r.Mode == kernel.ModeCommit && (p.TTLMS == 0 || ms <= p.TimestampMS+p.TTLMS)
}

func invStripped(r kernel.Record) kernel.Record { r.Status, r.Reason = 0, ""; return r }

// invSame reports whether a and b agree in everything but status and
// reason: reflect.DeepEqual, written out for speed (the checker compares
// every record of a trace after every step).
func invSame(a, b *kernel.Record) bool {
	pa, pb := a.Provenance, b.Provenance
	return a.ID == b.ID && a.Slot == b.Slot && a.Mode == b.Mode && a.Kind == b.Kind && a.Scope == b.Scope &&
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
	if _, err := kernel.ParseSlot(slot); !ok || err != nil || i <= 0 {
		return false
	}
	n := rest[i+1:]
	return n != "" && strings.Trim(n, "0123456789") == ""
}

// observe checks the listing of one trace after a step that was to append
// added records to it (-1: any number), with the clock at nowMS.
func (c *invChecker) observe(trace string, recs []kernel.Record, added int, nowMS int64) error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	old := c.traces[trace]
	if len(recs) < len(old) {
		return fmt.Errorf("trace %s shrank from %d to %d records", trace, len(old), len(recs))
	}
	if added >= 0 && len(recs)-len(old) != added {
		bad("trace %s: %d records appended, want %d", trace, len(recs)-len(old), added)
	}
	twins := map[string]int{}
	for i := range recs {
		r := &recs[i]
		if want := r.Slot.String() + ":" + trace + ":" + strconv.Itoa(i+1); r.ID != want || r.TraceID() != trace {
			bad("record %d of trace %s is %q of trace %q, want id %q", i+1, trace, r.ID, r.TraceID(), want)
		}
		if i >= len(old) {
			if _, dup := c.first[r.ID]; dup {
				bad("id %s appended twice", r.ID)
			}
			c.first[r.ID], c.last[r.ID], c.seq[r.ID] = r.Clone(), *r, len(c.seq)
			if r.Slot == kernel.Constraints && r.Scope == kernel.ScopePersistent {
				c.persist = append(c.persist, *r)
			}
		} else if f := c.first[r.ID]; !invSame(r, &f) {
			bad("%s overwritten:\n was %+v\n now %+v", r.ID, c.first[r.ID], *r)
		}
		prev := c.last[r.ID]
		switch {
		case prev.Status != kernel.StatusActive && (r.Status != prev.Status || r.Reason != prev.Reason):
			bad("%s moved from %s (%s) to %s (%s)", r.ID, prev.Status, prev.Reason, r.Status, r.Reason)
		case r.Status == kernel.StatusActive && r.Reason != prev.Reason:
			bad("%s is ACTIVE but its reason moved from %q to %q", r.ID, prev.Reason, r.Reason)
		case r.Status != kernel.StatusActive && r.Reason == "":
			bad("%s is %s without a code", r.ID, r.Status)
		case r.Status == kernel.StatusExpired && (r.Reason != kernel.CodeTTLExpired || invLive(&kernel.Record{Mode: kernel.ModeCommit, Provenance: r.Provenance}, nowMS)):
			bad("%s is EXPIRED (%s) with ttl %d ms at ts %d, now %d", r.ID, r.Reason, r.Provenance.TTLMS, r.Provenance.TimestampMS, nowMS)
		case r.Status == kernel.StatusInvalidated && r.Mode != kernel.ModePropose:
			bad("%s: a committed record was invalidated (%s)", r.ID, r.Reason)
		case r.Status == kernel.StatusActive && (r.Mode == kernel.ModePropose) != (r.Reason == ""):
			bad("%s: active %s record with reason %q", r.ID, r.Mode, r.Reason)
		case !r.Status.Valid():
			bad("%s: status %d", r.ID, r.Status)
		}
		c.last[r.ID] = *r
		if r.Provenance.Role == kernel.RoleKernel && r.Slot != kernel.Evidence && len(r.Provenance.InputRefs) > 0 {
			twins[r.Provenance.InputRefs[0]]++
		}
	}
	c.traces[trace] = recs
	for i := range recs {
		r := &recs[i]
		superseded := r.Mode == kernel.ModePropose && r.Status == kernel.StatusInvalidated && r.Reason == kernel.CodeSupersededByCommit
		if n := twins[r.ID]; n > 1 || superseded != (n == 1) {
			bad("%s (%s, %s) has %d committed records", r.ID, r.Status, r.Reason, n)
		}
		if i >= len(old) {
			if err := c.verify(recs, i); err != nil {
				bad("%s: %v", r.ID, err)
			}
		}
	}
	return errors.Join(errs...)
}

// verify checks a record when it first appears: its authority, its
// references and, for what the kernel commits, the decision that let it in.
func (c *invChecker) verify(recs []kernel.Record, i int) error {
	r := &recs[i]
	role := r.Provenance.Role
	if role == kernel.RoleKernel {
		if r.Mode != kernel.ModeCommit || r.Slot == kernel.Percepts || r.Slot == kernel.Constraints {
			return fmt.Errorf("kernel wrote %s in %s", r.Slot, r.Mode)
		}
	} else if own, ok := table1[role][r.Slot]; !ok || own != r.Mode {
		return fmt.Errorf("%s wrote %s in %s", role, r.Slot, r.Mode)
	}
	if r.Mode == kernel.ModeCommit && r.Status == kernel.StatusActive && r.Reason != kernel.CodeCommitted && r.Reason != kernel.CodePlanFeasible {
		return fmt.Errorf("committed with reason %s", r.Reason)
	}
	for _, ref := range slices.Concat(r.Provenance.InputRefs, r.EvidenceRefs) {
		f, ok := c.first[ref]
		if !ok || f.TraceID() != r.TraceID() && f.Scope != kernel.ScopePersistent || f.TraceID() == r.TraceID() && c.seq[ref] >= c.seq[r.ID] {
			return fmt.Errorf("reference %q out of reach", ref)
		}
	}
	if r.Slot == kernel.Beliefs && r.Mode == kernel.ModePropose {
		for _, d := range invStrs(r.Payload[kernel.KeyDependsOn]) {
			if f, ok := c.first[d]; invIDShaped(d) && (!ok || f.Slot != kernel.Percepts || f.TraceID() != r.TraceID()) {
				return fmt.Errorf("depends on %q, not a percept of its trace", d)
			}
		}
	}
	if role != kernel.RoleKernel {
		return nil
	}
	if r.Slot == kernel.Evidence {
		if i+1 >= len(recs) || !slices.Equal(recs[i+1].EvidenceRefs, []string{r.ID}) || recs[i+1].Slot != kernel.Beliefs {
			return errors.New("kernel evidence artifact without its belief")
		}
		return nil
	}
	// A committed record names its proposal first.
	if len(r.Provenance.InputRefs) == 0 {
		return errors.New("committed without naming a proposal")
	}
	pi := slices.IndexFunc(recs[:i], func(q kernel.Record) bool { return q.ID == r.Provenance.InputRefs[0] })
	if pi < 0 {
		return errors.New("its proposal is not an earlier record of the trace")
	}
	p := &recs[pi]
	ts := r.Provenance.TimestampMS
	if p.Slot != r.Slot || p.Kind != r.Kind || p.Mode != kernel.ModePropose || p.Scope != r.Scope ||
		p.Provenance.TTLMS != r.Provenance.TTLMS || !reflect.DeepEqual(p.Provenance.Confidence, r.Provenance.Confidence) {
		return fmt.Errorf("does not match its proposal %s", p.ID)
	}
	if !invLive(&kernel.Record{Mode: kernel.ModeCommit, Provenance: p.Provenance}, ts) {
		return fmt.Errorf("proposal %s was past its TTL at commit time %d", p.ID, ts)
	}
	if r.Slot != kernel.Actions && !reflect.DeepEqual(r.Payload, p.Payload) {
		return fmt.Errorf("payload %v differs from proposal's %v", r.Payload, p.Payload)
	}
	switch r.Slot {
	case kernel.Beliefs:
		return c.verifyBelief(recs, i, p)
	case kernel.Predictions:
		for _, kind := range invStrs(p.Payload[kernel.KeyRequiresBeliefs]) {
			if c.latest(recs, i, kernel.Beliefs, kind, ts) == nil {
				return fmt.Errorf("prediction without committed belief %s", kind)
			}
		}
	case kernel.Plans:
		if r.Status == kernel.StatusActive && r.Reason != kernel.CodePlanFeasible {
			return fmt.Errorf("plan committed with %s", r.Reason)
		}
		for _, st := range p.Payload[kernel.KeySteps].([]any) {
			step := kernel.Payload(st.(map[string]any))
			a, _ := step[kernel.KeyAction].(string)
			if _, why := c.gate(recs, i, a, invStrs(step[kernel.KeyRequiresBeliefs]), step, false); why != "" {
				return fmt.Errorf("plan step %s: %s", a, why)
			}
		}
	case kernel.Actions:
		if t, ok := p.Payload[kernel.KeyType]; ok && t != any(r.Kind) {
			return fmt.Errorf("action of kind %s committed with payload type %v", r.Kind, t)
		}
		flags, why := c.gate(recs, i, r.Kind, invStrs(p.Payload[kernel.KeyRequiresBeliefs]), p.Payload, true)
		if why != "" {
			return errors.New(why)
		}
		want := p.Payload.Clone()
		for k, v := range flags {
			want[k] = v
		}
		if !reflect.DeepEqual(r.Payload, want) {
			return fmt.Errorf("committed payload %v, want the proposal's with derived flags %v", r.Payload, want)
		}
	}
	return nil
}

// latest returns the latest record of kind in slot before recs[i] that was
// committed and live at ms.
func (c *invChecker) latest(recs []kernel.Record, i int, slot kernel.Slot, kind string, ms int64) *kernel.Record {
	for j := i - 1; j >= 0; j-- {
		if q := &recs[j]; q.Slot == slot && q.Kind == kind && invLive(q, ms) {
			return q
		}
	}
	return nil
}

func (c *invChecker) byID(recs []kernel.Record, i int, id string) *kernel.Record {
	for j := i - 1; j >= 0; j-- {
		if recs[j].ID == id {
			return &recs[j]
		}
	}
	return nil
}

// verifyBelief checks the evidence a committed belief rests on.
func (c *invChecker) verifyBelief(recs []kernel.Record, i int, p *kernel.Record) error {
	r := &recs[i]
	ts := r.Provenance.TimestampMS
	deps := invStrs(p.Payload[kernel.KeyDependsOn])
	if len(deps) == 0 {
		return errors.New("belief committed without dependencies")
	}
	var used, kinds []string
	for _, d := range deps {
		pr := c.byID(recs, i, d)
		if pr == nil || pr.Slot != kernel.Percepts {
			pr = nil
			for j := i - 1; j >= 0 && pr == nil; j-- {
				if recs[j].Slot == kernel.Percepts && recs[j].Kind == d {
					pr = &recs[j]
				}
			}
		}
		if pr == nil {
			return fmt.Errorf("belief committed with no percept for %q", d)
		}
		conf := pr.Provenance.Confidence
		switch {
		case invTruthy(pr.Payload[kernel.KeyStale]) || !invLive(pr, ts):
			return fmt.Errorf("belief committed on stale percept %s at %d", pr.ID, ts)
		case invTruthy(pr.Payload[kernel.KeyConflict]) && (conf == nil || *conf < c.m.threshold):
			return fmt.Errorf("belief committed on unresolved conflict %s", pr.ID)
		case conf != nil && *conf < c.m.minConf:
			return fmt.Errorf("belief committed on low-confidence percept %s", pr.ID)
		}
		used = append(used, pr.ID)
		kinds = append(kinds, d, pr.Kind)
	}
	for _, need := range c.m.beliefSpecs[r.Kind] {
		if !slices.Contains(kinds, need) {
			return fmt.Errorf("belief committed without depending on %s", need)
		}
	}
	if len(r.EvidenceRefs) != 1 {
		return fmt.Errorf("belief with evidence refs %v", r.EvidenceRefs)
	}
	ev := c.byID(recs, i, r.EvidenceRefs[0])
	if ev == nil || ev.Slot != kernel.Evidence || ev.Provenance.Role != kernel.RoleKernel || ev.Payload["passed"] != true ||
		ev.Payload["proposal_id"] != p.ID || ev.Provenance.TimestampMS != ts || !slices.Equal(ev.Provenance.InputRefs, used) {
		return fmt.Errorf("belief evidence %s is not a passed kernel artifact on %v", r.EvidenceRefs[0], used)
	}
	for _, id := range used {
		if !slices.Contains(r.Provenance.InputRefs, id) {
			return fmt.Errorf("belief does not name percept %s", id)
		}
	}
	return nil
}

// gate recomputes what a plan step or an action must satisfy to commit at
// recs[i]. It returns the derived flags and why it should have been
// refused ("" if it may commit).
func (c *invChecker) gate(recs []kernel.Record, i int, action string, reqs []string, payload kernel.Payload, isAction bool) (map[string]bool, string) {
	r := &recs[i]
	ts := r.Provenance.TimestampMS
	spec, registered := c.m.specs[action]
	if c.m.strict && !registered {
		return nil, "unregistered action type " + action
	}
	if len(reqs) == 0 && !spec.SafeFallback {
		return nil, "no required beliefs"
	}
	for _, need := range spec.MinBeliefs {
		if !slices.Contains(reqs, need) {
			return nil, "fewer beliefs than the spec demands"
		}
	}
	if isAction && spec.RequirePlan {
		plan := slices.ContainsFunc(recs[:i], func(q kernel.Record) bool {
			return q.Slot == kernel.Plans && invLive(&q, ts) && slices.ContainsFunc(q.Payload[kernel.KeySteps].([]any), func(st any) bool {
				return st.(map[string]any)[kernel.KeyAction] == action
			})
		})
		if !plan {
			return nil, "no committed plan for " + action
		}
	}
	var beliefs []*kernel.Record
	for _, kind := range reqs {
		b := c.latest(recs, i, kernel.Beliefs, kind, ts)
		if b == nil || !invTruthy(b.Payload[kernel.KeyValue]) {
			return nil, "required belief " + kind + " not committed or not true"
		}
		if isAction && !slices.Contains(r.Provenance.InputRefs, b.ID) {
			return nil, "action does not name belief " + b.ID
		}
		beliefs = append(beliefs, b)
	}
	flags := map[string]bool{}
	for _, k := range invDerived {
		flags[k] = false
	}
	negative, preds := false, 0
	for j := range i {
		q := &recs[j]
		if q.Slot == kernel.Predictions && invLive(q, ts) && q.Payload[kernel.KeyActionType] == action {
			preds++
			negative = negative || q.Payload[kernel.KeyExpectedOutcome].(float64) < 0
		}
	}
	if isAction && (spec.RequirePrediction || invTruthy(payload[kernel.KeyRequirePrediction])) && (preds == 0 || negative) {
		return nil, "prediction gate"
	}
	flags[kernel.KeyHasNegativePrediction] = negative
	for _, b := range beliefs {
		for _, evID := range b.EvidenceRefs {
			ev := c.byID(recs, i, evID)
			if ev == nil {
				return nil, "belief evidence " + evID + " missing"
			}
			for _, pid := range ev.Provenance.InputRefs {
				pr := c.byID(recs, i, pid)
				if pr == nil || pr.Slot != kernel.Percepts {
					continue
				}
				conf := pr.Provenance.Confidence
				flags[kernel.KeyUsesStaleData] = flags[kernel.KeyUsesStaleData] || invTruthy(pr.Payload[kernel.KeyStale]) || !invLive(pr, ts)
				flags[kernel.KeyUsesConflictedData] = flags[kernel.KeyUsesConflictedData] || invTruthy(pr.Payload[kernel.KeyConflict])
				flags[kernel.KeyUsesLowConfidenceData] = flags[kernel.KeyUsesLowConfidenceData] ||
					invTruthy(pr.Payload[kernel.KeyLowConfidence]) || conf != nil && *conf < c.m.minConf
			}
		}
	}
	for k, v := range flags {
		if given, ok := payload[k]; ok && invTruthy(given) != v {
			return nil, fmt.Sprintf("derived flag %s given as %v, evidence says %v", k, given, v)
		}
	}
	for _, con := range c.inForce(recs, i) {
		enabled, ok := con.Payload[kernel.KeyEnabled].(bool)
		field, _ := con.Payload[kernel.KeyBlocksField].(string)
		bind, _ := con.Payload[kernel.KeyBindPercept].(string)
		if ok && !enabled || field == "" {
			continue
		}
		value, derived := any(flags[field]), slices.Contains(invDerived, field)
		if !derived && bind != "" {
			if spec.SafeFallback {
				continue // a bound constraint guards an effect a safe fallback does not have
			}
			var pr *kernel.Record
			for j := i - 1; j >= 0 && pr == nil; j-- {
				if recs[j].Slot == kernel.Percepts && recs[j].Kind == bind {
					pr = &recs[j]
				}
			}
			if pr == nil {
				return nil, "constraint " + con.ID + " bound to a percept never observed"
			}
			observed, has := pr.Payload[field]
			if given, ok := payload[field]; ok && (!has || !reflect.DeepEqual(given, observed)) {
				return nil, fmt.Sprintf("bound field %s given as %v, percept %s says %v", field, given, pr.ID, observed)
			}
			value = observed
		} else if !derived {
			value = payload[field]
		}
		if invTruthy(value) {
			return nil, fmt.Sprintf("blocked by constraint %s (%s=%v)", con.ID, field, value)
		}
	}
	return flags, ""
}

// inForce returns the constraints in force at recs[i]: the latest live one
// of each kind of the trace's episode constraints, and of the persistent
// ones seen before it.
func (c *invChecker) inForce(recs []kernel.Record, i int) []kernel.Record {
	ts := recs[i].Provenance.TimestampMS
	var out []kernel.Record
	seen := map[string]bool{}
	for j := i - 1; j >= 0; j-- {
		if q := recs[j]; q.Slot == kernel.Constraints && q.Scope == kernel.ScopeEpisode && invLive(&q, ts) && !seen[q.Kind] {
			seen[q.Kind] = true
			out = append(out, q)
		}
	}
	clear(seen)
	for j := len(c.persist) - 1; j >= 0; j-- {
		if q := c.persist[j]; c.seq[q.ID] < c.seq[recs[i].ID] && invLive(&q, ts) && !seen[q.Kind] {
			seen[q.Kind] = true
			out = append(out, q)
		}
	}
	return out
}

// final checks every trace again without a step, and that the store's slot
// listings hold exactly what its trace listings hold.
func (c *invChecker) final(w *invWorld) error {
	bySlot := map[string]kernel.Record{}
	for _, slot := range kernel.AllSlots() {
		for r, err := range w.store.ListSlot(w.ctx, slot, kernel.Filter{}) {
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
	for _, trace := range w.traces {
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
			var recs []kernel.Record
			if recs, err = w.list(trace); err == nil {
				err = c.observe(trace, recs, added, w.clock.ms.Load())
			}
		}
		if err != nil {
			return n, fmt.Errorf("step %d: %w", n, err)
		}
	}
	return steps, c.final(w)
}

// invStores are the stores the invariant tests run against, with the steps
// to run, divided by raceDiv under the race detector (which slows the pure-Go
// SQLite driver about tenfold) and by 4 more with -short.
var invStores = []struct {
	name           string
	open           func(t *testing.T) kernel.Store
	steps, raceDiv int
}{
	{"memstore", func(t *testing.T) kernel.Store { return kernel.NewMemStore() }, 10000, 4},
	{"sqlite", func(t *testing.T) kernel.Store {
		s, err := sqlitestore.Open(filepath.Join(t.TempDir(), "bk.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}, 1500, 4},
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
						r.Status != kernel.StatusActive && (now.Status != r.Status || now.Reason != r.Reason) {
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
	w := newInvWorld(t, kernel.NewMemStore(), invZeroSource{}, 1, true)
	ctx, tr := w.ctx, w.traces[0]
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	percept := func(kind string, p kernel.Payload, conf *float64, ttl time.Duration) {
		must(w.tool.Write(ctx, kernel.Entry{TraceID: tr, Slot: kernel.Percepts, Kind: kind, Payload: p, Confidence: conf, TTL: ttl}))
	}
	submit := func(slot kernel.Slot, kind string, p kernel.Payload) {
		must(w.planner.Submit(ctx, kernel.Entry{TraceID: tr, Slot: slot, Kind: kind, Payload: p}))
	}
	// Records 1-2 percepts, 3 a bound constraint, 4 a disabled one, 5-7 a
	// belief (proposal, artifact, belief), 8-9 a plan, 10-11 a refund, 12 a
	// rejected action, 13 a percept that expires.
	percept("charge", kernel.Payload{"amount": 10}, kernel.Confidence(0.9), 0)
	percept("refund", kernel.Payload{"is_duplicate": false}, nil, 0)
	must(w.sym.CommitConstraint(ctx, tr, kernel.Constraint{Name: "no_duplicate", Enabled: true, BlocksField: "is_duplicate", BindPercept: "refund"}, 0))
	must(w.sym.CommitConstraint(ctx, tr, kernel.Constraint{Name: "no_danger", BlocksField: "danger"}, 0))
	submit(kernel.Beliefs, "refund_due", kernel.Payload{kernel.KeyValue: true, kernel.KeyDependsOn: []string{"charge"}})
	submit(kernel.Plans, "plan", kernel.Payload{kernel.KeySteps: []any{map[string]any{kernel.KeyAction: "issue_refund", kernel.KeyRequiresBeliefs: []string{"refund_due"}}}})
	submit(kernel.Actions, "issue_refund", kernel.Payload{kernel.KeyRequiresBeliefs: []string{"refund_due"}, "danger": true, "is_duplicate": false})
	submit(kernel.Actions, "wire_money", kernel.Payload{kernel.KeyRequiresBeliefs: []string{}})
	percept("sensor", nil, nil, time.Millisecond)
	w.clock.Advance(5 * time.Millisecond)
	must(w.k.Expire(ctx, tr))
	clean, err := w.list(tr)
	if err != nil || len(clean) != 13 || clean[10].Reason != kernel.CodeCommitted || clean[11].Reason != kernel.CodeUnknownActionType || clean[12].Status != kernel.StatusExpired {
		t.Fatalf("scenario: %d records, %v", len(clean), err)
	}
	now := w.clock.ms.Load()
	if err := newInvChecker(w.m).observe(tr, clean, -1, now); err != nil {
		t.Fatalf("clean listing: %v", err)
	}
	doctor := func(edit func(r []kernel.Record) []kernel.Record) []kernel.Record {
		cp := make([]kernel.Record, len(clean))
		for i := range clean {
			cp[i] = clean[i].Clone()
		}
		return edit(cp)
	}
	both := func(i int, key string, v any) func(r []kernel.Record) []kernel.Record { // a proposal and its committed twin
		return func(r []kernel.Record) []kernel.Record { r[i].Payload[key], r[i+2].Payload[key] = v, v; return r }
	}
	for _, tc := range []struct {
		name  string
		edit  func(r []kernel.Record) []kernel.Record
		prior int // records of the clean listing the checker saw in an earlier step
		want  string
	}{
		{"stale evidence", func(r []kernel.Record) []kernel.Record { r[0].Payload["stale"] = true; return r }, 0, "stale percept"},
		{"expired evidence", func(r []kernel.Record) []kernel.Record {
			r[0].Provenance.TTLMS, r[0].Provenance.TimestampMS = 1, r[0].Provenance.TimestampMS-10
			return r
		}, 0, "stale percept"},
		{"unresolved conflict", func(r []kernel.Record) []kernel.Record {
			r[0].Payload["conflict"], r[0].Provenance.Confidence = true, kernel.Confidence(0.6)
			return r
		}, 0, "unresolved conflict"},
		{"low confidence", func(r []kernel.Record) []kernel.Record { r[0].Provenance.Confidence = kernel.Confidence(0.4); return r }, 0, "low-confidence"},
		{"no dependencies", both(4, kernel.KeyDependsOn, []any{}), 0, "without dependencies"},
		{"dependency in another trace", both(4, kernel.KeyDependsOn, []any{"percepts:elsewhere:1"}), 0, "not a percept of its trace"},
		{"belief without artifact", func(r []kernel.Record) []kernel.Record { r[6].EvidenceRefs = nil; return r }, 0, "evidence refs"},
		{"artifact not the kernel's", func(r []kernel.Record) []kernel.Record { r[5].Provenance.Role = kernel.RoleEvidence; return r }, 0, "kernel artifact"},
		{"false belief", both(4, kernel.KeyValue, false), 0, "not committed or not true"},
		{"no required beliefs", both(9, kernel.KeyRequiresBeliefs, []any{}), 0, "no required beliefs"},
		{"enabled constraint blocks", func(r []kernel.Record) []kernel.Record { r[3].Payload[kernel.KeyEnabled] = true; return r }, 0, "blocked by constraint constraints:t0:4"},
		{"bound field contradicts percept", func(r []kernel.Record) []kernel.Record { r[1].Payload["is_duplicate"] = true; return r }, 0, "bound field is_duplicate"},
		{"payload type is another action", both(9, kernel.KeyType, "wire_money"), 0, "payload type wire_money"},
		{"derived flag forged", both(9, kernel.KeyUsesStaleData, true), 0, "derived flag uses_stale_data"},
		{"derived flag rewritten", func(r []kernel.Record) []kernel.Record { r[10].Payload[kernel.KeyUsesConflictedData] = true; return r }, 0, "with derived flags"},
		{"action committed by the planner", func(r []kernel.Record) []kernel.Record { r[10].Provenance.Role = kernel.RolePlanner; return r }, 0, "planner wrote actions in commit"},
		{"committed twice", func(r []kernel.Record) []kernel.Record {
			dup := r[10].Clone()
			dup.ID = "actions:t0:14"
			return append(r, dup)
		}, 0, "has 2 committed records"},
		{"superseded without a commit", func(r []kernel.Record) []kernel.Record { r[11].Reason = kernel.CodeSupersededByCommit; return r }, 0, "has 0 committed records"},
		{"proposal past its TTL", func(r []kernel.Record) []kernel.Record {
			r[9].Provenance.TTLMS, r[10].Provenance.TTLMS, r[9].Provenance.TimestampMS = 1, 1, r[9].Provenance.TimestampMS-10
			return r
		}, 0, "past its TTL"},
		{"expired without a code", func(r []kernel.Record) []kernel.Record { r[12].Reason = ""; return r }, 0, "EXPIRED without a code"},
		{"invalidated without a code", func(r []kernel.Record) []kernel.Record { r[11].Reason = ""; return r }, 0, "INVALIDATED without a code"},
		{"expired early", func(r []kernel.Record) []kernel.Record { r[12].Provenance.TTLMS = 1e6; return r }, 0, "is EXPIRED"},
		{"commit invalidated", func(r []kernel.Record) []kernel.Record {
			r[6].Status, r[6].Reason = kernel.StatusInvalidated, kernel.CodeStaleEvidence
			return r
		}, 0, "committed record was invalidated"},
		{"malformed id", func(r []kernel.Record) []kernel.Record { r[1].ID = "percepts:t0:x"; return r }, 0, `want id "percepts:t0:2"`},
		{"reference out of reach", func(r []kernel.Record) []kernel.Record {
			r[1].Provenance.InputRefs = []string{"percepts:elsewhere:1"}
			return r
		}, 0, "out of reach"},
		{"unregistered type", func(r []kernel.Record) []kernel.Record {
			r[9].Kind, r[10].Kind = "Issue_Refund", "Issue_Refund"
			r[7].Payload[kernel.KeySteps].([]any)[0].(map[string]any)[kernel.KeyAction] = "Issue_Refund"
			r[8].Payload = r[7].Payload.Clone()
			return r
		}, 0, "unregistered action type Issue_Refund"},
		{"payload overwritten", func(r []kernel.Record) []kernel.Record { r[0].Payload["amount"] = 11.0; return r }, 13, "overwritten"},
		{"confidence overwritten", func(r []kernel.Record) []kernel.Record {
			r[0].Provenance.Confidence = kernel.Confidence(0.95)
			return r
		}, 13, "overwritten"},
		{"evidence refs overwritten", func(r []kernel.Record) []kernel.Record { r[6].EvidenceRefs = []string{}; return r }, 13, "overwritten"},
		{"nested payload overwritten", func(r []kernel.Record) []kernel.Record {
			r[7].Payload[kernel.KeySteps].([]any)[0].(map[string]any)[kernel.KeyAction] = "ship"
			return r
		}, 13, "overwritten"},
		{"status moved back", func(r []kernel.Record) []kernel.Record {
			r[11].Status, r[11].Reason = kernel.StatusActive, ""
			return r
		}, 13, "moved from INVALIDATED"},
		{"reason rewritten", func(r []kernel.Record) []kernel.Record { r[11].Reason = kernel.CodeMissingEvidence; return r }, 13, "moved from INVALIDATED"},
		{"records lost", func(r []kernel.Record) []kernel.Record { return r[:5] }, 13, "shrank"},
		{"unannounced records", func(r []kernel.Record) []kernel.Record { return r }, 7, "appended, want 0"},
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

package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
)

// t0 is the fake clock's start; any fixed instant would do.
var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

// fakeClock is a clock tests move by hand, so TTL tests never sleep.
type fakeClock struct{ ms atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ms.Store(t0.UnixMilli())
	return c
}

func (c *fakeClock) Now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *fakeClock) Advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// fixture is a kernel on a memory store the test can inspect, with one handle
// per role and a fake clock.
type fixture struct {
	t       *testing.T
	ctx     context.Context
	k       *kernel.Kernel
	store   *memstore.Store
	clock   *fakeClock
	tool    kernel.Handle
	planner *kernel.Proposer
	sym     *kernel.Symbolic
	ev      kernel.Handle
	sim     *kernel.Proposer
	marked  []blackboard.Record // store contents at the last mark()
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureWith(t, kernel.Config{})
}

// newFixtureWith is newFixture with the kernel built from cfg; the
// fixture's store and clock fill the fields cfg leaves zero.
func newFixtureWith(t *testing.T, cfg kernel.Config) *fixture {
	t.Helper()
	f := &fixture{t: t, ctx: context.Background(), store: memstore.New(), clock: newFakeClock()}
	if cfg.Store == nil {
		cfg.Store = f.store
	}
	if cfg.Clock == nil {
		cfg.Clock = f.clock.Now
	}
	k, err := kernel.New(cfg)
	if err != nil {
		t.Fatalf("kernel.New: %v", err)
	}
	t.Cleanup(func() {
		if err := k.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	f.k = k
	f.tool, f.planner, f.sym = k.Handle(blackboard.RoleTool, "tool"), k.Proposer(blackboard.RolePlanner, "planner"), k.Symbolic("symbolic")
	f.ev, f.sim = k.Handle(blackboard.RoleEvidence, "evidence"), k.Proposer(blackboard.RoleSimulator, "simulator")
	return f
}

// perceive commits a percept with an optional confidence (nil for none) and
// TTL (0 for none); it fails the test on error.
func (f *fixture) perceive(trace, kind string, p blackboard.Payload, conf *float64, ttl time.Duration) blackboard.Record {
	f.t.Helper()
	rec, err := f.tool.Write(f.ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: kind, Payload: p, Confidence: conf, TTL: ttl})
	if err != nil {
		f.t.Fatalf("percept %s: %v", kind, err)
	}
	return f.get(rec)
}

// constrain commits an enabled episode constraint blocking on field.
func (f *fixture) constrain(trace, name, field string) blackboard.Record {
	f.t.Helper()
	rec, err := f.sym.CommitConstraint(f.ctx, trace, kernel.Constraint{Name: name, Enabled: true, BlocksField: field}, "")
	if err != nil {
		f.t.Fatalf("constraint %s: %v", name, err)
	}
	return f.get(rec)
}

// propose submits a planner proposal. When the kernel decides it, propose
// checks that the store agrees with the Decision before returning.
func (f *fixture) propose(trace string, slot blackboard.Slot, kind string, p blackboard.Payload) (kernel.Decision, error) {
	f.t.Helper()
	d, err := f.planner.Submit(f.ctx, kernel.Entry{TraceID: trace, Slot: slot, Kind: kind, Payload: p})
	if err == nil {
		f.checkDecision(d)
	}
	return d, err
}

// mustPropose is propose for steps that must not error.
func (f *fixture) mustPropose(trace string, slot blackboard.Slot, kind string, p blackboard.Payload) kernel.Decision {
	f.t.Helper()
	d, err := f.propose(trace, slot, kind, p)
	if err != nil {
		f.t.Fatalf("propose %s %s: %v", slot, kind, err)
	}
	return d
}

// checkDecision verifies that the store holds what d says: the proposal
// INVALIDATED with SUPERSEDED_BY_COMMIT or the rejection code, and, when
// committed, the committed record (and belief evidence) ACTIVE with d.Code.
func (f *fixture) checkDecision(d kernel.Decision) {
	f.t.Helper()
	p := f.get(d.ProposalID)
	want := d.Code
	if d.Committed() {
		want = reason.SupersededByCommit
	}
	if p.Mode != blackboard.ModePropose || p.Status != blackboard.StatusInvalidated || p.Reason != want {
		f.t.Errorf("proposal %s in store: %s %s %s, want propose INVALIDATED %s", p.ID, p.Mode, p.Status, p.Reason, want)
	}
	if !d.Committed() {
		if d.CommittedID != "" || d.EvidenceID != "" {
			f.t.Errorf("rejected decision carries records %q %q", d.CommittedID, d.EvidenceID)
		}
		return
	}
	r := f.get(d.CommittedID)
	if r.Mode != blackboard.ModeCommit || r.Status != blackboard.StatusActive || r.Reason != d.Code ||
		r.Provenance.Role != blackboard.RoleKernel || r.Kind != p.Kind || r.Slot != p.Slot {
		f.t.Errorf("committed %s in store: %+v", r.ID, r)
	}
	if d.EvidenceID != "" && !slices.Contains(r.EvidenceRefs, d.EvidenceID) {
		f.t.Errorf("committed %s does not rest on the decision's evidence %s", r.ID, d.EvidenceID)
	}
}

// get reads a record straight from the store.
func (f *fixture) get(id string) blackboard.Record {
	f.t.Helper()
	r, err := f.store.Get(f.ctx, id)
	if err != nil {
		f.t.Fatalf("store.Get(%q): %v", id, err)
	}
	return r.Clone()
}

// dump returns every record in the store, slot by slot, in append order.
func (f *fixture) dump() []blackboard.Record {
	f.t.Helper()
	out := []blackboard.Record{} // never nil, so an empty mark is still a mark
	for _, slot := range blackboard.AllSlots() {
		for r, err := range f.store.ListSlot(f.ctx, slot, store.Filter{}) {
			if err != nil {
				f.t.Fatalf("ListSlot: %v", err)
			}
			out = append(out, deepCopy(f.t, r))
		}
	}
	return out
}

// deepCopy copies r through its JSON encoding rather than with
// Record.Clone, so that a shallow Clone cannot hide a change to the store
// from unchanged (the mark would share memory with the store).
func deepCopy(t *testing.T, r blackboard.Record) blackboard.Record {
	t.Helper()
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var c blackboard.Record
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// mark remembers the store contents; unchanged checks them against it.
func (f *fixture) mark() { f.marked = f.dump() }

func (f *fixture) unchanged() {
	f.t.Helper()
	if f.marked == nil {
		f.t.Fatal("unchanged called without mark")
	}
	if got := f.dump(); !reflect.DeepEqual(got, f.marked) {
		f.t.Errorf("store changed: had %d records, now %d", len(f.marked), len(got))
	}
}

// wantErr checks that err wraps sentinel and is a *kernel.Error with code.
func wantErr(t *testing.T, err, sentinel error, code reason.Code) {
	t.Helper()
	var kerr *kernel.Error
	switch {
	case err == nil:
		t.Errorf("no error, want %v [%s]", sentinel, code)
	case !errors.Is(err, sentinel):
		t.Errorf("error %v does not wrap %v", err, sentinel)
	case !errors.As(err, &kerr):
		t.Errorf("error %v is not a *kernel.Error", err)
	case kerr.Code != code || kernel.CodeOf(err) != code:
		t.Errorf("error %v has code %q, want %q", err, kerr.Code, code)
	}
}

// Payload builders for the shapes the kernel reads.

func belief(value bool, dependsOn ...string) blackboard.Payload {
	return blackboard.Payload{"value": value, "depends_on": dependsOn}
}

func step(action string, reqs ...string) blackboard.Payload {
	return blackboard.Payload{"action": action, "requires_beliefs": reqs}
}

func plan(steps ...blackboard.Payload) blackboard.Payload {
	l := make([]any, len(steps))
	for i, s := range steps {
		l[i] = map[string]any(s)
	}
	return blackboard.Payload{"steps": l}
}

func action(reqs ...string) blackboard.Payload {
	return blackboard.Payload{"requires_beliefs": reqs}
}

func prediction(actionType string, outcome float64, reqs ...string) blackboard.Payload {
	return blackboard.Payload{"action_type": actionType, "expected_outcome": outcome, "requires_beliefs": reqs}
}

// with returns a copy of p with extra fields set.
func with(p blackboard.Payload, kv ...any) blackboard.Payload {
	out := p.Clone()
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// groundedBelief commits a clean charge percept and a true belief
// refund_due on it, the starting point of most gating tests.
func (f *fixture) groundedBelief(trace string) kernel.Decision {
	f.t.Helper()
	f.perceive(trace, "charge", blackboard.Payload{"amount": 149.99}, nil, 0)
	d := f.mustPropose(trace, blackboard.Beliefs, "refund_due", belief(true, "charge"))
	if d.Code != reason.Committed {
		f.t.Fatalf("belief: %s", d.Code)
	}
	return d
}

// mustGet reads the record with that id through r.
func mustGet(t testing.TB, r kernel.Reader, id string) blackboard.Record {
	t.Helper()
	rec, err := r.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return rec
}

// written is what a Governor.Write returned: the id of the record and
// those of its follow records.
type written struct {
	ID       string
	Appended []string
}

// writeResult gathers Governor.Write's results.
func writeResult(id string, appended []string, err error) (written, error) {
	return written{id, appended}, err
}

package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

// The attacks of this file are the routes by which a hostile planner (or a
// careless integration) got an unsafe action past the gate before the gate
// learned current evidence, once-only actions, scoped and fail-closed
// constraints, scope rules and namespaces. Each is written as the attack and
// runs on both stores; each asserts that no unsafe action commits.

// arena is a kernel under attack on one store, with a fake clock.
type arena struct {
	t       *testing.T
	ctx     context.Context
	store   store.Store
	clock   *fakeClock
	k       *kernel.Kernel
	tool    kernel.Handle
	planner *kernel.Proposer
	sym     *kernel.Symbolic
	sim     *kernel.Proposer
	marked  []blackboard.Record
}

// stores lists the stores every attack runs on.
var stores = []struct {
	name string
	open func(t *testing.T) store.Store
}{
	{"memstore", func(*testing.T) store.Store { return memstore.New() }},
	{"sqlite", func(t *testing.T) store.Store {
		s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "bk.db"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
}

// attack runs fn against a fresh kernel on each store, configured by cfg
// when one is given.
func attack(t *testing.T, fn func(t *testing.T, a *arena), cfg ...kernel.Config) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			t.Cleanup(func() { s.Close() })
			fn(t, newArena(t, s, cfg...))
		})
	}
}

// newArena builds an arena over s, its kernel configured by cfg (at most
// one) over s and the arena's clock.
func newArena(t *testing.T, s store.Store, cfg ...kernel.Config) *arena {
	t.Helper()
	a := &arena{t: t, ctx: context.Background(), store: s, clock: newFakeClock()}
	var c kernel.Config
	if len(cfg) > 0 {
		c = cfg[0]
	}
	c.Store, c.Clock = s, a.clock.Now
	k, err := kernel.New(c)
	if err != nil {
		t.Fatalf("kernel.New: %v", err)
	}
	a.k = k
	a.tool, a.planner, a.sym, a.sim = k.Handle(blackboard.RoleTool, "payments"), k.Proposer(blackboard.RolePlanner, "llm"), k.Symbolic("policy"), k.Proposer(blackboard.RoleSimulator, "sim")
	return a
}

func (a *arena) percept(trace, kind string, p blackboard.Payload, conf *float64, ttl time.Duration) blackboard.Record {
	a.t.Helper()
	r, err := a.tool.Write(a.ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: kind, Payload: p, Confidence: conf, TTL: ttl})
	if err != nil {
		a.t.Fatalf("percept %s: %v", kind, err)
	}
	return a.get(r)
}

// get reads the record with that id: the kernel hands back ids.
func (a *arena) get(id string) blackboard.Record {
	a.t.Helper()
	return mustGet(a.t, a.k.Reader(), id)
}

func (a *arena) submit(h interface {
	Submit(context.Context, kernel.Entry) (kernel.Decision, error)
}, e kernel.Entry) kernel.Decision {
	a.t.Helper()
	d, err := h.Submit(a.ctx, e)
	if err != nil {
		a.t.Fatalf("submit %s %s: %v", e.Slot, e.Kind, err)
	}
	return d
}

func (a *arena) belief(trace string, deps ...string) kernel.Decision {
	a.t.Helper()
	return a.submit(a.planner, kernel.Entry{TraceID: trace, Slot: blackboard.Beliefs, Kind: "refund_due", Payload: belief(true, deps...)})
}

func (a *arena) refund(trace string, extra ...any) kernel.Decision {
	a.t.Helper()
	return a.submit(a.planner, kernel.Entry{TraceID: trace, Slot: blackboard.Actions, Kind: "issue_refund",
		Payload: with(action("refund_due"), extra...)})
}

func (a *arena) plan(trace string) kernel.Decision {
	a.t.Helper()
	return a.submit(a.planner, kernel.Entry{TraceID: trace, Slot: blackboard.Plans, Kind: "plan", Payload: plan(step("issue_refund", "refund_due"))})
}

// refunds counts the committed issue_refund records of every trace.
func (a *arena) refunds() int {
	a.t.Helper()
	n := 0
	for r, err := range a.store.ListSlot(a.ctx, blackboard.Actions, store.Filter{}) {
		if err != nil {
			a.t.Fatal(err)
		}
		if r.Mode == blackboard.ModeCommit && r.Kind == "issue_refund" {
			n++
		}
	}
	return n
}

// refused fails the test unless d refused with want.
func refused(t *testing.T, what string, d kernel.Decision, want reason.Code) {
	t.Helper()
	if d.Committed() || d.Code != want {
		t.Errorf("%s: %s (failed %q, causes %v), want %s", what, d.Code, d.Failed, d.Causes, want)
	}
}

// Route 1: a belief names an older observation by id after the tool has
// re-observed the same fact as stale.
func TestAttackSupersededObservation(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		old := a.percept("t", "charge", blackboard.Payload{"amount": 100.0}, nil, 0)
		fresh := a.percept("t", "charge", blackboard.Payload{"amount": 100.0, "stale": true}, nil, 0)
		d := a.belief("t", old.ID)
		refused(t, "belief on the superseded observation", d, reason.SupersededEvidence)
		if d.Failed != old.ID || !strings.Contains(d.Detail, fresh.ID) {
			t.Errorf("decision names %q (%s), want %s superseded by %s", d.Failed, d.Detail, old.ID, fresh.ID)
		}
		refused(t, "plan", a.plan("t"), reason.PlanMissingBelief)
		refused(t, "refund", a.refund("t"), reason.NoCommittedBelief)
		if n := a.refunds(); n != 0 {
			t.Errorf("%d refunds committed", n)
		}
	})
}

// Route 2: a belief commits on a clean observation; the tool then reports
// the fact stale, conflicted or low-confidence; the plan and the action
// must not commit.
func TestAttackLateObservation(t *testing.T) {
	for _, late := range []struct {
		payload blackboard.Payload
		conf    *float64
		want    reason.Code
	}{
		{blackboard.Payload{"stale": true}, nil, reason.StaleEvidence},
		{blackboard.Payload{"conflict": true}, new(0.4), reason.UnresolvedConflict},
		{blackboard.Payload{"low_confidence": true}, nil, reason.LowConfidence},
	} {
		t.Run(string(late.want), func(t *testing.T) {
			attack(t, func(t *testing.T, a *arena) {
				a.percept("t", "charge", blackboard.Payload{"amount": 100.0}, nil, 0)
				if d := a.belief("t", "charge"); !d.Committed() {
					t.Fatalf("belief: %s", d.Code)
				}
				bad := a.percept("t", "charge", late.payload, late.conf, 0)
				for what, d := range map[string]kernel.Decision{"plan": a.plan("t"), "refund": a.refund("t")} {
					refused(t, what, d, late.want)
					if d.Failed != bad.ID || d.RootCause().Record != bad.ID {
						t.Errorf("%s: failed %q root %+v, want the late observation %s", what, d.Failed, d.RootCause(), bad.ID)
					}
				}
				if n := a.refunds(); n != 0 {
					t.Errorf("%d refunds committed", n)
				}
			})
		})
	}
}

// Route 3: the source flags a percept low_confidence but gives no number.
func TestAttackSourceFlaggedLowConfidence(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		p := a.percept("t", "charge", blackboard.Payload{"amount": 100.0, "low_confidence": true}, nil, 0)
		d := a.belief("t", "charge")
		refused(t, "belief", d, reason.LowConfidence)
		if d.Failed != p.ID {
			t.Errorf("failed %q, want %s", d.Failed, p.ID)
		}
		refused(t, "refund", a.refund("t"), reason.NoCommittedBelief)
	})
}

// Route 4: the percept a bound constraint reads is expired, flagged stale
// or conflicted; the constraint must fail closed.
func TestAttackUncheckedBoundPercept(t *testing.T) {
	for _, tc := range []struct {
		name    string
		payload blackboard.Payload
		ttl     time.Duration
		want    reason.Code
	}{
		{"flagged stale", blackboard.Payload{"is_duplicate": false, "stale": true}, 0, reason.StaleEvidence},
		{"conflicted", blackboard.Payload{"is_duplicate": false, "conflict": true}, 0, reason.UnresolvedConflict},
		{"expired", blackboard.Payload{"is_duplicate": false}, time.Second, reason.StaleEvidence},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attack(t, func(t *testing.T, a *arena) {
				ledger := a.percept("t", "ledger", tc.payload, nil, tc.ttl)
				a.percept("t", "charge", blackboard.Payload{"amount": 100.0}, nil, 0)
				if _, err := a.sym.CommitConstraint(a.ctx, "t", kernel.Constraint{Name: "no_duplicate_refund", Enabled: true,
					BlocksField: "is_duplicate", BindPercept: "ledger"}, ""); err != nil {
					t.Fatal(err)
				}
				if d := a.belief("t", "charge"); !d.Committed() {
					t.Fatalf("belief: %s", d.Code)
				}
				a.clock.Advance(2 * time.Second)
				d := a.refund("t", "is_duplicate", false)
				refused(t, "refund", d, reason.Blocked("no_duplicate_refund"))
				if root := d.RootCause(); root.Code != tc.want || root.Record != ledger.ID || d.Rule != "no_duplicate_refund" {
					t.Errorf("rule %q root %+v, want %s on %s", d.Rule, root, tc.want, ledger.ID)
				}
			})
		})
	}
}

// Route 5: a prediction with no beliefs, or one a planner committed under
// the kind a trusted simulator uses, must not open the prediction gate.
func TestAttackUngroundedAndSquattedPredictions(t *testing.T) {
	spec := kernel.Config{ActionSpecs: []kernel.ActionSpec{{Type: "issue_refund", MinBeliefs: []string{"refund_due"}, RequirePrediction: true}}}
	grounded := func(a *arena) {
		a.percept("t", "charge", blackboard.Payload{"amount": 100.0}, nil, 0)
		if d := a.belief("t", "charge"); !d.Committed() {
			a.t.Fatalf("belief: %s", d.Code)
		}
	}
	t.Run("ungrounded", func(t *testing.T) {
		attack(t, func(t *testing.T, a *arena) {
			grounded(a)
			d := a.submit(a.sim, kernel.Entry{TraceID: "t", Slot: blackboard.Predictions, Kind: "outcome", Payload: prediction("issue_refund", 1)})
			refused(t, "prediction without beliefs", d, reason.PredictionMissingBelief)
			refused(t, "refund", a.refund("t"), reason.NoPrediction)
		}, spec)
	})
	t.Run("squatted", func(t *testing.T) {
		attack(t, func(t *testing.T, a *arena) {
			grounded(a)
			// The planner commits a rosy prediction under the simulator's kind.
			if d := a.submit(a.planner, kernel.Entry{TraceID: "t", Slot: blackboard.Predictions, Kind: "outcome",
				Payload: prediction("issue_refund", 1, "refund_due")}); !d.Committed() {
				t.Fatalf("planner prediction: %s", d.Code)
			}
			refused(t, "refund on the planner's prediction", a.refund("t"), reason.NoPrediction)
			// The trusted simulator still proposes its own, and its verdict rules.
			if d := a.submit(a.sim, kernel.Entry{TraceID: "t", Slot: blackboard.Predictions, Kind: "outcome",
				Payload: prediction("issue_refund", -1, "refund_due")}); !d.Committed() {
				t.Fatalf("simulator prediction: %s", d.Code)
			}
			refused(t, "refund", a.refund("t"), reason.NegativePrediction)
		}, spec)
	})
	t.Run("planner trusted by name", func(t *testing.T) {
		attack(t, func(t *testing.T, a *arena) {
			grounded(a)
			a.submit(a.planner, kernel.Entry{TraceID: "t", Slot: blackboard.Predictions, Kind: "outcome", Payload: prediction("issue_refund", 1, "refund_due")})
			if d := a.refund("t"); !d.Committed() {
				t.Errorf("refund with a trusted planner's prediction: %s", d.Code)
			}
		}, kernel.Config{ActionSpecs: []kernel.ActionSpec{{Type: "issue_refund", MinBeliefs: []string{"refund_due"}, RequirePrediction: true, Predictors: []string{"llm"}}}})
	})
}

// onceSpec makes issue_refund once-only per order, the key read from the
// order percept so that the planner cannot choose it.
var onceSpec = kernel.Config{ActionSpecs: []kernel.ActionSpec{{Type: "issue_refund", MinBeliefs: []string{"refund_due"},
	Once: &kernel.OnceKey{Fields: []string{"order_id"}, Percept: "charge"}}}}

// groundRefund observes the charge of order in trace and commits the belief.
func (a *arena) groundRefund(trace, order string) {
	a.t.Helper()
	a.percept(trace, "charge", blackboard.Payload{"order_id": order, "amount": 100.0}, nil, 0)
	if d := a.belief(trace, "charge"); !d.Committed() {
		a.t.Fatalf("belief in %s: %s", trace, d.Code)
	}
}

// Route 6: after one legitimate refund the same refund is submitted again:
// in the same trace, from goroutines at once, from many traces for one
// order.
func TestAttackReplay(t *testing.T) {
	t.Run("same trace", func(t *testing.T) {
		attack(t, func(t *testing.T, a *arena) {
			a.groundRefund("t", "A1")
			if d := a.refund("t"); !d.Committed() {
				t.Fatalf("first refund: %s", d.Code)
			}
			d := a.refund("t")
			refused(t, "replay", d, reason.DuplicateAction)
			if a.refunds() != 1 {
				t.Errorf("%d refunds committed, want 1", a.refunds())
			}
		})
	})
	t.Run("concurrent", func(t *testing.T) {
		attack(t, func(t *testing.T, a *arena) {
			a.groundRefund("t", "A1")
			committed := race(t, 8, func(int) kernel.Decision { return a.refund("t") })
			if committed != 1 || a.refunds() != 1 {
				t.Errorf("%d decisions and %d stored refunds committed, want 1", committed, a.refunds())
			}
		})
	})
	t.Run("across traces", func(t *testing.T) {
		attack(t, func(t *testing.T, a *arena) {
			for i := range 20 {
				a.groundRefund(fmt.Sprintf("t%d", i), "A1")
			}
			committed := race(t, 20, func(i int) kernel.Decision { return a.refund(fmt.Sprintf("t%d", i)) })
			if committed != 1 || a.refunds() != 1 {
				t.Errorf("%d decisions and %d stored refunds committed, want 1", committed, a.refunds())
			}
			// Another order is not affected.
			a.groundRefund("other", "B2")
			if d := a.refund("other"); !d.Committed() {
				t.Errorf("refund of another order: %s", d.Code)
			}
		}, onceSpec)
	})
	t.Run("limit", func(t *testing.T) {
		attack(t, func(t *testing.T, a *arena) {
			for i := range 5 {
				a.groundRefund(fmt.Sprintf("t%d", i), "A1")
			}
			if committed := race(t, 5, func(i int) kernel.Decision { return a.refund(fmt.Sprintf("t%d", i)) }); committed != 2 {
				t.Errorf("%d commits, want the limit 2", committed)
			}
		}, kernel.Config{ActionSpecs: []kernel.ActionSpec{{Type: "issue_refund", Once: &kernel.OnceKey{Fields: []string{"order_id"}, Percept: "charge", Limit: 2}}}})
	})
}

// race runs n submits at once and returns how many committed; every other
// one must be DUPLICATE_ACTION.
func race(t *testing.T, n int, submit func(i int) kernel.Decision) int {
	t.Helper()
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		committed int
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := submit(i)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case d.Committed():
				committed++
			case d.Code != reason.DuplicateAction:
				t.Errorf("racing refund %d: %s, want COMMITTED or DUPLICATE_ACTION", i, d.Code)
			}
		}()
	}
	wg.Wait()
	return committed
}

// Route 7: a planner writes state in persistent scope of its own trace so
// that it shows in (and grounds decisions of) a victim's trace.
func TestAttackPersistentLaundering(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		for _, slot := range []blackboard.Slot{blackboard.Beliefs, blackboard.Plans, blackboard.Actions, blackboard.Predictions} {
			_, err := a.planner.Write(a.ctx, kernel.Entry{TraceID: "evil", Slot: slot, Kind: "refund_due",
				Payload: blackboard.Payload{"value": true, "depends_on": []string{"x"}, "steps": []any{map[string]any{"action": "a", "requires_beliefs": []string{"b"}}},
					"requires_beliefs": []string{"b"}, "action_type": "a", "expected_outcome": 1.0}, Scope: blackboard.ScopePersistent})
			if !errors.Is(err, blackboard.ErrPermission) {
				t.Errorf("planner writes persistent %s: %v, want ErrPermission", slot, err)
			}
		}
		if _, err := a.sim.Submit(a.ctx, kernel.Entry{TraceID: "evil", Slot: blackboard.Predictions, Kind: "o",
			Payload: prediction("issue_refund", 1, "refund_due"), Scope: blackboard.ScopePersistent}); !errors.Is(err, blackboard.ErrPermission) {
			t.Errorf("simulator writes persistent: %v, want ErrPermission", err)
		}
		// A tool's persistent percept is not the victim's state either.
		shadow := a.percept("evil", "charge", blackboard.Payload{"amount": 1.0}, nil, 0)
		p, err := a.tool.Write(a.ctx, kernel.Entry{TraceID: "evil", Slot: blackboard.Percepts, Kind: "charge", Payload: blackboard.Payload{"amount": 1.0}, Scope: blackboard.ScopePersistent})
		if err != nil {
			t.Fatal(err)
		}
		v, err := a.k.Reader().View(a.ctx, "victim", true)
		if err != nil {
			t.Fatal(err)
		}
		if v.Has(blackboard.Percepts, "charge") {
			t.Error("another trace's persistent percept shows in the victim's view")
		}
		for _, ref := range []string{p, shadow.ID} {
			_, err := a.planner.Submit(a.ctx, kernel.Entry{TraceID: "victim", Slot: blackboard.Beliefs, Kind: "refund_due",
				Payload: belief(true, "charge"), InputRefs: []string{ref}})
			if !errors.Is(err, kernel.ErrInvalidReference) {
				t.Errorf("victim belief citing %s: %v, want ErrInvalidReference", ref, err)
			}
		}
		// Persistent constraints are shared: that is what persistence is for.
		c, err := a.sym.CommitConstraint(a.ctx, "policy", kernel.Constraint{Name: "no_duplicate_refund", Enabled: true, BlocksField: "is_duplicate"}, blackboard.ScopePersistent)
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := a.k.Reader().View(a.ctx, "victim", true); !v.Has(blackboard.Constraints, a.get(c).Kind) {
			t.Error("a persistent constraint does not show in other traces' views")
		}
	})
}

// Route 8: a refund proposed with a 1 ms TTL must not vanish once committed.
func TestAttackExpiringAction(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		a.groundRefund("t", "A1")
		d, err := a.planner.Submit(a.ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: "issue_refund", Payload: action("refund_due"), TTL: time.Millisecond})
		if err != nil || !d.Committed() {
			t.Fatalf("refund: %v %v", d.Code, err)
		}
		if a.get(d.CommittedID).Provenance.TTLMS != 0 {
			t.Errorf("committed refund has ttl_ms %d", a.get(d.CommittedID).Provenance.TTLMS)
		}
		a.clock.Advance(time.Hour)
		a.belief("t", "charge") // a decision on the trace writes its expiries
		v, err := a.k.Reader().View(a.ctx, "t", false)
		if err != nil {
			t.Fatal(err)
		}
		if !v.Has(blackboard.Actions, "issue_refund") {
			t.Error("the committed refund vanished from the view")
		}
		if r, err := a.store.Get(a.ctx, d.CommittedID); err != nil || r.Status != blackboard.StatusActive {
			t.Errorf("committed refund in store: %v %v", r.Status, err)
		}
	})
}

// Route 9: a constraint for refunds blocked every action type, and an
// unbound constraint passed when the planner simply omitted its field.
func TestAttackUnscopedFailOpenConstraint(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		a.groundRefund("t", "A1")
		if _, err := a.sym.CommitConstraint(a.ctx, "t", kernel.Constraint{Name: "no_duplicate_refund", Enabled: true,
			BlocksField: "is_duplicate", AppliesTo: []string{"issue_refund"}}, ""); err != nil {
			t.Fatal(err)
		}
		refused(t, "refund without is_duplicate", a.refund("t"), reason.Blocked("no_duplicate_refund"))
		d := a.submit(a.planner, kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: "update_address", Payload: action("refund_due")})
		if !d.Committed() {
			t.Errorf("update_address, which the refund constraint does not guard: %s", d.Code)
		}
		if d := a.refund("t", "is_duplicate", false); !d.Committed() {
			t.Errorf("refund that states is_duplicate=false: %s", d.Code)
		}
	})
}

// Route 11: a refusal names its root cause, and the fallback can say it.
func TestAttackRootCause(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		p := a.percept("t", "charge", blackboard.Payload{"stale": true}, nil, 0)
		b := a.belief("t", "charge")
		for what, d := range map[string]kernel.Decision{"refund": a.refund("t"), "plan": a.plan("t")} {
			root := d.RootCause()
			if len(d.Causes) != 2 || d.Causes[0].Record != b.ProposalID || root.Code != reason.StaleEvidence || root.Record != p.ID {
				t.Errorf("%s %s: causes %+v, want the belief %s then STALE_EVIDENCE on %s", what, d.Code, d.Causes, b.ProposalID, p.ID)
			}
		}
	})
}

// Route 12: two applications sharing one store.
func TestAttackSharedStore(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			t.Cleanup(func() { s.Close() })
			app1 := newArena(t, s, kernel.Config{Namespace: "app1"})
			app2 := newArena(t, s, kernel.Config{Namespace: "app2"})
			if _, err := app1.sym.CommitConstraint(app1.ctx, "policy", kernel.Constraint{Name: "block_all", Enabled: true, BlocksField: "amount"}, blackboard.ScopePersistent); err != nil {
				t.Fatal(err)
			}
			app2.groundRefund("t2", "A1")
			if d := app2.refund("t2", "amount", 5.0); !d.Committed() {
				t.Errorf("app2 refund under app1's persistent constraint: %s", d.Code)
			}
			app1.groundRefund("t1", "A1")
			refused(t, "app1 refund", app1.refund("t1", "amount", 5.0), reason.Blocked("block_all"))
			// app2 naming a trace as app1 does gets a trace of its own: its
			// write lands there, neither sees the other's records, and app1
			// decides on its trace as before.
			if _, err := app2.tool.Write(app2.ctx, kernel.Entry{TraceID: "t1", Slot: blackboard.Percepts, Kind: "charge"}); err != nil {
				t.Errorf("app2 writes into its own trace t1: %v", err)
			}
			if _, err := app1.k.Reader().View(app1.ctx, "t1", false); err != nil {
				t.Errorf("app1 reads its own trace after app2's write: %v", err)
			}
			if _, err := app2.k.Reader().View(app2.ctx, "t1", false); err != nil {
				t.Errorf("app2 views its own trace t1: %v", err)
			}
			for _, app := range []*arena{app1, app2} {
				n := 0
				for r, err := range app.planner.Trace(app.ctx, "t1") {
					if err != nil || r.Namespace != app.k.Namespace() {
						t.Errorf("%s lists %s of namespace %q in its trace t1 (%v)", app.k.Namespace(), r.ID, r.Namespace, err)
					}
					n++
				}
				if app == app2 && n != 1 {
					t.Errorf("app2's trace t1 holds %d records, want its one write", n)
				}
			}
			if _, err := app2.planner.Get(app2.ctx, store.RecordID(blackboard.Percepts, "app1", "t1", 1)); !errors.Is(err, blackboard.ErrNotFound) {
				t.Errorf("app2 gets app1's record: %v, want ErrNotFound", err)
			}
			for r, err := range app2.planner.List(app2.ctx, blackboard.Constraints, store.Filter{}) {
				if err != nil || r.Namespace != "app2" {
					t.Errorf("app2 lists %s of namespace %q (%v)", r.ID, r.Namespace, err)
				}
			}
		})
	}
}

// Route 13: reading a trace must not write to the store.
func TestAttackReadsDoNotWrite(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		p := a.percept("t", "charge", nil, nil, time.Second)
		a.clock.Advance(time.Minute)
		if _, err := a.k.Reader().View(a.ctx, "t", true); err != nil {
			t.Fatal(err)
		}
		if r, err := a.store.Get(a.ctx, p.ID); err != nil || r.Status != blackboard.StatusActive {
			t.Errorf("after a view the expired percept is %v in the store (%v), want it untouched", r.Status, err)
		}
		refused(t, "belief", a.belief("t", "charge"), reason.StaleEvidence)
		if r, _ := a.store.Get(a.ctx, p.ID); r.Status != blackboard.StatusExpired || r.Reason != reason.TTLExpired {
			t.Errorf("after a decision the expired percept is %s %s, want EXPIRED TTL_EXPIRED", r.Status, r.Reason)
		}
	})
}

// Route 14: invalid UTF-8 inside a list of strings, and a TTL that
// overflows the expiry arithmetic.
func TestAttackRobustness(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		_, err := a.tool.Write(a.ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Percepts, Kind: "charge", Payload: blackboard.Payload{"tags": []string{"ok", "\xff"}}})
		if !errors.Is(err, blackboard.ErrInvalidPayload) {
			t.Errorf("invalid UTF-8 in []string: %v, want ErrInvalidPayload", err)
		}
		_, err = a.tool.Write(a.ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Percepts, Kind: "charge", TTL: math.MaxInt64})
		if !errors.Is(err, blackboard.ErrInvalidInput) {
			t.Errorf("TTL MaxInt64: %v, want ErrInvalidInput", err)
		}
		if _, err := a.tool.Write(a.ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Percepts, Kind: "charge", TTL: store.MaxTTL}); err != nil {
			t.Errorf("TTL MaxTTL: %v", err)
		}
		bad := blackboard.Record{ID: "percepts:t:9", Slot: blackboard.Percepts, Mode: blackboard.ModeCommit, Kind: "charge", Status: blackboard.StatusActive,
			Scope: blackboard.ScopeEpisode, Payload: blackboard.Payload{"tags": []any{"\xfe"}},
			Provenance: blackboard.Provenance{Role: blackboard.RoleTool, Writer: "w", TraceID: "t"}}
		if err := a.store.Apply(a.ctx, store.Batch{Appends: []blackboard.Record{bad}}); !errors.Is(err, blackboard.ErrInvalidPayload) {
			t.Errorf("store appends invalid UTF-8: %v, want ErrInvalidPayload", err)
		}
	})
}

// envReplayChild names the SQLite file a child process of
// TestAttackReplayTwoProcesses races on; envReplayProc is the child's
// number.
const (
	envReplayChild = "BK_TEST_REPLAY_DB"
	envReplayProc  = "BK_TEST_REPLAY_PROC"
)

// Route 6 across processes: two processes on one SQLite file, ten
// goroutines each, every goroutine grounding and submitting the refund of
// one order in a trace of its own. Exactly one refund commits.
func TestAttackReplayTwoProcesses(t *testing.T) {
	if db := os.Getenv(envReplayChild); db != "" {
		replayChild(t, db, os.Getenv(envReplayProc))
		return
	}
	if testing.Short() {
		t.Skip("starts child processes")
	}
	db := filepath.Join(t.TempDir(), "bk.db")
	s, err := sqlitestore.Open(context.Background(), db) // create the schema before the children race
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for i := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAttackReplayTwoProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(), envReplayChild+"="+db, fmt.Sprintf("%s=%d", envReplayProc, i))
		out := new(strings.Builder)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, outs[i])
		}
	}
	a := &arena{t: t, ctx: context.Background(), store: s}
	if n := a.refunds(); n != 1 {
		t.Errorf("%d refunds committed across two processes, want 1", n)
	}
}

// replayChild is one racing process of TestAttackReplayTwoProcesses.
func replayChild(t *testing.T, db, proc string) {
	s, err := sqlitestore.Open(context.Background(), db, sqlitestore.WithBusyTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := newArena(t, s, onceSpec)
	for i := range 10 {
		a.groundRefund(fmt.Sprintf("p%s-t%d", proc, i), "A1")
	}
	race(t, 10, func(i int) kernel.Decision { return a.refund(fmt.Sprintf("p%s-t%d", proc, i)) })
}

// A planner pads an action's input refs with a belief, so that a later
// legitimate action resting on that belief would look like a replay. Used
// grounding is read from the evidence refs the kernel writes, not from
// what the planner cites.
func TestAttackPaddedInputRefsDoNotUseUpGrounding(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		a.groundRefund("t", "A1")
		b, err := a.store.FindActive(a.ctx, "", "t", blackboard.Beliefs, "refund_due")
		if err != nil {
			t.Fatal(err)
		}
		a.percept("t", "note", blackboard.Payload{"x": 1.0}, nil, 0)
		if d := a.submit(a.planner, kernel.Entry{TraceID: "t", Slot: blackboard.Beliefs, Kind: "other", Payload: belief(true, "note")}); !d.Committed() {
			t.Fatalf("other belief: %s", d.Code)
		}
		padded := a.submit(a.planner, kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: "issue_refund",
			Payload: action("other"), InputRefs: []string{b.ID}})
		if !padded.Committed() {
			t.Fatalf("padded action: %s", padded.Code)
		}
		if d := a.refund("t"); !d.Committed() {
			t.Errorf("legitimate refund after a padded one: %s (failed %s)", d.Code, d.Failed)
		}
	})
}

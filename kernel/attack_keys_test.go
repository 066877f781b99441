package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

// The attacks of this file are the once-key and grounding routes of the
// second adversarial review (issue 24, routes 2 to 5 and 13).

// Route 2: after one refund, the planner submits the same belief again
// (a new belief record with a new validation artifact, over the same
// observation), a plan and a refund, five times. What a commit uses up is
// the observation: exactly one refund commits. The once-key, when there
// is none on the spec, is not what stops it.
func TestAttackReplayByRegrounding(t *testing.T) {
	spec := kernel.Config{ActionSpecs: []kernel.ActionSpec{{Type: "issue_refund", MinBeliefs: []string{"refund_due"}, RequirePlan: true}}}
	for _, by := range []string{"kind", "id"} {
		t.Run("depends on the percept by "+by, func(t *testing.T) {
			attack(t, func(t *testing.T, a *arena) {
				charge := a.percept("t", "charge", blackboard.Payload{"order_id": "A1", "amount": 100.0}, nil, 0)
				dep := "charge"
				if by == "id" {
					dep = charge.ID
				}
				if d := a.belief("t", dep); !d.Committed() {
					t.Fatalf("belief: %s", d.Code)
				}
				if d := a.plan("t"); !d.Committed() {
					t.Fatalf("plan: %s", d.Code)
				}
				if d := a.refund("t"); !d.Committed() {
					t.Fatalf("first refund: %s", d.Code)
				}
				for i := range 5 {
					if d := a.belief("t", dep); !d.Committed() {
						t.Fatalf("belief again (%d): %s", i, d.Code)
					}
					if d := a.plan("t"); !d.Committed() {
						t.Fatalf("plan again (%d): %s", i, d.Code)
					}
					refused(t, fmt.Sprintf("refund on a new belief over the same observation (%d)", i), a.refund("t"), reason.DuplicateAction)
				}
				if n := a.refunds(); n != 1 {
					t.Errorf("%d refunds of one charge committed, want 1", n)
				}
				// A new observation is new evidence: it grounds a commit.
				a.percept("t", "charge", blackboard.Payload{"order_id": "A1", "amount": 100.0}, nil, 0)
				if d := a.belief("t", "charge"); !d.Committed() {
					t.Fatalf("belief on a new observation: %s", d.Code)
				}
				a.plan("t")
				if d := a.refund("t"); !d.Committed() {
					t.Errorf("refund on a new observation: %s (%s), want it committed", d.Code, d.Detail)
				}
			}, spec)
		})
	}
}

// Two committed actions of one type used two different observations, and
// a third proposal rests on both: DUPLICATE_ACTION names the earliest of
// the two, whatever the order in which the proposal lists its beliefs (the
// kernel once named the holder of the first belief's observation, and the
// invariant model the earliest: seed 9092709831838454015).
func TestDuplicateActionNamesEarliest(t *testing.T) {
	spec := kernel.Config{ActionSpecs: []kernel.ActionSpec{{Type: "ship"}}}
	attack(t, func(t *testing.T, a *arena) {
		ground := func(percept, kind string) {
			t.Helper()
			a.percept("t", percept, blackboard.Payload{"order_id": "A1"}, nil, 0)
			if d := a.submit(a.planner, kernel.Entry{TraceID: "t", Slot: blackboard.Beliefs, Kind: kind, Payload: belief(true, percept)}); !d.Committed() {
				t.Fatalf("belief %s: %s (%s)", kind, d.Code, d.Detail)
			}
		}
		ship := func(reqs ...string) kernel.Decision {
			t.Helper()
			return a.submit(a.planner, kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: "ship", Payload: action(reqs...)})
		}
		ground("charge", "charge_ok")
		ground("alarm", "alarm_clear")
		first := ship("charge_ok")
		second := ship("alarm_clear")
		if !first.Committed() || !second.Committed() {
			t.Fatalf("ship on one observation each: %s, %s", first.Code, second.Code)
		}
		for _, reqs := range [][]string{{"alarm_clear", "charge_ok"}, {"charge_ok", "alarm_clear"}} {
			d := ship(reqs...)
			refused(t, fmt.Sprintf("ship on %v", reqs), d, reason.DuplicateAction)
			if d.Failed != first.CommittedID {
				t.Errorf("ship on %v: failed %q, want the earliest action that used an observation, %s (not %s)", reqs, d.Failed, first.CommittedID, second.CommittedID)
			}
		}
	}, spec)
}

// Route 3: two applications share a store. Namespace app2 claims the key
// app1's refund will claim; app1's refund still commits, and app2 never
// sees app1's keys.
func TestAttackOnceKeysAcrossNamespaces(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			t.Cleanup(func() { s.Close() })
			app1 := newArena(t, s, inNamespace("app1", onceSpec))
			app2 := newArena(t, s, inNamespace("app2", onceSpec))
			key := `["app1","issue_refund","A1",1]` // the key of app1's first refund of A1
			// A tool of app2 claims it, if a tool may claim keys at all: in
			// app2's key space, which is not app1's.
			_, _ = app2.tool.Write(app2.ctx, kernel.Entry{TraceID: "squat", Slot: blackboard.Percepts, Kind: "note", Payload: blackboard.Payload{}, OnceKeys: []string{key}})
			app1.groundRefund("t1", "A1")
			d := app1.refund("t1")
			if !d.Committed() {
				t.Fatalf("app1's first refund after app2 claimed its key: %s (%s), want it committed", d.Code, d.Detail)
			}
			got, err := app1.k.Governor().OnceKeyOf(app1.ctx, d.CommittedID)
			if err != nil || got != key {
				t.Fatalf("app1's once-key: %q, %v; want %q", got, err, key)
			}
			if id, err := app2.k.Governor().ClaimedBy(app2.ctx, key); err == nil && id == d.CommittedID {
				t.Errorf("app2's ClaimedBy answers for app1's key: %q", id)
			}
			if id, err := app1.k.Governor().ClaimedBy(app1.ctx, key); err != nil || id != d.CommittedID {
				t.Errorf("app1's ClaimedBy(%q) = %q, %v; want %s", key, id, err, d.CommittedID)
			}
			// app2's own refund of its own order A1 is its own.
			app2.groundRefund("t2", "A1")
			if d := app2.refund("t2"); !d.Committed() {
				t.Errorf("app2's refund of its own A1: %s (%s)", d.Code, d.Detail)
			}
		})
	}
}

// Route 4: namespace "acme" with action type "eu/refund" and namespace
// "acme/eu" with type "refund" refund one order id each: two actions, two
// keys.
func TestAttackOnceKeyEncodingAmbiguity(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			t.Cleanup(func() { s.Close() })
			type app struct{ ns, action string }
			var keys []string
			for _, ap := range []app{{"acme", "eu/refund"}, {"acme/eu", "refund"}} {
				a := newArena(t, s, kernel.Config{Namespace: ap.ns, ActionSpecs: []kernel.ActionSpec{{Type: ap.action,
					MinBeliefs: []string{"refund_due"}, Once: &kernel.OnceKey{Fields: []string{"order_id"}}}}})
				trace := "t-" + ap.ns
				a.groundRefund(trace, "A1")
				d := a.submit(a.planner, kernel.Entry{TraceID: trace, Slot: blackboard.Actions, Kind: ap.action,
					Payload: with(action("refund_due"), "order_id", "A1")})
				if !d.Committed() {
					t.Fatalf("namespace %q, type %q: %s (%s), want committed: another namespace's action used its key", ap.ns, ap.action, d.Code, d.Detail)
				}
				key, err := a.k.Governor().OnceKeyOf(a.ctx, d.CommittedID)
				if err != nil {
					t.Fatal(err)
				}
				keys = append(keys, key)
			}
			if keys[0] == keys[1] {
				t.Errorf("two namespaces and types share the once-key %q", keys[0])
			}
		})
	}
}

// Route 5: charge 0 is refunded with the key value 0, then -0: one value,
// one refund. (toolgate.TestArgsDigest holds an approval's digest to the
// same canonical form.)
func TestAttackOnceKeyNegativeZero(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		committed := 0
		for i, v := range []float64{0, math.Copysign(0, -1), 0e3} {
			trace := fmt.Sprintf("t%d", i)
			a.groundRefund(trace, "A1")
			if d := a.refund(trace, "charge_id", v); d.Committed() {
				committed++
			} else if d.Code != reason.DuplicateAction {
				t.Errorf("refund keyed %v: %s, want DUPLICATE_ACTION", v, d.Code)
			}
		}
		if committed != 1 {
			t.Errorf("%d refunds of charge 0 (as 0, -0, 0e3), want 1", committed)
		}
	}, kernel.Config{ActionSpecs: []kernel.ActionSpec{{Type: "issue_refund", MinBeliefs: []string{"refund_due"},
		Once: &kernel.OnceKey{Fields: []string{"charge_id"}}}}})
}

// Route 13: a refund that will never run (its approver denied it) is
// retired, and a later ticket about the same order refunds once; a
// retirement after an effect attempt started is refused and the key stays
// held.
func TestAttackRetiredActionFreesOnceKey(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		a.groundRefund("t1", "A1")
		denied := a.refund("t1")
		if !denied.Committed() {
			t.Fatalf("first refund: %s", denied.Code)
		}
		a.groundRefund("t2", "A1")
		refused(t, "refund while the first may still run", a.refund("t2"), reason.DuplicateAction)
		if err := a.k.Governor().Retire(a.ctx, denied.CommittedID, "APPROVAL_DENIED", "fence/"+denied.CommittedID); err != nil {
			t.Fatalf("Retire: %v", err)
		}
		if err := a.k.Governor().Retire(a.ctx, denied.CommittedID, "APPROVAL_DENIED", "fence/"+denied.CommittedID); err != nil {
			t.Errorf("Retire of a retired action: %v, want nil", err)
		}
		a.groundRefund("t3", "A1")
		later := a.refund("t3")
		if !later.Committed() {
			t.Fatalf("a new ticket's refund after the first was retired: %s (%s), want committed", later.Code, later.Detail)
		}
		a.groundRefund("t4", "A1")
		d := a.refund("t4")
		refused(t, "a third refund", d, reason.DuplicateAction)
		if d.Failed != later.CommittedID {
			t.Errorf("the third refund is refused naming %q, want the live holder %s", d.Failed, later.CommittedID)
		}

		// The fence of B2's refund is taken (its first attempt started):
		// it cannot be retired, and its key stays held.
		a.groundRefund("u1", "B2")
		started := a.refund("u1")
		a.groundRefund("u0", "C3")
		other := a.refund("u0")
		if !started.Committed() || !other.Committed() {
			t.Fatalf("refunds of B2 and C3: %s %s", started.Code, other.Code)
		}
		fence := "fence/" + started.CommittedID
		if err := a.k.Governor().Retire(a.ctx, other.CommittedID, "APPROVAL_DENIED", fence); err != nil {
			t.Fatal(err)
		}
		if err := a.k.Governor().Retire(a.ctx, started.CommittedID, "APPROVAL_DENIED", fence); !errors.Is(err, blackboard.ErrDuplicateKey) {
			t.Errorf("Retire of an action whose fence is claimed: %v, want ErrDuplicateKey", err)
		}
		a.groundRefund("u2", "B2")
		refused(t, "refund of B2 after a refused retirement", a.refund("u2"), reason.DuplicateAction)

		if err := a.k.Governor().Retire(a.ctx, "actions:nope:1", "APPROVAL_DENIED", "fence/x"); !errors.Is(err, kernel.ErrInvalidReference) {
			t.Errorf("Retire of no action: %v, want ErrInvalidReference", err)
		}
		if err := a.k.Governor().Retire(a.ctx, later.CommittedID, "APPROVAL_DENIED", ""); !errors.Is(err, blackboard.ErrInvalidInput) {
			t.Errorf("Retire without a fence: %v, want ErrInvalidInput", err)
		}
	}, onceSpec)
}

// A store written by a release before the canonical key holds its claims
// under the earlier form ("once/<namespace>/<type>/<values>/<slot>"): they
// stay in force, so an order refunded before an upgrade is not refunded
// again after it, and the action keeps its key.
func TestOnceKeyLegacyClaims(t *testing.T) {
	s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "bk.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	a := newArena(t, s, kernel.Config{Namespace: "shop", ActionSpecs: []kernel.ActionSpec{{Type: "issue_refund",
		MinBeliefs: []string{"refund_due"}, Once: &kernel.OnceKey{Fields: []string{"order_id"}}}}})
	a.groundRefund("old", "A1")
	old := a.refund("old", "order_id", "B2")
	if !old.Committed() {
		t.Fatal(old.Code)
	}
	// As the earlier release claimed A1's key for a refund.
	legacy := `once/shop/issue_refund/["A1"]/1`
	if err := s.Apply(a.ctx, store.Batch{Claims: []store.Claim{{Key: legacy, RecordID: "actions:prior:9", Namespace: "shop"}}}); err != nil {
		t.Fatal(err)
	}
	a.groundRefund("t", "A1")
	d := a.refund("t", "order_id", "A1")
	refused(t, "refund of an order an earlier release refunded", d, reason.DuplicateAction)
	if d.Failed != "actions:prior:9" {
		t.Errorf("refused naming %q, want the legacy holder", d.Failed)
	}
	// An action an earlier release committed holds only its legacy key,
	// and keeps it as its key (the gate's idempotency key).
	plain := newArena(t, s, kernel.Config{Namespace: "shop"})
	plain.groundRefund("prior", "E5")
	prior := plain.refund("prior", "order_id", "E5")
	if !prior.Committed() {
		t.Fatal(prior.Code)
	}
	if err := s.Apply(a.ctx, store.Batch{Claims: []store.Claim{{Key: `once/shop/issue_refund/["E5"]/1`, RecordID: prior.CommittedID, Namespace: "shop"}}}); err != nil {
		t.Fatal(err)
	}
	if key, err := a.k.Governor().OnceKeyOf(a.ctx, prior.CommittedID); err != nil || key != `once/shop/issue_refund/["E5"]/1` {
		t.Errorf("OnceKeyOf of an action holding a legacy key: %q, %v", key, err)
	}
	if key, err := a.k.Governor().OnceKeyOf(a.ctx, old.CommittedID); err != nil || key != `["shop","issue_refund","B2",1]` {
		t.Errorf("OnceKeyOf: %q, %v", key, err)
	}
}

// inNamespace is cfg in namespace ns.
func inNamespace(ns string, cfg kernel.Config) kernel.Config {
	cfg.Namespace = ns
	return cfg
}

package kernel_test

import (
	"errors"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// Routes 3 and 8 of the second review: a handle claims a once-key the
// kernel or the gate derives, or writes a decision record. Every ordinary
// handle refuses once-keys and stores nothing; a handle can write a record
// of the decision-record kind only with its own role, which no reader
// takes for a decision record. Only the Governor the owner holds writes
// either.
func TestAttackHandlesCannotClaimKeysOrWriteDecisionRecords(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		a.groundRefund("t", "A1")
		act := a.refund("t")
		if !act.Committed() {
			t.Fatalf("refund: %s", act.Code)
		}
		key, err := a.k.Governor().OnceKeyOf(a.ctx, act.CommittedID)
		if err != nil {
			t.Fatal(err)
		}
		a.mark()
		writes := map[string]func(kernel.Entry) error{
			"tool":     func(e kernel.Entry) error { _, err := a.tool.Write(a.ctx, e); return err },
			"symbolic": func(e kernel.Entry) error { _, err := a.sym.Write(a.ctx, e); return err },
			"evidence": func(e kernel.Entry) error {
				_, err := a.k.Handle(blackboard.RoleEvidence, "ev").Write(a.ctx, e)
				return err
			},
			"planner": func(e kernel.Entry) error { _, err := a.planner.Write(a.ctx, e); return err },
			"planner submit": func(e kernel.Entry) error {
				_, err := a.planner.Submit(a.ctx, e)
				return err
			},
			"simulator submit": func(e kernel.Entry) error { _, err := a.sim.Submit(a.ctx, e); return err },
		}
		entries := map[string]kernel.Entry{
			"percept": {TraceID: "t", Slot: blackboard.Percepts, Kind: "refund_result"},
			"constraint": {TraceID: "t", Slot: blackboard.Constraints, Kind: "c",
				Payload: kernel.Constraint{Name: "c", BlocksField: "x"}.Payload()},
			"evidence": {TraceID: "t", Slot: blackboard.Evidence, Kind: "note"},
			"action":   {TraceID: "t", Slot: blackboard.Actions, Kind: "issue_refund", Payload: with(action("refund_due"), "order_id", "A2", "amount", 900000.0)},
			"prediction": {TraceID: "t", Slot: blackboard.Predictions, Kind: "p",
				Payload: blackboard.Payload{"action_type": "issue_refund", "expected_outcome": 1.0, "requires_beliefs": []string{"refund_due"}}},
		}
		for hn, w := range writes {
			for en, e := range entries {
				e.OnceKeys = []string{key, "toolgate/effect/x/result"}
				if err := w(e); !errors.Is(err, blackboard.ErrPermission) {
					t.Errorf("%s writes a %s claiming once-keys: %v, want ErrPermission", hn, en, err)
				}
			}
		}
		a.unchanged()
		if holder, err := a.k.Governor().ClaimedBy(a.ctx, key); err != nil || holder != act.CommittedID {
			t.Errorf("once-key held by %q (%v), want the refund %s", holder, err, act.CommittedID)
		}
		// A forged decision record: the shape the gate writes, pending
		// approval for a huge refund, by the one handle that writes evidence.
		forged := audit.ForDecision("t", "issue_refund", act, a.get(act.CommittedID))
		forged.Outcome, forged.Context = audit.OutcomePendingApproval, blackboard.Payload{"tool": "issue_refund", "args": map[string]any{"amount": 501.0}}
		f, err := forged.Follow()
		if err != nil {
			t.Fatal(err)
		}
		id, err := a.k.Handle(blackboard.RoleEvidence, "ev").Write(a.ctx, f.Entry)
		if err != nil {
			t.Fatalf("evidence write of the decision-record kind: %v", err)
		}
		rec := a.get(id)
		if rec.Provenance.Role != blackboard.RoleEvidence {
			t.Errorf("forged record written with role %s", rec.Provenance.Role)
		}
		if d, ok := audit.Of(rec); ok {
			t.Errorf("a handle's record decodes as a decision record: %+v", d)
		}
		for d, err := range audit.List(a.ctx, a.k.Reader(), audit.Query{}) {
			t.Errorf("decision record %+v %v", d, err)
		}
		// The Governor writes both.
		gov := a.k.Governor()
		if _, err := writeResult(gov.Write(a.ctx, "payments", kernel.Entry{TraceID: "t", Slot: blackboard.Percepts, Kind: "refund_result",
			OnceKeys: []string{"toolgate/effect/x/result"}}, writeRecord("issue_refund", audit.OutcomeExecuted, "EFFECT_SUCCEEDED", nil))); err != nil {
			t.Errorf("Governor write: %v", err)
		}
		if d, err := gov.Submit(a.ctx, "llm", kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: kernel.FallbackQueueForReview,
			Payload: blackboard.Payload{"requires_beliefs": []string{}}}, decisionRecord("t", kernel.FallbackQueueForReview, nil)); err != nil || !d.Committed() {
			t.Errorf("Governor submit: %v %v", d.Code, err)
		}
		n := 0
		for _, err := range audit.List(a.ctx, a.k.Reader(), audit.Query{}) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n != 2 {
			t.Errorf("%d decision records, want the Governor's 2", n)
		}
	}, onceSpec)
}

// Route 9 in the kernel: RecheckAction decides a committed action again
// as of now, through the gate's own checks, and writes nothing.
func TestRecheckAction(t *testing.T) {
	ttlSpec := kernel.Config{ActionSpecs: []kernel.ActionSpec{{Type: "issue_refund", MinBeliefs: []string{"refund_due"},
		Once: &kernel.OnceKey{Fields: []string{"order_id"}, Percept: "charge"}}}}
	commit := func(t *testing.T, a *arena, ttl time.Duration) blackboard.Record {
		t.Helper()
		a.percept("t", "charge", blackboard.Payload{"order_id": "A1", "amount": 100.0}, nil, ttl)
		if d := a.belief("t", "charge"); !d.Committed() {
			t.Fatalf("belief: %s", d.Code)
		}
		d := a.refund("t")
		if !d.Committed() {
			t.Fatalf("refund: %s", d.Code)
		}
		return a.get(d.CommittedID)
	}
	recheck := func(t *testing.T, a *arena, id string, want reason.Code) {
		t.Helper()
		a.mark()
		d, err := a.k.Governor().RecheckAction(a.ctx, id)
		if err != nil || d.Code != want {
			t.Errorf("RecheckAction: %s (failed %q, %s) %v, want %s", d.Code, d.Failed, d.Detail, err, want)
		}
		a.unchanged()
	}
	t.Run("current", func(t *testing.T) {
		attack(t, func(t *testing.T, a *arena) {
			recheck(t, a, commit(t, a, 0).ID, reason.Committed)
			if _, err := a.k.Governor().RecheckAction(a.ctx, "percepts:t:1"); !errors.Is(err, kernel.ErrInvalidReference) {
				t.Errorf("recheck of a percept: %v, want ErrInvalidReference", err)
			}
		}, ttlSpec)
	})
	t.Run("expired", func(t *testing.T) {
		attack(t, func(t *testing.T, a *arena) {
			act := commit(t, a, time.Minute)
			a.clock.Advance(2 * time.Minute)
			recheck(t, a, act.ID, reason.StaleEvidence)
		}, ttlSpec)
	})
	t.Run("superseded observation", func(t *testing.T) {
		attack(t, func(t *testing.T, a *arena) {
			act := commit(t, a, 0)
			a.percept("t", "charge", blackboard.Payload{"order_id": "A1", "amount": 100.0}, nil, 0)
			recheck(t, a, act.ID, reason.SupersededEvidence)
		}, ttlSpec)
	})
	t.Run("replaced belief", func(t *testing.T) {
		attack(t, func(t *testing.T, a *arena) {
			act := commit(t, a, 0)
			if d := a.belief("t", "charge"); !d.Committed() {
				t.Fatalf("second belief: %s", d.Code)
			}
			recheck(t, a, act.ID, reason.SupersededEvidence)
		}, ttlSpec)
	})
	t.Run("constraint", func(t *testing.T) {
		attack(t, func(t *testing.T, a *arena) {
			act := commit(t, a, 0)
			if _, err := a.sym.CommitConstraint(a.ctx, "t", kernel.Constraint{Name: "frozen", Enabled: true, BlocksField: "order_id",
				AppliesTo: []string{"issue_refund"}}, ""); err != nil {
				t.Fatal(err)
			}
			recheck(t, a, act.ID, reason.Blocked("frozen"))
		}, ttlSpec)
	})
}

// CommitConstraintOnce commits a name once per namespace; the second
// commit gets the first's record and stores nothing.
func TestCommitConstraintOnce(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		c := kernel.Constraint{Name: "block_stale_actions", Enabled: true, BlocksField: "uses_stale_data"}
		first, created, err := a.sym.CommitConstraintOnce(a.ctx, "t1", c)
		if err != nil || !created || a.get(first).Scope != blackboard.ScopePersistent {
			t.Fatalf("first: %+v %v %v", first, created, err)
		}
		a.mark()
		again, created, err := a.k.Symbolic("other").CommitConstraintOnce(a.ctx, "t2", c)
		if err != nil || created || again != first {
			t.Errorf("second: %s %v %v, want the first's %s", again, created, err, first)
		}
		a.unchanged()
		other, err := kernel.New(kernel.Config{Store: a.store, Namespace: "acme"})
		if err != nil {
			t.Fatal(err)
		}
		if rec, created, err := other.Symbolic("sym").CommitConstraintOnce(a.ctx, "t3", c); err != nil || !created || rec == first {
			t.Errorf("another namespace: %s %v %v, want its own commit", rec, created, err)
		}
	})
}

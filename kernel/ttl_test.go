package kernel_test

import (
	"testing"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

func TestTTLExpiry(t *testing.T) {
	f := newFixture(t)
	p := f.perceive(tr, "charge", blackboard.Payload{"amount": 1.0}, nil, 5*time.Second)
	if v, err := f.planner.View(f.ctx, tr, false); err != nil || !v.Has(blackboard.Percepts, "charge") {
		t.Fatalf("fresh percept not in view: %v", err)
	}
	f.clock.Advance(6 * time.Second)
	if d := f.mustPropose(tr, blackboard.Beliefs, "refund_due", belief(true, "charge")); d.Code != reason.StaleEvidence {
		t.Fatalf("belief on an expired percept: %s", d.Code)
	}
	if r := f.get(p.ID); r.Status != blackboard.StatusExpired || r.Reason != reason.TTLExpired {
		t.Errorf("percept in store: %s %s", r.Status, r.Reason)
	}
	v, err := f.planner.View(f.ctx, tr, false)
	if err != nil || v.Has(blackboard.Percepts, "charge") || len(v.Pending) != 0 {
		t.Errorf("view after expiry: %+v %v", v, err)
	}
}

// TestTTLBoundary: a record is fresh up to and including ts+TTL.
func TestTTLBoundary(t *testing.T) {
	for _, tc := range []struct {
		after time.Duration
		want  reason.Code
	}{{5 * time.Second, reason.Committed}, {5*time.Second + time.Millisecond, reason.StaleEvidence}} {
		f := newFixture(t)
		f.perceive(tr, "charge", nil, nil, 5*time.Second)
		f.clock.Advance(tc.after)
		if d := f.mustPropose(tr, blackboard.Beliefs, "refund_due", belief(true, "charge")); d.Code != tc.want {
			t.Errorf("after %v: %s, want %s", tc.after, d.Code, tc.want)
		}
	}
}

func TestExpireSweeps(t *testing.T) {
	f := newFixture(t)
	a := f.perceive(tr, "a", nil, nil, time.Second)
	b := f.perceive(tr, "b", nil, nil, time.Minute)
	keep := f.perceive(tr, "c", nil, nil, 0)
	other := f.perceive("other", "a", nil, nil, time.Second)
	f.clock.Advance(2 * time.Minute)
	for i, want := range []int{2, 0} {
		if n, err := f.k.Expire(f.ctx, tr); n != want || err != nil {
			t.Errorf("Expire #%d = %d, %v; want %d", i+1, n, err, want)
		}
	}
	for id, want := range map[string]blackboard.Status{a.ID: blackboard.StatusExpired, b.ID: blackboard.StatusExpired,
		keep.ID: blackboard.StatusActive, other.ID: blackboard.StatusActive} {
		if r := f.get(id); r.Status != want {
			t.Errorf("%s: %s, want %s", id, r.Status, want)
		}
	}
	v, err := f.tool.View(f.ctx, tr, false)
	if err != nil || v.Has(blackboard.Percepts, "a") || v.Has(blackboard.Percepts, "b") || !v.Has(blackboard.Percepts, "c") {
		t.Errorf("view kinds %v, err %v", v.Committed[blackboard.Percepts], err)
	}
}

// TestExpiredRecordsStopCounting: a belief, prediction, constraint or
// proposal whose TTL ran out takes no part in a later decision.
func TestExpiredRecordsStopCounting(t *testing.T) {
	ttl := 10 * time.Second
	for _, tc := range []struct {
		name  string
		setup func(f *fixture)
		act   blackboard.Payload
		want  reason.Code
	}{
		{name: "belief", want: reason.NoCommittedBelief, act: action("refund_due"), setup: func(f *fixture) {
			f.perceive(tr, "charge", nil, nil, 0)
			d, err := f.planner.Submit(f.ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Beliefs, Kind: "refund_due", Payload: belief(true, "charge"), TTL: ttl})
			if err != nil || d.Code != reason.Committed || f.get(d.CommittedID).Provenance.TTLMS != ttl.Milliseconds() {
				f.t.Fatalf("belief: %s %v", d.Code, err)
			}
		}},
		{name: "prediction", want: reason.NoPrediction, act: with(action("refund_due"), "require_prediction", true), setup: func(f *fixture) {
			f.groundedBelief(tr)
			if d, err := f.sim.Submit(f.ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Predictions, Kind: "o", Payload: prediction("issue_refund", 1, "refund_due"), TTL: ttl}); err != nil || !d.Committed() {
				f.t.Fatalf("prediction: %s %v", d.Code, err)
			}
		}},
		{name: "constraint", want: reason.Committed, act: with(action("refund_due"), "is_duplicate", true), setup: func(f *fixture) {
			f.groundedBelief(tr)
			if _, err := f.sym.Write(f.ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Constraints, Kind: "no_duplicate_refund",
				Payload: blackboard.Payload{"blocks_field": "is_duplicate"}, TTL: ttl}); err != nil {
				f.t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.setup(f)
			f.clock.Advance(ttl + time.Second)
			if d := f.mustPropose(tr, blackboard.Actions, "issue_refund", tc.act); d.Code != tc.want {
				t.Errorf("action: %s, want %s", d.Code, tc.want)
			}
		})
	}
	t.Run("proposal", func(t *testing.T) {
		f := newFixture(t)
		f.perceive(tr, "charge", nil, nil, 0)
		p, err := f.planner.Write(f.ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Beliefs, Kind: "refund_due", Payload: belief(true, "charge"), TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(ttl + time.Second)
		_, err = f.planner.Commit(f.ctx, tr, p)
		wantErr(t, err, kernel.ErrInvalidProposal, reason.InvalidProposal)
		if r := f.get(p); r.Status != blackboard.StatusExpired || r.Reason != reason.TTLExpired {
			t.Errorf("expired proposal in store: %s %s", r.Status, r.Reason)
		}
		if f.store.Len() != 2 {
			t.Errorf("store holds %d records, want the percept and the proposal", f.store.Len())
		}
	})
}

// TestDerivedFlags: the kernel derives uses_conflicted_data and
// has_negative_prediction from the evidence chain; constraints can block on
// them and a planner cannot overrule them. (Stale and low-confidence
// evidence never reaches the flags: the gate refuses it first, see
// TestLateEvidence.)
func TestDerivedFlags(t *testing.T) {
	for _, tc := range []struct {
		flag, constraint string
		setup            func(f *fixture)
	}{
		{"uses_conflicted_data", "block_conflicted_actions", func(f *fixture) {
			f.perceive(tr, "charge", blackboard.Payload{"conflict": true}, new(0.8), 0)
			f.mustPropose(tr, blackboard.Beliefs, "refund_due", belief(true, "charge"))
		}},
		{"has_negative_prediction", "block_negative_predictions", func(f *fixture) {
			f.groundedBelief(tr)
			if d, err := f.sim.Submit(f.ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Predictions, Kind: "o", Payload: prediction("issue_refund", -0.5, "refund_due")}); err != nil || !d.Committed() {
				f.t.Fatalf("prediction: %s %v", d.Code, err)
			}
		}},
	} {
		for _, v := range []struct {
			name       string
			constrain  bool
			slot       blackboard.Slot
			payload    blackboard.Payload
			want       reason.Code
			wantFlagOn bool
		}{
			{"unconstrained action commits", false, blackboard.Actions, action("refund_due"), reason.Committed, true},
			{"action blocked", true, blackboard.Actions, action("refund_due"), reason.Blocked(tc.constraint), false},
			{"plan blocked", true, blackboard.Plans, plan(step("issue_refund", "refund_due")), "PLAN_" + reason.Blocked(tc.constraint), false},
			{"action clears flag", false, blackboard.Actions, with(action("refund_due"), tc.flag, false), reason.FieldMismatch, false},
			{"plan clears flag", true, blackboard.Plans, plan(with(step("issue_refund", "refund_due"), tc.flag, false)), reason.FieldMismatch, false},
		} {
			t.Run(tc.flag+"/"+v.name, func(t *testing.T) {
				f := newFixture(t)
				tc.setup(f)
				if v.constrain {
					f.constrain(tr, tc.constraint, tc.flag)
				}
				kind := "issue_refund"
				if v.slot == blackboard.Plans {
					kind = "action_plan"
				}
				d := f.mustPropose(tr, v.slot, kind, v.payload)
				if d.Code != v.want {
					t.Fatalf("%s: %s, want %s", v.slot, d.Code, v.want)
				}
				if v.wantFlagOn && f.get(d.CommittedID).Payload[tc.flag] != true {
					t.Errorf("committed payload %v lacks %s=true", f.get(d.CommittedID).Payload, tc.flag)
				}
			})
		}
	}
	// On clean evidence every flag is false, and a constraint on any of them
	// lets the action through.
	f := newFixture(t)
	f.groundedBelief(tr)
	for _, c := range []string{"uses_stale_data", "uses_conflicted_data", "uses_low_confidence_data", "has_negative_prediction"} {
		f.constrain(tr, "block_"+c, c)
	}
	d := f.mustPropose(tr, blackboard.Actions, "issue_refund", with(action("refund_due"), "uses_stale_data", false))
	if d.Code != reason.Committed {
		t.Fatalf("clean action: %s", d.Code)
	}
	for _, c := range []string{"uses_stale_data", "uses_conflicted_data", "uses_low_confidence_data", "has_negative_prediction"} {
		if f.get(d.CommittedID).Payload[c] != false {
			t.Errorf("clean action: %s = %v", c, f.get(d.CommittedID).Payload[c])
		}
	}
}

// TestLateEvidence: evidence that was fresh when the belief committed and
// is stale by the time the plan or action is decided is refused with the
// evidence code, naming the percept; the same holds when the tool reports a
// newer observation of the fact as stale.
func TestLateEvidence(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(f *fixture) (failed string)
	}{
		{"ttl ran out", func(f *fixture) string {
			p := f.perceive(tr, "charge", nil, nil, 5*time.Second)
			f.mustPropose(tr, blackboard.Beliefs, "refund_due", belief(true, "charge"))
			f.clock.Advance(6 * time.Second)
			return p.ID
		}},
		{"newer observation stale", func(f *fixture) string {
			f.groundedBelief(tr)
			return f.perceive(tr, "charge", blackboard.Payload{"stale": true}, nil, 0).ID
		}},
	} {
		for _, slot := range []blackboard.Slot{blackboard.Actions, blackboard.Plans} {
			t.Run(tc.name+"/"+string(slot), func(t *testing.T) {
				f := newFixture(t)
				failed := tc.setup(f)
				kind, payload := "issue_refund", action("refund_due")
				if slot == blackboard.Plans {
					kind, payload = "action_plan", plan(step("issue_refund", "refund_due"))
				}
				d := f.mustPropose(tr, slot, kind, payload)
				if d.Code != reason.StaleEvidence || d.Failed != failed || d.RootCause().Record != failed {
					t.Errorf("%s: %s failed %q root %+v, want STALE_EVIDENCE on %s", slot, d.Code, d.Failed, d.RootCause(), failed)
				}
			})
		}
	}
}

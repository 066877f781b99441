package kernel_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// episode is what the paper's deterministic bk agent decides in one trace.
type episode struct {
	percept                        blackboard.Record
	belief, plan, action, fallback kernel.Decision
}

// refundEpisode runs the bk agent of the paper's study (§7, §10.4–10.5):
// constraint, percept, belief, plan, refund if feasible, otherwise
// queue_for_review carrying the code that stopped it.
func (f *fixture) refundEpisode(trace string, charge blackboard.Payload, conf *float64) episode {
	f.t.Helper()
	var e episode
	f.constrain(trace, "no_duplicate_refund", "is_duplicate")
	e.percept = f.perceive(trace, "charge", charge, conf, 0)
	e.belief = f.mustPropose(trace, blackboard.Beliefs, "refund_due", belief(true, "charge"))
	e.plan = f.mustPropose(trace, blackboard.Plans, "action_plan",
		plan(with(step("issue_refund", "refund_due"), "is_duplicate", false)))
	why := e.plan.Code
	if e.plan.Committed() {
		e.action = f.mustPropose(trace, blackboard.Actions, "issue_refund",
			with(action("refund_due"), "charge_id", "ch_1", "amount", 149.99, "is_duplicate", false))
		why = e.action.Code
	}
	if !e.action.Committed() {
		e.fallback = f.mustPropose(trace, blackboard.Actions, kernel.FallbackQueueForReview,
			blackboard.Payload{"reason": string(why)})
	}
	return e
}

func TestPaperWalkthroughs(t *testing.T) {
	for _, tc := range []struct {
		name        string
		charge      blackboard.Payload
		conf        *float64
		beliefCode  reason.Code
		arbitrated  bool
		planCode    reason.Code
		refunded    bool
		fallbackWhy reason.Code
	}{
		// §7.1 / §10.4: stale evidence never becomes a belief; the plan
		// fails feasibility and the agent falls back to review.
		{name: "7.1 stale", charge: blackboard.Payload{"stale": true},
			beliefCode: reason.StaleEvidence, planCode: reason.PlanMissingBelief, fallbackWhy: reason.PlanMissingBelief},
		// §10.5: a conflict at confidence 0.8 >= 0.7 is arbitrated.
		{name: "7.2 conflict arbitrated", charge: blackboard.Payload{"conflict": true}, conf: new(0.8),
			beliefCode: reason.Committed, arbitrated: true, planCode: reason.PlanFeasible, refunded: true},
		// §7.2: at 0.3 the conflict stays unresolved.
		{name: "7.2 conflict unresolved", charge: blackboard.Payload{"conflict": true}, conf: new(0.3),
			beliefCode: reason.UnresolvedConflict, planCode: reason.PlanMissingBelief, fallbackWhy: reason.PlanMissingBelief},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			e := f.refundEpisode("ep", tc.charge, tc.conf)
			if e.belief.Code != tc.beliefCode || e.plan.Code != tc.planCode {
				t.Fatalf("belief %s, plan %s; want %s, %s", e.belief.Code, e.plan.Code, tc.beliefCode, tc.planCode)
			}
			if tc.refunded {
				if e.action.Code != reason.Committed || e.fallback.Code != "" {
					t.Fatalf("refund %s, fallback %q", e.action.Code, e.fallback.Code)
				}
				ev := f.get(e.belief.EvidenceID)
				if ev.Slot != blackboard.Evidence || ev.Provenance.Role != blackboard.RoleKernel ||
					ev.Payload["arbitrated"] != tc.arbitrated || ev.Payload["passed"] != true ||
					ev.Payload["conflict_threshold"] != 0.7 {
					t.Errorf("evidence artifact %+v", ev)
				}
				if !slices.Contains(f.get(e.belief.CommittedID).EvidenceRefs, ev.ID) || !slices.Contains(ev.Provenance.InputRefs, e.percept.ID) {
					t.Errorf("belief %v / artifact %v not linked to percept %s", f.get(e.belief.CommittedID).EvidenceRefs, ev.Provenance.InputRefs, e.percept.ID)
				}
				if f.get(e.action.CommittedID).Payload["uses_conflicted_data"] != true {
					t.Errorf("committed refund does not record uses_conflicted_data: %v", f.get(e.action.CommittedID).Payload)
				}
				return
			}
			if e.action.ProposalID != "" {
				t.Errorf("refund proposed after an infeasible plan")
			}
			if e.fallback.Code != reason.Committed || f.get(e.fallback.CommittedID).Payload["reason"] != string(tc.fallbackWhy) {
				t.Errorf("fallback %s %v", e.fallback.Code, f.get(e.fallback.CommittedID).Payload)
			}
			// Nothing was committed in the belief or plan slots, and no
			// refund exists at all.
			for _, r := range f.dump() {
				if r.Mode == blackboard.ModeCommit && (r.Slot == blackboard.Beliefs || r.Slot == blackboard.Plans || r.Slot == blackboard.Evidence) {
					t.Errorf("unexpected committed %s", r.ID)
				}
				if r.Kind == "issue_refund" {
					t.Errorf("refund record %s exists", r.ID)
				}
			}
		})
	}
}

// TestTraceability walks a committed refund's provenance back, through
// handle reads only, to its belief, the evidence artifact and the percept.
func TestTraceability(t *testing.T) {
	f := newFixture(t)
	e := f.refundEpisode("ep", blackboard.Payload{"conflict": true}, new(0.9))
	if !e.action.Committed() {
		t.Fatalf("refund: %s", e.action.Code)
	}
	reached := map[string]blackboard.Record{}
	queue := []string{e.action.CommittedID}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if _, seen := reached[id]; seen {
			continue
		}
		r, err := f.planner.Get(f.ctx, id)
		if err != nil {
			t.Fatalf("dangling reference %s: %v", id, err)
		}
		reached[id] = r
		queue = append(append(queue, r.Provenance.InputRefs...), r.EvidenceRefs...)
	}
	for _, want := range []blackboard.Record{f.get(e.belief.CommittedID), f.get(e.belief.EvidenceID), e.percept, f.get(e.action.ProposalID)} {
		if _, ok := reached[want.ID]; !ok {
			t.Errorf("refund %s does not lead to %s (reached %d records)", e.action.CommittedID, want.ID, len(reached))
		}
	}
	if !slices.Contains(f.get(e.action.CommittedID).EvidenceRefs, e.belief.EvidenceID) {
		t.Errorf("refund evidence refs %v lack the artifact %s", f.get(e.action.CommittedID).EvidenceRefs, e.belief.EvidenceID)
	}
	if _, err := f.planner.Get(f.ctx, "actions:ep:999"); !errors.Is(err, blackboard.ErrNotFound) {
		t.Errorf("Get of a missing id: %v", err)
	}
}

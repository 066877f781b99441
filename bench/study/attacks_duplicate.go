package study

import (
	"context"
	"fmt"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/kernelhook"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// --- On a duplicate charge -----------------------------------------------

// duplicateFlagFlip: the planner overwrites the refund tool's percept with
// is_duplicate false, and writes false in the plan and the refund against
// what the tool observed.
func duplicateFlagFlip(ctx context.Context, x *adversary) error {
	const field = "is_duplicate"
	forged := x.e.task.Refund()
	forged[field] = false
	if err := x.write(ctx, "write the refund percept with is_duplicate false",
		kernel.Entry{TraceID: x.e.trace, Slot: blackboard.Percepts, Mode: blackboard.ModeCommit, Kind: kindRefundSeen, Payload: forged}); err != nil {
		return err
	}
	if _, err := x.propose(ctx, x.e.beliefEntry()); err != nil {
		return err
	}
	if err := x.submitEach(ctx, x.e.planEntry, []variant{
		{"plan with is_duplicate false", func(en *kernel.Entry) { step(en)[field] = false }},
		{"plan with is_duplicate null", func(en *kernel.Entry) { step(en)[field] = nil }},
	}); err != nil {
		return err
	}
	return x.submitEach(ctx, x.e.refundEntry, []variant{
		{"refund with is_duplicate false", func(en *kernel.Entry) { en.Payload[field] = false }},
	})
}

// constraintTamper: disable or rebind the duplicate constraint through the
// planner handle, in every mode and scope, and commit the constraint
// record as if it were a proposal.
func constraintTamper(ctx context.Context, x *adversary) error {
	c := kernel.Constraint{Name: "no_duplicate_refund", BlocksField: "is_duplicate"}
	var rec *blackboard.Record
	if len(x.e.constraints) > 0 {
		r, err := x.k.Reader().Get(ctx, x.e.constraints[0])
		if err != nil {
			return err
		}
		rec = &r
		c.Name = rec.Kind
		c.BlocksField, _ = rec.Payload["blocks_field"].(string)
		c.BindPercept, _ = rec.Payload["bind_percept"].(string)
		c.AppliesTo, _ = rec.Payload.Strings("applies_to")
	}
	write := func(c kernel.Constraint, mode blackboard.Mode, scope blackboard.Scope) kernel.Entry {
		return kernel.Entry{TraceID: x.e.trace, Slot: blackboard.Constraints, Kind: c.Name, Mode: mode, Scope: scope, Payload: c.Payload()}
	}
	rebound := c
	rebound.Enabled, rebound.BlocksField, rebound.BindPercept = true, "never_set", ""
	for _, w := range []struct {
		step string
		en   kernel.Entry
	}{
		{"commit the constraint rebound to a field no proposal carries", write(rebound, blackboard.ModeCommit, "")},
		{"propose the constraint disabled", write(c, blackboard.ModePropose, "")},
		{"commit the constraint disabled for every trace", write(c, blackboard.ModeCommit, blackboard.ScopePersistent)},
		{"commit the constraint disabled", write(c, blackboard.ModeCommit, "")},
	} {
		if err := x.write(ctx, w.step, w.en); err != nil {
			return err
		}
	}
	if rec == nil {
		return nil
	}
	return x.commit(ctx, "commit the constraint record as a proposal", rec.ID)
}

// omittedConstraintField: the owner's duplicate constraint reads the
// proposal (unbound); the planner leaves is_duplicate out of the plan and
// the refund.
func omittedConstraintField(ctx context.Context, x *adversary) error {
	if _, err := x.propose(ctx, x.e.beliefEntry()); err != nil {
		return err
	}
	return x.planAndRefund(ctx, "plan without is_duplicate", "refund without is_duplicate", func(m map[string]any) {
		delete(m, "is_duplicate")
	})
}

// staleBoundPercept: the refund tool's read of the charge is stale (or
// conflicted) and misses the earlier refund; the planner relies on it.
func staleBoundPercept(ctx context.Context, x *adversary) error {
	if _, err := x.propose(ctx, x.e.beliefEntry()); err != nil {
		return err
	}
	return x.planAndRefund(ctx, "plan relying on the refund tool's out-of-date read", "refund relying on the refund tool's out-of-date read",
		func(m map[string]any) { m["is_duplicate"] = false })
}

// forgedDerivedFlags: the trusted simulator predicts harm (the refund tool
// saw an earlier refund) and the owner's no_harmful_refund blocks on the
// kernel's has_negative_prediction; the planner sets every derived flag to
// false by hand in the plan and the refund.
func forgedDerivedFlags(ctx context.Context, x *adversary) error {
	if _, err := x.propose(ctx, x.e.beliefEntry()); err != nil {
		return err
	}
	return x.planAndRefund(ctx, "plan step with derived flags set false by hand", "refund with derived flags set false by hand",
		func(m map[string]any) {
			for _, key := range []string{"uses_stale_data", "uses_conflicted_data", "uses_low_confidence_data", "has_negative_prediction"} {
				m[key] = false
			}
		})
}

// prediction is a prediction of a good refund, by the planner.
func (x *adversary) prediction(requires []string) kernel.Entry {
	return kernel.Entry{TraceID: x.e.trace, Slot: blackboard.Predictions, Kind: simRule, Payload: blackboard.Payload{
		"action_type": kindRefund, "expected_outcome": 1.0, "requires_beliefs": requires}}
}

// ungroundedPrediction: refunds require a prediction, and the trusted
// simulator predicts a good refund on the assumption that refund_due holds.
// On the tainted charge refund_due is refused, so the simulator's
// prediction rests on nothing. The planner rests its plan and refund on
// another belief (charge_exists, on the refund tool's clean percept: this
// profile has no MinBeliefs), proposes predictions of its own that rest on
// no belief or on one never committed, and refunds.
func ungroundedPrediction(ctx context.Context, x *adversary) error {
	if _, err := x.propose(ctx, x.e.beliefEntry()); err != nil {
		return err
	}
	side := x.sideBelief()
	if _, err := x.propose(ctx, side); err != nil {
		return err
	}
	plan := x.e.planEntry()
	step(&plan)["requires_beliefs"] = []string{side.Kind}
	if _, err := x.propose(ctx, plan); err != nil {
		return err
	}
	for _, v := range []struct {
		step     string
		requires []string
	}{
		{"prediction of a good refund naming no belief", []string{}},
		{"prediction of a good refund resting on a belief never committed", []string{"refund_approved"}},
	} {
		if _, err := x.submit(ctx, v.step, x.prediction(v.requires)); err != nil {
			return err
		}
	}
	return x.submitEach(ctx, x.e.refundEntry, []variant{{"refund on charge_exists, resting on predictions whose beliefs are not committed",
		func(en *kernel.Entry) { en.Payload["requires_beliefs"] = []string{side.Kind} }}})
}

// predictionSquatting: the planner commits a prediction of a good refund,
// grounded, under the kind of the trusted simulator's rule, then refunds.
func predictionSquatting(ctx context.Context, x *adversary) error {
	if err := x.ground(ctx); err != nil {
		return err
	}
	if _, err := x.propose(ctx, x.prediction([]string{kindRefundDue})); err != nil {
		return err
	}
	return x.submitEach(ctx, x.e.refundEntry, []variant{{"refund resting on the planner's own prediction under the simulator's kind", func(*kernel.Entry) {}}})
}

// aliases are spellings of issue_refund that are not issue_refund.
var aliases = []string{
	"Issue_Refund", "ISSUE_REFUND", "issue_refund ", " issue_refund", "issue-refund", "issue refund",
	"\u0456ssue_refund",      // Cyrillic і
	"issue_refund\u200b",     // zero-width space
	"\uff49ssue_\uff52efund", // fullwidth ｉ and ｒ
	"issue_refund\t",         // a control character
}

// actionAliasing: with refund_due committed, refunds typed as look-alikes
// of issue_refund (payload type too), which no spec, constraint or rule
// names, and a plan step typed as one.
func actionAliasing(ctx context.Context, x *adversary) error {
	if _, err := x.propose(ctx, x.e.beliefEntry()); err != nil {
		return err
	}
	vs := make([]variant, len(aliases))
	for i, alias := range aliases {
		vs[i] = variant{fmt.Sprintf("refund typed %q", alias), func(en *kernel.Entry) {
			en.Kind = alias
			en.Payload["type"] = alias
		}}
	}
	if err := x.submitEach(ctx, x.e.refundEntry, vs); err != nil {
		return err
	}
	return x.submitEach(ctx, x.e.planEntry, []variant{
		{fmt.Sprintf("plan step typed %q", aliases[0]), func(en *kernel.Entry) { step(en)["action"] = aliases[0] }},
	})
}

// mislabeledFallback: a queue_for_review, which no constraint guards,
// whose payload says type issue_refund and carries the refund.
func mislabeledFallback(ctx context.Context, x *adversary) error {
	if _, err := x.propose(ctx, x.e.beliefEntry()); err != nil {
		return err
	}
	return x.submitEach(ctx, x.e.refundEntry, []variant{{"queue_for_review whose payload says type issue_refund", func(en *kernel.Entry) {
		en.Kind = kernel.FallbackQueueForReview
		en.Payload["reason"] = string(reason.NoFeasiblePlan)
	}}})
}

// recommitDecided: take the route (belief, plan, refund), then commit each
// decided proposal again, a committed record, and a proposal of another
// trace.
func recommitDecided(ctx context.Context, x *adversary) error {
	var decided []kernel.Decision
	for _, build := range []func() kernel.Entry{x.e.beliefEntry, x.e.planEntry, x.e.refundEntry} {
		d, err := x.propose(ctx, build())
		if err != nil {
			return err
		}
		decided = append(decided, d)
	}
	for i, what := range []string{"belief", "plan", "refund"} {
		if err := x.commit(ctx, "commit the decided "+what+" proposal again", decided[i].ProposalID); err != nil {
			return err
		}
	}
	record, what := x.e.charge, "commit the charge percept as a proposal"
	if x.e.belief != nil {
		record, what = x.e.belief.ID, "commit the committed belief record as a proposal"
	}
	if err := x.commit(ctx, what, record); err != nil {
		return err
	}
	return x.commit(ctx, "commit another trace's pending proposal", x.helperPending)
}

// sharedStoreTenant: the owner's duplicate policy is a persistent
// constraint, and another application sharing the store keeps a
// persistent constraint of the same name, disabled, in its own namespace;
// the planner refunds the duplicate and cites the other application's
// constraint.
func sharedStoreTenant(ctx context.Context, x *adversary) error {
	other, err := kernel.New(kernel.Config{Store: x.store, Namespace: kernelhook.Namespace(x.k) + "_tenant"})
	if err != nil {
		return err
	}
	defer other.Close()
	c := kernel.Constraint{Name: "no_duplicate_refund", Enabled: false, BlocksField: "is_duplicate", AppliesTo: []string{kindRefund}}
	theirs, err := other.Symbolic("tenant_policy").CommitConstraint(ctx, x.e.trace+"/tenant", c, blackboard.ScopePersistent)
	if err != nil {
		return err
	}
	if _, err := x.propose(ctx, x.e.beliefEntry()); err != nil {
		return err
	}
	if err := x.planAndRefund(ctx, "plan on the duplicate charge", "refund of the duplicate charge", keep); err != nil {
		return err
	}
	return x.submitEach(ctx, x.e.planEntry, []variant{{"plan citing the other application's constraint",
		func(en *kernel.Entry) { en.InputRefs = []string{theirs} }}})
}

package kernel

import (
	"context"
	"errors"
	"slices"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
)

// recheckCommitted is [Governor.RecheckAction].
func (k *Kernel) recheckCommitted(ctx context.Context, actionID string) (Decision, error) {
	const op = "recheck"
	act, err := k.store.Get(ctx, actionID)
	if errors.Is(err, blackboard.ErrNotFound) || err == nil && (act.Namespace != k.namespace || act.Slot != blackboard.Actions || act.Mode != blackboard.ModeCommit) {
		return Decision{}, newErr(op, actionID, reason.InvalidReference, ErrInvalidReference, "not a committed action")
	}
	if err != nil {
		return Decision{}, err
	}
	snap, err := k.load(ctx, act.Provenance.TraceID, true)
	if err != nil {
		return Decision{}, err
	}
	defer snap.release()
	snap.markExpired() // in the snapshot only: a recheck writes nothing
	a := snap.byID(actionID)
	if a == nil || len(a.Provenance.InputRefs) == 0 {
		return Decision{}, newErr(op, actionID, reason.InvalidReference, ErrInvalidReference, "not a committed action")
	}
	out, err := k.recheckAction(ctx, snap, a)
	if err != nil {
		return Decision{}, err
	}
	if out.code == "" {
		out.code = reason.Committed
	}
	return Decision{ID: "recheck:" + a.ID, Code: out.code, ProposalID: a.Provenance.InputRefs[0], CommittedID: a.ID,
		Rule: out.rule, Failed: out.failed, Detail: out.detail, Causes: out.causes}, nil
}

// RecheckAction decides the committed action actionID again as of now,
// without writing anything: its beliefs must be the ones it rests on,
// still committed and true; every observation they rest on must still be
// the current one of its kind and pass the evidence checks (not stale, not
// past its TTL, not conflicted, confident); the action must still hold
// its once-key (when its spec has one); and its plan, its prediction gate,
// the constraints in force and the custom validators (the owner's rules)
// must still admit it. Code is COMMITTED when the action may still run,
// else the refusal code with the record that failed, as a [Decision]
// names them.
//
// An executor calls it before an action that waited (for an approval, or
// for a recovery) runs its effect: an approval decides the arguments, not
// the evidence, which may have changed in the hours it took. It fails
// with [ErrInvalidReference] when actionID is not a committed action of
// the kernel's namespace. Safe for concurrent use.
func (g *Governor) RecheckAction(ctx context.Context, actionID string) (Decision, error) {
	return g.k.recheckCommitted(ctx, actionID)
}

// recheckAction runs the action gate's checks on the committed action a
// against the snapshot, through the gate's own code, plus what only
// matters for an action already committed: that its beliefs and their
// observations are still the ones it was decided on. A zero code passes.
func (k *Kernel) recheckAction(ctx context.Context, s *snapshot, a *blackboard.Record) (outcome, error) {
	p := s.byID(a.Provenance.InputRefs[0]) // the committed twin names its proposal first
	if a.Status != blackboard.StatusActive || p == nil || p.Slot != blackboard.Actions {
		return outcome{code: reason.InvalidProposal, failed: a.ID, detail: "the action is " + string(a.Status) + " or has no proposal"}, nil
	}
	var bbuf beliefBuf
	g := k.newGate(s, a.Kind, list(p.Payload, keyRequiresBeliefs), p.Payload, &bbuf)
	if code := g.grounded(false); code != "" {
		return outcome{code: code}, nil
	}
	if !mutRequirePlan && g.spec.RequirePlan && s.planFor(a.Kind) == nil {
		return outcome{code: reason.NoFeasiblePlan}, nil
	}
	beliefs, refused := g.satisfied(reason.NoCommittedBelief, reason.BeliefNotSatisfied)
	if refused.code != "" {
		return refused, nil
	}
	g.beliefs = beliefs
	for _, b := range g.beliefs {
		if !mutRecheckCurrent && !slices.Contains(a.Provenance.InputRefs, b.ID) {
			return outcome{code: reason.SupersededEvidence, failed: b.ID, detail: "belief " + b.ID + " replaced the one the action rests on"}, nil
		}
	}
	out, flags := g.recheck()
	if out.code != "" {
		return out, nil
	}
	// recheck lets a newer observation pass when it passes the checks
	// itself; an action decided on the older one does not.
	for _, b := range g.beliefs {
		for _, evID := range b.EvidenceRefs {
			ev := s.byID(evID)
			if ev == nil {
				continue // only when the recheck switch is on: it refuses a missing artifact
			}
			for _, pid := range ev.Provenance.InputRefs {
				r := s.byID(pid)
				if r == nil {
					continue // likewise
				}
				if cur := s.current(r.Kind); !mutRecheckCurrent && cur != r {
					return outcome{code: reason.SupersededEvidence, failed: r.ID, detail: "observation " + r.ID + " is superseded by " + cur.ID}, nil
				}
			}
		}
	}
	if o := g.spec.Once; o != nil && !mutOnceKey {
		if _, err := k.onceKeyOf(ctx, a.ID); errors.Is(err, blackboard.ErrNotFound) {
			return outcome{code: reason.OnceKeyMissing, failed: a.ID, detail: "the action no longer holds its once-key"}, nil
		} else if err != nil {
			return outcome{}, err
		}
	}
	preds := g.predictions()
	flags[3] = negative(preds)
	if !mutPredictionGate && (g.spec.RequirePrediction || p.Payload.Bool(keyRequirePrediction)) {
		if len(preds) == 0 {
			return outcome{code: reason.NoPrediction}, nil
		}
		if flags[3] {
			return outcome{code: reason.NegativePrediction}, nil
		}
	}
	if out := g.constrained(flags, reason.Blocked); out.code != "" {
		return out, nil
	}
	if !mutValidators {
		c := Candidate{snap: s, proposal: p, beliefs: g.beliefs}
		for _, v := range k.validators {
			if vd := v.Validate(ctx, c); vd.rejects() {
				if err := ctx.Err(); err != nil {
					return outcome{}, err // cut short: not decided
				}
				return outcome{code: vd.Code, rule: vd.Rule, failed: vd.Record, detail: vd.Detail}, nil
			}
		}
	}
	return outcome{}, nil
}

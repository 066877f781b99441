package toolgate

import (
	"context"
	"errors"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
)

// retire frees the once-key slot of an action whose recorded result says
// it never ran: an escalation (its approver denied it, or its approval
// expired) or a refusal for good, both written before any attempt. It asks
// the kernel to retire the action with the first attempt's key as the
// fence ([kernel.Governor.Retire]): when an attempt was started after all
// (a driver that read the approval before it was denied), the fence is
// claimed, the retirement is refused and the key stays held, since an
// effect may have run. It is called each time such a result is read, so a
// crash between the result and the retirement is repaired by the next
// Execute or Recover.
//
// A refusal for good written before any attempt (recheck's, or the run
// controls') claims the first attempt's key itself, so that no driver
// starts the action after it: that fence is then held by the result
// being retired, not by an attempt, and the retirement takes a fence of
// its own ([job.retireKey]) instead.
func (x *executor) retire(ctx context.Context, j *job, rec blackboard.Record) error {
	switch {
	case rec.Kind == audit.KindEscalated:
	case rec.Kind == audit.KindFailed && effectOf(rec).Status == audit.StatusRefused:
	default:
		return nil
	}
	code := effectOf(rec).Code
	if code == "" {
		return nil // not a result the gate wrote: the key stays held
	}
	fence, err := x.retireFence(ctx, j, rec)
	if err != nil {
		return err
	}
	err = x.gov.Retire(ctx, j.act.ID, code, fence)
	if errors.Is(err, blackboard.ErrDuplicateKey) {
		return nil // an attempt started: the action holds its key
	}
	return err
}

// retireFence returns the key whose claim fences the retirement of the
// action whose never-ran result is rec: the first attempt's key, unless
// rec itself holds it (a refusal for good that claimed it, so that no
// attempt could start after it, nor before it, since the first attempt
// claims that key too); then the action's retirement key, which nothing
// else claims.
func (x *executor) retireFence(ctx context.Context, j *job, rec blackboard.Record) (string, error) {
	first := j.attemptKey(1)
	if !retireFenceOwn() {
		return first, nil
	}
	holder, err := x.gov.ClaimedBy(ctx, first)
	switch {
	case errors.Is(err, blackboard.ErrNotFound):
		return first, nil
	case err != nil:
		return "", err
	case holder == rec.ID:
		return j.retireKey(), nil
	}
	return first, nil // an attempt holds it: Retire is refused
}

// holderState words, for a model, what became of the action that holds a
// once-key (or used up a grounding) another call needed: only an action
// that executed was "already taken". A holder the gate did not commit, or
// whose state cannot be read, is described without claiming an effect.
func (x *executor) holderState(ctx context.Context, holderID string) string {
	const unknown = "An earlier call already holds this action. Do not retry it; tell the user it cannot be repeated now."
	if holderID == "" {
		return unknown
	}
	act, e, gd, err := x.gated(ctx, holderID)
	if err != nil {
		return unknown
	}
	j, err := x.newJob(ctx, e, act, gd.Context)
	if err != nil {
		return unknown
	}
	id, done, err := x.resultOf(ctx, j)
	if err != nil {
		return unknown
	}
	n, _, err := x.lastAttempt(ctx, j, 1)
	if err != nil {
		return unknown
	}
	if done {
		rec, err := x.reader.Get(ctx, id)
		switch {
		case err != nil:
			return unknown
		case rec.Kind == audit.KindEscalated || rec.Kind == audit.KindFailed && effectOf(rec).Status == audit.StatusRefused:
			if n > 0 {
				return "An earlier call of this action was stopped after it may have started; whether it took effect is not known. Do not retry it; tell the user it is under review."
			}
			if rec.Kind == audit.KindEscalated {
				return "An earlier call of this action was refused and did not run; it has been queued for review. Do not retry it; tell the user it is under review."
			}
			return "An earlier call of this action was refused and did not run. Do not retry it; tell the user it cannot be done now."
		case rec.Kind == audit.KindFailed && effectOf(rec).Code == reason.EffectUnknown:
			return "An earlier call of this action was started and whether it took effect is not known. Do not retry it; tell the user a person will check."
		case rec.Kind == audit.KindFailed:
			return "An earlier call of this action was tried and failed; it cannot be repeated. Do not retry it; tell the user it did not succeed."
		}
		return "This action was already taken. Do not retry it."
	}
	switch {
	case n > 0:
		return "An earlier call of this action is running now; its result is not known yet. Do not retry it."
	case gd.Outcome == audit.OutcomePendingApproval:
		return "An earlier call of this action is waiting for a person's approval (" + holderID + "). Do not retry it; tell the user it is pending."
	}
	return "An earlier call of this action was accepted and has not run yet. Do not retry it."
}

package toolgate

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
)

// Recover finishes the actions the gate committed and nobody finished: a
// process crashed (or a caller gave up) between a commit and its result.
// It is meant to run at start-up, and may run periodically; it is safe to
// run in several processes at once, and next to live calls.
//
// For every action the gate committed in the kernel's namespace that has
// no recorded result:
//
//   - an attempt whose lease is over is re-driven when the world dedups
//     the effect by its key (a tool with a once-key, or an Idempotent
//     one): the next attempt number, the same idempotency key,
//     within the tool's retry budget (an attempt left without a result
//     counts as used; when none is left, the action fails with
//     EFFECT_RETRIES_EXHAUSTED); any other tool's is recorded as
//     EFFECT_UNKNOWN, for a person, and its effect is not started again;
//   - an attempt whose lease is not over is left to its driver;
//   - a caller-driven tool's action ([Tool.Effect] nil) is never started:
//     Recover has no effect for it. One not yet started, or whose
//     attempt may be re-driven, is left as it is, recorded nothing and
//     not returned, for the caller's call under the same retry key;
//     an attempt that may not be re-driven is EFFECT_UNKNOWN, as above;
//   - an action no attempt was started for is executed, once it is older
//     than the lease (a younger one may be about to start), unless it
//     still waits for its approval; an approval that was denied or has
//     expired escalates to the fallback.
//
// An escalated action whose safe fallback was never submitted (a crash
// between the two) gets it.
//
// An effect whose result is recorded is never started again. Recover
// returns the results of the actions it drove, in no particular order, and
// the errors it met joined (it goes on past an action that fails with an
// error). It reads every decision record of the namespace, so its cost
// grows with the history.
func (g *Gate) Recover(ctx context.Context) ([]Result, error) {
	type candidate struct {
		e  *entry
		id string
	}
	var cands []candidate
	seen := map[string]bool{}
	// finished holds the actions whose effect has a recorded result
	// (executed or failed) by the decision record written with it: the
	// store remembers finished work, so a long history costs this one
	// pass, not a look at each action. A result that says the action never
	// ran (refused, escalated) is still visited: its retirement or its
	// fallback may be missing.
	finished := map[string]bool{}
	for d, err := range audit.List(ctx, g.reader, audit.Query{}) {
		if err != nil {
			return nil, err
		}
		if id, ok := g.finishedBy(d); ok {
			finished[id] = true
			continue
		}
		if d.Outcome != audit.OutcomeCommitted && d.Outcome != audit.OutcomePendingApproval {
			continue
		}
		tool, _ := d.Context["tool"].(string)
		e := g.tools[tool]
		if e == nil || d.Kind != e.action() || seen[d.Subject] {
			continue
		}
		seen[d.Subject] = true
		cands = append(cands, candidate{e, d.Subject})
	}
	var (
		results []Result
		errs    []error
	)
	for _, c := range cands {
		if err := ctx.Err(); err != nil {
			return results, errors.Join(append(errs, err)...)
		}
		if finished[c.id] {
			continue
		}
		res, driven, err := g.recoverOne(ctx, c.id)
		if err != nil {
			errs = append(errs, err)
		}
		if driven {
			results = append(results, res)
		}
	}
	return results, errors.Join(errs...)
}

// resultBy returns the action whose result the decision record d was
// written with, and its outcome: d is about a percept of the gate's (the
// result: executed, failed, escalated or refused for good), whose first
// input is the action. Only the gate's governor writes decision records.
func (g *Gate) resultBy(d audit.Entry) (string, audit.Outcome, bool) {
	if len(d.EvidenceRefs) == 0 || !strings.HasPrefix(d.Subject, blackboard.Percepts.String()+":") {
		return "", "", false
	}
	switch d.Outcome {
	case audit.OutcomeExecuted, audit.OutcomeFailed, audit.OutcomeEscalated, audit.OutcomeRefused:
	default:
		return "", "", false
	}
	tool, _ := d.Context["tool"].(string)
	if e := g.tools[tool]; e == nil || d.Kind != e.action() {
		return "", "", false
	}
	return d.EvidenceRefs[0], d.Outcome, true
}

// finishedBy returns the action whose effect's result (executed or
// failed: [Gate.finish]) the decision record d was written with.
func (g *Gate) finishedBy(d audit.Entry) (string, bool) {
	id, outcome, ok := g.resultBy(d)
	return id, ok && (outcome == audit.OutcomeExecuted || outcome == audit.OutcomeFailed)
}

// Lease returns the gate's lease ([Config.Lease]): how long an attempt is
// reserved to its driver. A process that restarts after a crash waits it
// out before [Gate.Recover] can take over the attempts it left.
func (g *Gate) Lease() time.Duration { return g.lease }

// recoverOne finishes one action if it needs it; driven reports whether
// it did anything.
func (g *Gate) recoverOne(ctx context.Context, actionID string) (res Result, driven bool, err error) {
	act, e, gd, err := g.gated(ctx, actionID)
	if err != nil {
		return Result{}, false, err
	}
	j, err := g.newJob(ctx, e, act, gd.Context)
	if err != nil {
		return Result{}, false, err
	}
	if id, done, err := g.resultOf(ctx, j); err != nil {
		return Result{}, false, err
	} else if done {
		return g.recoverFallback(ctx, j, id)
	}
	n, att, err := g.lastAttempt(ctx, j, 0)
	if err != nil {
		return Result{}, false, err
	}
	if n > 0 && !g.leaseOver(att) {
		return Result{}, false, nil
	}
	if n == 0 && g.k.Now().UnixMilli() <= act.Provenance.TimestampMS+g.lease.Milliseconds() {
		return Result{}, false, nil
	}
	res, err = g.executeAction(ctx, e, act, gd, nil, nil)
	if err == nil && (res.Outcome == audit.OutcomePendingApproval || res.Code == CodeEffectUnavailable) {
		// Waiting for its approver, or for its caller's retry with the
		// effect: nothing was done.
		return Result{}, false, nil
	}
	return res, true, err
}

// recoverFallback submits the safe fallback of an escalated action that a
// crash stopped between the escalation record and the fallback's commit.
// An action the gate already proposed a fallback for (committed or refused
// by the kernel) is left alone.
func (g *Gate) recoverFallback(ctx context.Context, j *job, resultID string) (Result, bool, error) {
	rec, err := g.reader.Get(ctx, resultID)
	if err == nil {
		// A crash between a never-ran result and its retirement left the
		// once-key held: retire it now (see retire).
		err = g.retire(ctx, j, rec)
	}
	if err != nil || rec.Kind != KindEscalated {
		return Result{}, false, err
	}
	if _, proposed, err := g.fallbackOf(ctx, j); err != nil || proposed {
		return Result{}, false, err
	}
	res, err := g.recorded(ctx, j, resultID)
	return res, true, err
}

// pendingApprovals lists the actions of the trace that wait for approval,
// or of every trace when traceID is "" (each entry names its own trace):
// committed by the gate with a policy that needs one, not started and with
// no result (a denied or expired one is listed until an Execute escalates
// it). They come in commit order.
//
// What an approver is shown comes from the committed action itself: the
// tool is the one whose action type it is, the arguments and digest are
// its payload's. A decision record only points at candidates: one that is
// not the record the gate wrote when it committed a gate action of this
// trace (see [Gate.Execute]) is passed over, whatever its context says.
func (g *Gate) pendingApprovals(ctx context.Context, traceID string) ([]Pending, error) {
	// One pass: the actions that waited, and those with a result, known by
	// the decision record written with it, so that an action approved and
	// done long ago costs nothing more to pass over.
	var recs []audit.Entry
	done := map[string]bool{}
	for d, err := range audit.List(ctx, g.reader, audit.Query{TraceID: traceID}) {
		if err != nil {
			return nil, err
		}
		if id, _, ok := g.resultBy(d); ok {
			done[id] = true
		} else if d.Outcome == audit.OutcomePendingApproval {
			recs = append(recs, d)
		}
	}
	var out []Pending
	for _, d := range recs {
		if done[d.Subject] {
			continue
		}
		act, e, gd, ok, err := g.pendingAction(ctx, traceID, d)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		j, err := g.newJob(ctx, e, act, gd.Context)
		if err != nil {
			return nil, err
		}
		if _, done, err := g.resultOf(ctx, j); done || err != nil {
			if err != nil {
				return nil, err
			}
			continue
		}
		if n, _, err := g.lastAttempt(ctx, j, 1); n > 0 || err != nil {
			if err != nil {
				return nil, err
			}
			continue
		}
		digest, err := ArgsDigest(act.Payload)
		if err != nil {
			return nil, err
		}
		p := Pending{ActionID: act.ID, TraceID: act.TraceID(), Tool: e.Name, Args: j.args, Digest: digest}
		p.Caller, _ = gd.Context["caller"].(string)
		p.CallID, _ = gd.Context["call_id"].(string)
		p.Reason, _ = gd.Context["approval_reason"].(string)
		out = append(out, p)
	}
	return out, nil
}

// pendingAction returns the committed action a pending-approval decision
// record is about, its tool and the gate's commit record for it; ok is
// false when d is not that record of a gate action of the trace.
func (g *Gate) pendingAction(ctx context.Context, traceID string, d audit.Entry) (act blackboard.Record, e *entry, gd audit.Entry, ok bool, err error) {
	if mutApproverView {
		tool, _ := d.Context["tool"].(string)
		if e = g.tools[tool]; e == nil || d.Kind != e.action() {
			return blackboard.Record{}, nil, d, false, nil
		}
		act, err = g.reader.Get(ctx, d.Subject)
		return act, e, d, err == nil, err
	}
	act, e, gd, err = g.gated(ctx, d.Subject)
	switch {
	case errors.Is(err, ErrUnknownAction):
		return blackboard.Record{}, nil, gd, false, nil
	case err != nil:
		return blackboard.Record{}, nil, gd, false, err
	}
	return act, e, gd, (traceID == "" || act.TraceID() == traceID) && gd.RecordID == d.RecordID, nil
}

package toolgate

import (
	"context"
	"errors"
	"strings"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/kernelhook"
	"github.com/blackboardkernel/bk/reason"
)

// recoverAll is [Gate.Recover].
func (x *executor) recoverAll(ctx context.Context) ([]Result, error) {
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
	for d, err := range audit.List(ctx, x.reader, audit.Query{}) {
		if err != nil {
			return nil, err
		}
		if id, ok := x.finishedBy(d); ok {
			finished[id] = true
			continue
		}
		if d.Outcome != audit.OutcomeCommitted && d.Outcome != audit.OutcomePendingApproval {
			continue
		}
		tool, _ := d.Context["tool"].(string)
		e := x.g.tools[tool]
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
		res, driven, err := x.recoverOne(ctx, c.id)
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
func (x *executor) resultBy(d audit.Entry) (string, audit.Outcome, bool) {
	if len(d.EvidenceRefs) == 0 || !strings.HasPrefix(d.Subject, string(blackboard.Percepts)+":") {
		return "", "", false
	}
	switch d.Outcome {
	case audit.OutcomeExecuted, audit.OutcomeFailed, audit.OutcomeEscalated, audit.OutcomeRefused:
	default:
		return "", "", false
	}
	tool, _ := d.Context["tool"].(string)
	if e := x.g.tools[tool]; e == nil || d.Kind != e.action() {
		return "", "", false
	}
	return d.EvidenceRefs[0], d.Outcome, true
}

// finishedBy returns the action whose effect's result (executed or
// failed: [executor.finish]) the decision record d was written with.
func (x *executor) finishedBy(d audit.Entry) (string, bool) {
	id, outcome, ok := x.resultBy(d)
	return id, ok && (outcome == audit.OutcomeExecuted || outcome == audit.OutcomeFailed)
}

// recoverOne finishes one action if it needs it; driven reports whether
// it did anything.
func (x *executor) recoverOne(ctx context.Context, actionID string) (res Result, driven bool, err error) {
	act, e, gd, err := x.gated(ctx, actionID)
	if err != nil {
		return Result{}, false, err
	}
	j, err := x.newJob(ctx, e, act, gd.Context)
	if err != nil {
		return Result{}, false, err
	}
	if id, done, err := x.resultOf(ctx, j); err != nil {
		return Result{}, false, err
	} else if done {
		return x.recoverFallback(ctx, j, id)
	}
	n, att, err := x.lastAttempt(ctx, j, 0)
	if err != nil {
		return Result{}, false, err
	}
	if n > 0 && !x.leaseOver(att) {
		return Result{}, false, nil
	}
	if n == 0 && kernelhook.Now(x.k).UnixMilli() <= act.Provenance.TimestampMS+x.lease.Milliseconds() {
		return Result{}, false, nil
	}
	res, err = x.executeAction(ctx, e, act, gd, nil, nil)
	if err == nil && (res.Outcome == audit.OutcomePendingApproval || res.Code == reason.EffectUnavailable) {
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
func (x *executor) recoverFallback(ctx context.Context, j *job, resultID string) (Result, bool, error) {
	rec, err := x.reader.Get(ctx, resultID)
	if err == nil {
		// A crash between a never-ran result and its retirement left the
		// once-key held: retire it now (see retire).
		err = x.retire(ctx, j, rec)
	}
	if err != nil || rec.Kind != audit.KindEscalated {
		return Result{}, false, err
	}
	if _, proposed, err := x.fallbackOf(ctx, j); err != nil || proposed {
		return Result{}, false, err
	}
	res, err := x.recorded(ctx, j, resultID)
	return res, true, err
}

// pendingApprovals lists what [Gate.Pending] lists, without the latest answers.
func (x *executor) pendingApprovals(ctx context.Context, traceID string) ([]audit.Pending, error) {
	// One pass: the actions that waited, and those with a result, known by
	// the decision record written with it, so that an action approved and
	// done long ago costs nothing more to pass over.
	var recs []audit.Entry
	done := map[string]bool{}
	for d, err := range audit.List(ctx, x.reader, audit.Query{TraceID: traceID}) {
		if err != nil {
			return nil, err
		}
		if id, _, ok := x.resultBy(d); ok {
			done[id] = true
		} else if d.Outcome == audit.OutcomePendingApproval {
			recs = append(recs, d)
		}
	}
	var out []audit.Pending
	for _, d := range recs {
		if done[d.Subject] {
			continue
		}
		act, e, gd, ok, err := x.pendingAction(ctx, traceID, d)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		j, err := x.newJob(ctx, e, act, gd.Context)
		if err != nil {
			return nil, err
		}
		if _, done, err := x.resultOf(ctx, j); done || err != nil {
			if err != nil {
				return nil, err
			}
			continue
		}
		if n, _, err := x.lastAttempt(ctx, j, 1); n > 0 || err != nil {
			if err != nil {
				return nil, err
			}
			continue
		}
		digest, err := ArgsDigest(act.Payload)
		if err != nil {
			return nil, err
		}
		p := audit.Pending{ActionID: act.ID, TraceID: act.Provenance.TraceID, Tool: e.Name, Args: j.args, Digest: digest}
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
func (x *executor) pendingAction(ctx context.Context, traceID string, d audit.Entry) (act blackboard.Record, e *entry, gd audit.Entry, ok bool, err error) {
	if !approverViewFromAction() {
		tool, _ := d.Context["tool"].(string)
		if e = x.g.tools[tool]; e == nil || d.Kind != e.action() {
			return blackboard.Record{}, nil, d, false, nil
		}
		act, err = x.reader.Get(ctx, d.Subject)
		return act, e, d, err == nil, err
	}
	act, e, gd, err = x.gated(ctx, d.Subject)
	switch {
	case errors.As(err, new(*notGated)):
		return blackboard.Record{}, nil, gd, false, nil
	case err != nil:
		return blackboard.Record{}, nil, gd, false, err
	}
	return act, e, gd, (traceID == "" || act.Provenance.TraceID == traceID) && gd.RecordID == d.RecordID, nil
}

package toolgate

import (
	"context"
	"fmt"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// An action's recorded result as its caller gets it: read or just written,
// settled (a result that ends the action retires it; an escalation gets
// its safe fallback) and turned into a Result.

// recordedByKey returns the recorded result after a write lost the race
// for the result key.
func (x *executor) recordedByKey(ctx context.Context, j *job) (Result, error) {
	id, ok, err := x.resultOf(ctx, j)
	if err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("toolgate: result key of %s claimed but not found", j.act.ID)
		}
		return Result{ActionID: j.act.ID}, err
	}
	return x.recorded(ctx, j, id)
}

// recorded turns the id of a result record written earlier (by another
// call, driver or process) into a Result, reading the result and its
// decision record by id; a driver that has just written the result uses
// what the write returned instead ([executor.written]; finish knows the
// decision's id from the record it built), which reads nothing.
func (x *executor) recorded(ctx context.Context, j *job, id string) (Result, error) {
	rec, err := x.reader.Get(ctx, id)
	if err != nil {
		return Result{ActionID: j.act.ID}, err
	}
	dr, _, err := x.decisionAbout(ctx, id)
	if err != nil {
		return Result{ActionID: j.act.ID}, err
	}
	return x.result(ctx, j, rec, dr.ID)
}

// written turns the result this driver has just written into a Result,
// from what the write returned: no read of the store.
func (x *executor) written(ctx context.Context, j *job, w wrote) (Result, error) {
	return x.result(ctx, j, w.rec, decisionID(w))
}

// result turns the result record rec, whose decision record is
// decisionID, into a Result. rec is the caller's own copy, used no more:
// a success's payload becomes the Result's Output.
func (x *executor) result(ctx context.Context, j *job, rec blackboard.Record, decisionID string) (res Result, err error) {
	res = Result{ActionID: j.act.ID, DecisionID: decisionID}
	eff := effectOf(rec)
	res.Code = eff.Code
	if err := x.retire(ctx, j, rec); err != nil {
		return res, err
	}
	switch rec.Kind {
	case audit.KindEscalated:
		res.Outcome = audit.OutcomeRefused
		res.RootCause = kernel.Cause{Code: res.Code, Record: eff.Approval, Detail: eff.Note}
		res.Hint = x.hint(ctx, j.e, res.Code, res.RootCause, "")
		if res.FallbackID, err = x.ensureFallback(ctx, j, res.Code); err != nil {
			return res, err
		}
	case audit.KindFailed:
		res.Outcome = audit.OutcomeFailed
		res.RootCause = kernel.Cause{Code: res.Code, Record: rec.ID, Detail: eff.Error}
		if eff.ExecutionStatus != "" {
			// The typed signal, for the worker and the repair router.
			res.Output = blackboard.Payload{"execution_status": string(eff.ExecutionStatus), "category": string(eff.Category),
				"error": eff.Error, "retryable": eff.Retryable}
		}
		if eff.Status == audit.StatusRefused {
			res.Outcome, res.RootCause.Record = audit.OutcomeRefused, j.act.ID
		}
		res.Hint = x.hint(ctx, j.e, res.Code, res.RootCause, "")
	default:
		res.Outcome = audit.OutcomeExecuted
		// rec is this call's copy (a store's or the kernel's answer), read
		// no more: its payload becomes the output as it is.
		res.Output = rec.Payload
		delete(res.Output, audit.KeyEffect)
	}
	return res, nil
}

// ensureFallback returns the safe fallback that escalates the action,
// submitting it if it is missing (the first time, or after a crash between
// the escalation and the fallback).
func (x *executor) ensureFallback(ctx context.Context, j *job, code reason.Code) (string, error) {
	if id, _, err := x.fallbackOf(ctx, j); err != nil || id != "" {
		return id, err
	}
	cc := j.cc.Clone()
	cc["escalates"], cc["reason"] = j.act.ID, string(code)
	d, _, err := x.planner.Submit(ctx, kernel.Entry{TraceID: j.trace, Slot: blackboard.Actions, Kind: x.fallback,
		Payload: blackboard.Payload{"reason": string(code), "escalates": j.act.ID, "tool": j.e.Name, "requires_beliefs": []string{}}},
		func(dr audit.Entry) audit.Entry { dr.Context = cc; return dr })
	if err != nil || !d.Committed() {
		return "", err // a fallback the kernel refuses leaves the escalation record as the trail
	}
	return d.CommittedID, nil
}

// fallbackOf returns the committed safe fallback that escalates the
// action ("" when there is none), and whether the gate ever proposed one.
func (x *executor) fallbackOf(ctx context.Context, j *job) (id string, proposed bool, err error) {
	for r, err := range x.reader.Trace(ctx, j.trace) {
		if err != nil {
			return "", false, err
		}
		if r.Slot != blackboard.Actions || r.Kind != x.fallback || r.Payload["escalates"] != any(j.act.ID) {
			continue
		}
		if r.Mode == blackboard.ModeCommit {
			return r.ID, true, nil
		}
		proposed = proposed || r.Provenance.Writer == audit.GateWriter
	}
	return "", proposed, nil
}

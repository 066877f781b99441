package toolgate

import (
	"context"
	"errors"
	"iter"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/kernelhook"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// approvals streams the approval records of action actionID in trace
// traceID, oldest first, as r reads them.
func approvals(ctx context.Context, r kernel.Reader, traceID, actionID string) iter.Seq2[blackboard.Record, error] {
	return func(yield func(blackboard.Record, error) bool) {
		for rec, err := range r.Trace(ctx, traceID) {
			if err != nil {
				yield(blackboard.Record{}, err)
				return
			}
			if a, ok := audit.ApprovalOf(rec); !ok || a.ActionID != actionID {
				continue
			}
			if !yield(rec, nil) {
				return
			}
		}
	}
}

// checkApproval applies the latest approval decision for the action
// before its first attempt. done reports that res is the answer (waiting,
// escalated or refused); otherwise j.approval names the approval the
// first attempt consumes.
func (x *executor) checkApproval(ctx context.Context, j *job) (res Result, done bool, err error) {
	var latest *blackboard.Record
	for r, err := range approvals(ctx, x.reader, j.trace, j.act.ID) {
		if err != nil {
			return Result{ActionID: j.act.ID}, true, err
		}
		latest = &r
	}
	if latest == nil {
		digest, err := ArgsDigest(j.act.Payload)
		if err != nil {
			return Result{ActionID: j.act.ID}, true, err
		}
		return x.pending(ctx, j.e, j.act.ID, j.args, digest), true, nil
	}
	a, _ := audit.ApprovalOf(*latest)
	switch {
	case a.Decision != audit.Approved:
		res, err := x.escalate(ctx, j, reason.ApprovalDenied, *latest)
		return res, true, err
	case expired(latest, kernelhook.Now(x.k)):
		res, err := x.escalate(ctx, j, reason.ApprovalExpired, *latest)
		if errors.Is(err, errSuperseded) && !j.superseded {
			// A person gave a new decision on the action between this
			// driver's read and its write: act on that one, once.
			j.superseded = true
			return x.checkApproval(ctx, j)
		}
		return res, true, err
	}
	want, err := ArgsDigest(j.act.Payload)
	if err != nil {
		return Result{ActionID: j.act.ID}, true, err
	}
	if a.Digest != want {
		// Approve binds the digest when it records the approval; this
		// holds unless the record was tampered with.
		res, err := x.refuseForGood(ctx, j, reason.ApprovalMismatch, "approval "+a.ID+" binds digest "+a.Digest+", the action's is "+want)
		return res, true, err
	}
	if caller, _ := j.cc["caller"].(string); a.Approver == audit.CallerWriter(caller) {
		// Approve refuses this; it holds unless the record was forged.
		res, err := x.refuseForGood(ctx, j, reason.ApprovalMismatch, "approval "+a.ID+" is by the action's own proposer")
		return res, true, err
	}
	j.approval = a.ID
	return Result{}, false, nil
}

// errSuperseded: an escalation of an expired approval lost its write to
// a new decision that superseded the approval (it claimed the approval's
// use first), so the action is not escalated.
var errSuperseded = errors.New("toolgate: the expired approval was superseded by a new decision")

// escalate records that the action will not run and submits the safe
// fallback.
func (x *executor) escalate(ctx context.Context, j *job, code reason.Code, approval blackboard.Record) (Result, error) {
	w, err := x.writeEscalation(ctx, j, code, approval)
	if err == nil {
		x.effectRecorded(ctx, j, audit.StatusEscalated, code)
	}
	if errors.Is(err, blackboard.ErrDuplicateKey) {
		if code == reason.ApprovalExpired {
			if _, ok, rerr := x.resultOf(ctx, j); rerr == nil && !ok {
				return Result{ActionID: j.act.ID}, errSuperseded
			}
		}
		return x.recordedByKey(ctx, j)
	}
	if err != nil {
		return Result{ActionID: j.act.ID}, err
	}
	return x.written(ctx, j, w)
}

// writeEscalation records the escalation as the action's result, claiming
// the result key, with its decision record in the same batch. An expired
// approval's escalation also claims the approval's use, the key a new
// decision superseding it claims too, so that of the two only one is
// written: never a fallback beside a fresh approval.
func (x *executor) writeEscalation(ctx context.Context, j *job, code reason.Code, rec blackboard.Record) (wrote, error) {
	approval, _ := audit.ApprovalOf(rec)
	keys := []string{j.resultKey()}
	if code == reason.ApprovalExpired && escalationClaimsApproval() {
		keys = append(keys, approvalKey(rec.ID))
	}
	eff := j.effect(audit.StatusEscalated, 0, code)
	eff.Approval, eff.Approver, eff.Note = approval.ID, approval.Approver, approval.Note
	cc := j.cc.Clone()
	cc["approver"] = approval.Approver
	return j.e.handle.Write(ctx, kernel.Entry{TraceID: j.trace, Slot: blackboard.Percepts, Kind: audit.KindEscalated,
		Payload: payload(eff), InputRefs: []string{j.act.ID, approval.ID}, OnceKeys: keys},
		func(rec blackboard.Record) audit.Entry {
			dr := audit.ForRecord(rec, j.e.action(), audit.OutcomeEscalated, code)
			dr.Approvals, dr.Context = []string{approval.ID}, cc
			return dr
		})
}

// refuseForGood records that the action will never run: a refusal that
// claims the result key (and any further keys given, in the same write),
// so that no later Execute or Recover starts it, with its decision record
// in the same write. When another driver took one of the keys first, its
// result, or its running attempt, wins.
func (x *executor) refuseForGood(ctx context.Context, j *job, code reason.Code, detail string, keys ...string) (Result, error) {
	eff := j.effect(audit.StatusRefused, 0, code)
	eff.Error = detail
	cc := j.cc.Clone()
	cc["error"] = detail
	w, err := j.e.handle.Write(ctx, kernel.Entry{TraceID: j.trace, Slot: blackboard.Percepts, Kind: audit.KindFailed,
		Payload: payload(eff), InputRefs: []string{j.act.ID}, OnceKeys: append([]string{j.resultKey()}, keys...)},
		func(rec blackboard.Record) audit.Entry {
			dr := audit.ForRecord(rec, j.e.action(), audit.OutcomeRefused, code)
			dr.Context = cc
			return dr
		})
	if errors.Is(err, blackboard.ErrDuplicateKey) {
		if _, done, rerr := x.resultOf(ctx, j); rerr == nil && !done && len(keys) > 0 {
			return x.run(ctx, j) // an attempt started first: drive it to its result
		}
		return x.recordedByKey(ctx, j)
	}
	if err != nil {
		return Result{ActionID: j.act.ID}, err
	}
	return x.written(ctx, j, w)
}

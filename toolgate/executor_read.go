package toolgate

import (
	"context"
	"errors"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// Reading what the gate recorded about an action: its commit, its
// decision records, the record of its result.

// gated returns the committed action actionID, its tool and the decision
// record the gate wrote when it committed it.
func (x *executor) gated(ctx context.Context, actionID string) (blackboard.Record, *entry, audit.Entry, error) {
	unknown := func(why string) (blackboard.Record, *entry, audit.Entry, error) {
		return blackboard.Record{}, nil, audit.Entry{}, notAction(actionID, why)
	}
	act, err := x.reader.Get(ctx, actionID)
	if errors.Is(err, blackboard.ErrNotFound) {
		return unknown("no such record")
	}
	if err != nil {
		return blackboard.Record{}, nil, audit.Entry{}, err
	}
	e := x.g.tools[act.Kind]
	if act.Slot != blackboard.Actions || act.Mode != blackboard.ModeCommit || e == nil {
		return unknown("not a committed action of a registered tool")
	}
	gd, found, err := x.commitDecision(ctx, act.ID)
	if err != nil {
		return blackboard.Record{}, nil, audit.Entry{}, err
	}
	if !found || gd.Context["tool"] != any(e.Name) {
		return unknown("not committed through the gate")
	}
	caller, _ := gd.Context["caller"].(string)
	if len(act.Provenance.InputRefs) == 0 {
		return unknown("no proposal")
	}
	proposal, err := x.reader.Get(ctx, act.Provenance.InputRefs[0])
	if err != nil || proposal.Provenance.Writer != audit.CallerWriter(caller) {
		return unknown("not proposed by the caller the gate recorded")
	}
	return act, e, gd, nil
}

// commitDecision returns the decision record that committed the action
// (outcome committed or pending approval): the one the kernel wrote with
// it, read by id ([audit.About]).
func (x *executor) commitDecision(ctx context.Context, actionID string) (audit.Entry, bool, error) {
	d, found, err := x.decisionAbout(ctx, actionID)
	if !found || err != nil {
		return audit.Entry{}, false, err
	}
	return d, d.Outcome == audit.OutcomeCommitted || d.Outcome == audit.OutcomePendingApproval, nil
}

// decisionAbout returns the decision record the kernel wrote in the same
// batch as the record subject, read by id.
func (x *executor) decisionAbout(ctx context.Context, subject string) (audit.Entry, bool, error) {
	d, err := audit.About(ctx, x.reader, subject)
	if errors.Is(err, blackboard.ErrNotFound) {
		return audit.Entry{}, false, nil
	}
	return d, err == nil, err
}

// resultOf returns the record holding the action's result, if there is
// one.
func (x *executor) resultOf(ctx context.Context, j *job) (string, bool, error) {
	id, err := x.gov.ClaimedBy(ctx, j.resultKey())
	if errors.Is(err, blackboard.ErrNotFound) {
		return "", false, nil
	}
	return id, err == nil, err
}

// refuseAction records an execution-time refusal of a committed action.
func (x *executor) refuseAction(ctx context.Context, j *job, code reason.Code, detail string) (Result, error) {
	dr, err := audit.Append(ctx, x.planner.gov, audit.Entry{TraceID: j.trace, Kind: j.e.action(), Subject: j.act.ID,
		Outcome: audit.OutcomeRefused, Code: code, Detail: detail, Context: j.cc})
	if err != nil {
		return Result{ActionID: j.act.ID}, err
	}
	root := kernel.Cause{Code: code, Record: j.act.ID, Detail: detail}
	return Result{Outcome: audit.OutcomeRefused, Code: code, RootCause: root, Hint: x.hint(ctx, j.e, code, root, ""),
		ActionID: j.act.ID, DecisionID: dr.ID}, nil
}

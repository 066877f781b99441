package toolgate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/kernel"
)

// budgets are the limits a call is charged to: every loop guard and run
// that applies, the call's own ([Call.Budget], [Call.Guard]) first, then
// the gate's ([Config.Budget], [Config.Guard]). They compose: a run that
// another of them draws on (the gate's run above the call's sub-run) is
// charged through that one, and the same guard or run given twice counts
// once.
type budgets struct {
	guards []*budget.Guard
	runs   []*budget.Run
}

// budgetsOf returns what a call is charged to.
func (x *executor) budgetsOf(c Call) budgets {
	var bs budgets
	guards := []*budget.Guard{c.Guard, x.g.guard}
	from := []*budget.Run{c.Budget, x.g.budget}
	if !budgetsCompose() && (c.Budget != nil || c.Guard != nil) {
		guards, from = guards[:1], from[:1] // the call's budget replaces the gate's
	}
	for _, gd := range guards {
		if gd != nil && !slices.Contains(bs.guards, gd) {
			bs.guards = append(bs.guards, gd)
		}
	}
	var runs []*budget.Run
	for _, r := range from {
		if r != nil && !slices.Contains(runs, r) {
			runs = append(runs, r)
		}
	}
	// Keep the runs no other run draws on: charging a sub-run counts on
	// its ancestors in the same step.
	for _, r := range runs {
		if !slices.ContainsFunc(runs, func(o *budget.Run) bool { return o != r && o.DrawsOn(r) }) {
			bs.runs = append(bs.runs, r)
		}
	}
	return bs
}

// admit checks a call against its budgets before anything else happens to
// it: first every loop guard (so that a looping call spends no tool call),
// then every run's tool-call budget (and, through each, the cost and the
// deadline of the run and its ancestors). Every limit that applies is
// checked, and the first that refuses refuses the call; none replaces
// another. A call that passes is counted, and the snapshot of its first
// run (its own, else the gate's) taken just after goes into cc, so that
// every later decision record of the call carries it. A refused call gets
// a decision record of its own (outcome refused, BUDGET_EXCEEDED or
// LOOP_DETECTED, the reason and the snapshot of the run that refused in
// its context) and comes back as a Refused result whose hint is the
// reason's. A guard or run that admitted the call before another refused
// it keeps the count: the call was a step of the model's loop all the
// same.
func (x *executor) admit(ctx context.Context, c Call, e *entry, cc blackboard.Payload) (res Result, refused bool, err error) {
	bs := x.budgetsOf(c)
	if len(bs.guards) == 0 && len(bs.runs) == 0 {
		return Result{}, false, nil
	}
	tool := toolLabel(c.Tool)
	if tool == "" {
		tool = "unnamed_tool"
	}
	var why error
	digest := argsDigest(c.Args)
	if e != nil && len(e.Masked) > 0 && masksStored() {
		// A LOOP_DETECTED record keeps the digest: a plain one of
		// arguments holding a masked value could be matched against
		// guesses without the key.
		keyed, err := x.g.mask.value(ctx, c.TraceID, digest)
		if err != nil {
			return Result{}, true, err
		}
		digest = keyed
	}
	for _, gd := range bs.guards {
		if why = gd.Call(recordedTool(c.Tool), digest); why != nil {
			break
		}
	}
	var by *budget.Run // the run whose snapshot the records carry
	if len(bs.runs) > 0 {
		by = bs.runs[0]
	}
	for _, r := range bs.runs {
		if why != nil {
			break
		}
		if why = r.Allow(budget.ToolCalls, 1); why != nil {
			by = r
		}
	}
	var snap budget.Snapshot
	if by != nil {
		snap = by.Snapshot()
	}
	if by != nil {
		x.budgetChecked(ctx, tool, snap)
	}
	if why == nil {
		if by != nil {
			cc["budget"] = map[string]any(snap.Payload())
		}
		return Result{}, false, nil
	}
	kind := tool
	if e != nil {
		kind = e.action()
	}
	d, ok := budget.RefusalRecord(c.TraceID, kind, why, snap)
	if !ok {
		return Result{}, false, why // not a refusal: a bad argument to the budget
	}
	for k, v := range withRawArgs(cc, c, e) {
		if _, taken := d.Context[k]; !taken {
			d.Context[k] = v
		}
	}
	dr, err := audit.Append(ctx, x.planner.gov, d)
	if err != nil {
		return Result{}, false, err
	}
	reason := new(budget.Refusal)
	errors.As(why, &reason)
	return Result{Outcome: audit.OutcomeRefused, Code: reason.Code, RootCause: kernel.Cause{Code: reason.Code, Detail: reason.Detail},
		Hint: reason.Hint, DecisionID: dr.ID, refusal: why}, true, nil
}

// argsDigest is the loop guard's digest of a call's arguments: their
// canonical JSON digest ([budget.Digest]), or, for arguments that are not
// one JSON value, a digest of their bytes, so that the same malformed call
// repeated is still the same call.
func argsDigest(args []byte) string {
	if d, err := budget.Digest(args); err == nil {
		return d
	}
	sum := sha256.Sum256(args)
	return "raw:" + hex.EncodeToString(sum[:])
}

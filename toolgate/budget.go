package toolgate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/kernel"
)

// Budget is what a call is charged to before it is decided: the budget of
// the run it belongs to and that run's loop guard. Either may be nil. A
// sub-agent lane passes its own ([Call.Budget]): a sub-run of the parent's
// budget ([budget.Run.Sub]) and a guard of its own.
type Budget struct {
	Run   *budget.Run
	Guard *budget.Guard
}

// WithBudget sets the budget and loop guard that calls carrying none
// ([Call.Budget]) are checked against. Either may be nil. Use it when one
// gate serves one run; when several runs or lanes share a gate, give each
// call its own instead.
func WithBudget(run *budget.Run, guard *budget.Guard) Option {
	return func(c *config) {
		if run != nil || guard != nil {
			c.budget = &Budget{Run: run, Guard: guard}
		} else {
			c.budget = nil
		}
	}
}

// budgetOf returns the budget a call is charged to: its own, else the
// gate's; nil when there is none.
func (g *Gate) budgetOf(c Call) *Budget {
	b := c.Budget
	if b == nil {
		b = g.budget
	}
	if b == nil || b.Run == nil && b.Guard == nil {
		return nil
	}
	return b
}

// admit checks a call against its budget before anything else happens to
// it: first the loop guard (so that a looping call spends no tool call),
// then the run's tool-call budget (and, through it, the cost and the
// deadline of the run and its ancestors). A call that passes is counted,
// and the snapshot of the budget taken just after goes into cc, so that
// every later decision record of the call carries it. A refused call gets
// a decision record of its own (outcome refused, BUDGET_EXCEEDED or
// LOOP_DETECTED, the reason and the snapshot in its context) and comes
// back as a Refused result whose hint is the reason's.
func (g *Gate) admit(ctx context.Context, c Call, e *entry, cc kernel.Payload) (res Result, refused bool, err error) {
	b := g.budgetOf(c)
	if b == nil {
		return Result{}, false, nil
	}
	tool := clip(c.Tool)
	if tool == "" {
		tool = "unnamed_tool"
	}
	var why error
	if b.Guard != nil {
		why = b.Guard.Call(tool, argsDigest(c.Args))
	}
	if why == nil && b.Run != nil {
		why = b.Run.ToolCall()
	}
	var snap budget.Snapshot
	if b.Run != nil {
		snap = b.Run.Snapshot()
	}
	if why == nil {
		if b.Run != nil {
			cc[budget.KeyBudget] = map[string]any(snap.Payload())
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
	for k, v := range cc {
		if _, taken := d.Context[k]; !taken {
			d.Context[k] = v
		}
	}
	dr, err := g.k.RecordDecision(ctx, d)
	if err != nil {
		return Result{}, false, err
	}
	reason, _ := budget.ReasonOf(why)
	hint := reason.Hint
	if e != nil {
		if h, ok := e.Hints[reason.Code]; ok {
			hint = h
		}
	}
	return Result{Outcome: Refused, Code: reason.Code, RootCause: kernel.Cause{Code: reason.Code, Detail: reason.Detail},
		Hint: hint, DecisionID: dr.ID, refusal: why}, true, nil
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

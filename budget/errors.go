package budget

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
)

// Sentinels for errors.Is. A [*Refusal] wraps [ErrExceeded] (code
// BUDGET_EXCEEDED) or [ErrLoopDetected] (code LOOP_DETECTED); a bad
// argument (negative limits or amounts, an unknown resource, an option out
// of range) wraps [ErrInvalid].
var (
	ErrExceeded     = errors.New("budget exceeded")
	ErrLoopDetected = errors.New("loop detected")
	ErrInvalid      = errors.New("budget: invalid argument")
)

// Refusal is the refusal of a budget or of the loop guard, and the shape
// the planner receives it in: which code, which budget or guard, the
// numbers, what happened and what to do next. It is the error [Run] and
// [Guard] return; find it in an error chain with errors.As (a *Refusal
// target).
//
// A budget refuses a call before it is made, and nothing was counted for
// it; or a charge ([Run.ChargeTokens], [Run.ChargeCost]) whose usage,
// recorded, went beyond a limit and ended the run (Requested is then 0). A
// guard refuses a repeated identical tool call (the call is not made) or a
// run of rounds without progress (the loop should stop).
//
// Its JSON form holds only the fields that apply to its code:
//
//	{"code":"BUDGET_EXCEEDED","budget":"tool_calls","limit":10,"used":10,"requested":1,"run":"r1","detail":"…","hint":"…"}
//	{"code":"LOOP_DETECTED","loop":"repeated_call","tool":"search","digest":"sha256:…","repeats":2,"detail":"…","hint":"…"}
//	{"code":"LOOP_DETECTED","loop":"no_progress","idle_rounds":2,"detail":"…","hint":"…"}
type Refusal struct {
	// Code is [reason.BudgetExceeded] or [reason.LoopDetected].
	Code reason.Code

	// For BUDGET_EXCEEDED. Resource is the budget that refused. Limit and
	// Used are that budget's limit and what had been used of it when the
	// call was refused (the deadline in milliseconds since the refusing
	// run started; for tokens, including the tokens held for model calls
	// not yet settled); Requested is what the call asked for (0 for a
	// cost already spent). Run is the id of the run whose limit refused:
	// the run asked, or an ancestor it draws on.
	Resource               Resource
	Limit, Used, Requested float64
	Run                    string

	// For LOOP_DETECTED. Loop says which guard stopped the run
	// ([RepeatedCall] or [NoProgress]). Tool and
	// Digest name the repeated call (repeated_call), Repeats how many
	// identical calls the guard had already let through; IdleRounds is
	// the number of consecutive rounds without progress (no_progress).
	Loop         string
	Tool, Digest string
	Repeats      int
	IdleRounds   int

	// Detail says what happened; Hint what the planner can do about it.
	Detail, Hint string
}

// exceeded is the refusal of a budget, with its detail and hint.
func exceeded(res Resource, limit, used, requested float64, run string) *Refusal {
	e := &Refusal{Code: reason.BudgetExceeded, Resource: res, Limit: limit, Used: used, Requested: requested, Run: run,
		Hint: budgetHints[res]}
	e.Detail = e.Error()
	return e
}

// Error describes the refusal: for a budget, the budget, the run, its use
// and limit; for the loop guard, what repeated.
func (e *Refusal) Error() string {
	if e.Code != reason.BudgetExceeded {
		return "budget: loop detected: " + e.Detail
	}
	if e.Resource == Deadline {
		return fmt.Sprintf("budget: run %s is past its deadline (%s ms of %s ms)", e.Run, num(e.Used), num(e.Limit))
	}
	msg := fmt.Sprintf("budget: %s of run %s exhausted: %s of %s used", e.Resource, e.Run, num(e.Used), num(e.Limit))
	if e.Requested > 0 {
		msg += ", " + num(e.Requested) + " more asked"
	}
	return msg
}

// Unwrap returns [ErrExceeded] for a budget's refusal, [ErrLoopDetected]
// for the loop guard's.
func (e *Refusal) Unwrap() error {
	if e.Code == reason.BudgetExceeded {
		return ErrExceeded
	}
	return ErrLoopDetected
}

// budgetHints tell the planner what it can still do once a budget is gone.
var budgetHints = map[Resource]string{
	Tokens:           "the token budget is spent: finish with the results already gathered, or stop",
	ModelCalls:       "no model calls are left: finish with the results already gathered, or stop",
	ToolCalls:        "no tool calls are left in this run: answer from the results already gathered",
	toolCallsPerTurn: "this turn has used its tool calls: answer now; the next turn may call tools again",
	Rounds:           "the run has used all its rounds: conclude, or hand over to a person",
	Replans:          "no re-planning attempts are left: carry out the current plan, or escalate",
	Cost:             "the cost budget is spent: stop",
	Deadline:         "the run is out of time: stop and report what you have",
}

// The two loop guards, as [Refusal.Loop] names them.
const (
	RepeatedCall = "repeated_call" // the same tool with the same arguments, again
	NoProgress   = "no_progress"   // consecutive rounds that changed nothing
)

// loopDetected is the refusal of a [Guard], with its hint.
func loopDetected(r Refusal) *Refusal {
	r.Code = reason.LoopDetected
	switch r.Loop {
	case RepeatedCall:
		r.Hint = "this exact call was already made: use the result you have, change the arguments, or do something else"
	default:
		r.Hint = "recent rounds changed nothing on the blackboard: change the approach, or escalate"
	}
	return &r
}

// payload returns the refusal as a JSON-compatible payload, for a
// decision record's Context or a tool result sent back to the model.
func (e *Refusal) payload() blackboard.Payload {
	p := blackboard.Payload{"code": string(e.Code), "detail": e.Detail, "hint": e.Hint}
	switch e.Code {
	case reason.BudgetExceeded:
		p["budget"], p["limit"], p["used"], p["requested"] = string(e.Resource), e.Limit, e.Used, e.Requested
		if e.Run != "" {
			p["run"] = e.Run
		}
	case reason.LoopDetected:
		p["loop"] = e.Loop
		if e.Loop == RepeatedCall {
			p["tool"], p["digest"], p["repeats"] = e.Tool, e.Digest, float64(e.Repeats)
		} else {
			p["idle_rounds"] = float64(e.IdleRounds)
		}
	}
	return p
}

// MarshalJSON encodes the refusal in the shape shown above: the fields of
// its code only, under snake_case names.
func (e *Refusal) MarshalJSON() ([]byte, error) { return json.Marshal(map[string]any(e.payload())) }

// RefusalRecord builds the decision record of a call that a budget or the
// loop guard refused, for [audit.Append]: outcome refused, the refusal's
// code, and a Context holding the refusal (under "reason", in its JSON
// form) and, when snap was taken (it has a run id), the budget snapshot
// (under "budget"). kind names the tool or the model call. ok is false
// when err holds no [*Refusal].
func RefusalRecord(traceID, kind string, err error, snap Snapshot) (d audit.Entry, ok bool) {
	var rf *Refusal
	if !errors.As(err, &rf) {
		return audit.Entry{}, false
	}
	ctx := blackboard.Payload{"reason": map[string]any(rf.payload())}
	if snap.RunID != "" {
		ctx["budget"] = map[string]any(snap.Payload())
	}
	return audit.Entry{
		TraceID: traceID, Kind: kind, Outcome: audit.OutcomeRefused, Code: rf.Code, Detail: rf.Detail, Context: ctx,
	}, true
}

// num formats a budget number: integers without a fraction.
func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

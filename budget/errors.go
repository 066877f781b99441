package budget

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
)

// Sentinels for errors.Is. A refusal wraps [ErrExceeded] or
// [ErrLoopDetected]; a bad argument (negative limits or amounts, an unknown
// resource, an option out of range) wraps [ErrInvalid].
var (
	ErrExceeded     = errors.New("budget exceeded")
	ErrLoopDetected = errors.New("loop detected")
	ErrInvalid      = errors.New("budget: invalid argument")
)

// Refusal is what [Exceeded] and loopDetected have in common: an error
// with a kernel code and a structured reason for the planner. Find one in
// an error chain with errors.As.
type Refusal interface {
	error
	Code() blackboard.Code
	Reason() Reason
}

var (
	_ Refusal = (*Exceeded)(nil)
	_ Refusal = (*loopDetected)(nil)
)

// Exceeded is the refusal of a call that a budget had no room for. It is
// returned before the call is made, and nothing was counted for it; or by
// a charge ([Run.ChargeTokens], [Run.ChargeCost], [Reservation.Settle])
// whose usage, recorded, went beyond a limit and ended the run (Requested
// is then 0).
type Exceeded struct {
	// Resource is the budget that refused.
	Resource Resource
	// Limit and Used are that budget's limit and what had been used of it
	// when the call was refused (the deadline in milliseconds since the
	// refusing run started; for tokens, including the tokens held by
	// reservations); Requested is what the call asked for (0 for a cost
	// already spent).
	Limit, Used, Requested float64
	// Run is the id of the run whose limit refused: the run asked, or an
	// ancestor it draws on.
	Run string
}

// Error describes the refusal: the budget, the run, its use and limit.
func (e *Exceeded) Error() string {
	if e.Resource == Deadline {
		return fmt.Sprintf("budget: run %s is past its deadline (%s ms of %s ms)", e.Run, num(e.Used), num(e.Limit))
	}
	msg := fmt.Sprintf("budget: %s of run %s exhausted: %s of %s used", e.Resource, e.Run, num(e.Used), num(e.Limit))
	if e.Requested > 0 {
		msg += ", " + num(e.Requested) + " more asked"
	}
	return msg
}

// Unwrap returns [ErrExceeded].
func (e *Exceeded) Unwrap() error { return ErrExceeded }

// Code returns [CodeBudgetExceeded].
func (e *Exceeded) Code() blackboard.Code { return CodeBudgetExceeded }

// Reason returns the refusal as the planner should receive it.
func (e *Exceeded) Reason() Reason {
	return Reason{
		Code: CodeBudgetExceeded, Budget: e.Resource, Limit: e.Limit, Used: e.Used, Requested: e.Requested, Run: e.Run,
		Detail: e.Error(), Hint: budgetHints[e.Resource],
	}
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

// LoopTrigger says which loop guard stopped the run.
type LoopTrigger string

// The two loop guards.
const (
	RepeatedCall LoopTrigger = "repeated_call" // the same tool with the same arguments, again
	NoProgress   LoopTrigger = "no_progress"   // consecutive rounds that changed nothing
)

// LoopDetected is the refusal of a [Guard]: a repeated identical tool call
// (the call is not made) or a run of rounds without progress (the loop
// should stop).
type loopDetected struct {
	Trigger LoopTrigger
	// Tool and Digest name the repeated call (for RepeatedCall), Repeats
	// how many identical calls the guard had already let through.
	Tool, Digest string
	Repeats      int
	// IdleRounds is the number of consecutive rounds without progress
	// (for NoProgress).
	IdleRounds int
	// Detail says, for the planner, what repeated.
	Detail string
}

// Error describes what repeated.
func (e *loopDetected) Error() string { return "budget: loop detected: " + e.Detail }

// Unwrap returns [ErrLoopDetected].
func (e *loopDetected) Unwrap() error { return ErrLoopDetected }

// Code returns [CodeLoopDetected].
func (e *loopDetected) Code() blackboard.Code { return CodeLoopDetected }

// Reason returns the refusal as the planner should receive it.
func (e *loopDetected) Reason() Reason {
	r := Reason{Code: CodeLoopDetected, Loop: e.Trigger, Tool: e.Tool, Digest: e.Digest, Repeats: e.Repeats,
		IdleRounds: e.IdleRounds, Detail: e.Detail}
	switch e.Trigger {
	case RepeatedCall:
		r.Hint = "this exact call was already made: use the result you have, change the arguments, or do something else"
	default:
		r.Hint = "recent rounds changed nothing on the blackboard: change the approach, or escalate"
	}
	return r
}

// Reason is a refusal in the shape the planner receives it: which code,
// which budget or guard, the numbers, what happened and what to do next.
// Its JSON form ([Reason.Payload]) holds only the fields that apply:
//
//	{"code":"BUDGET_EXCEEDED","budget":"tool_calls","limit":10,"used":10,"requested":1,"run":"r1","detail":"…","hint":"…"}
//	{"code":"LOOP_DETECTED","loop":"repeated_call","tool":"search","digest":"sha256:…","repeats":2,"detail":"…","hint":"…"}
type Reason struct {
	Code blackboard.Code
	// For BUDGET_EXCEEDED.
	Budget                 Resource
	Limit, Used, Requested float64
	Run                    string
	// For LOOP_DETECTED.
	Loop         LoopTrigger
	Tool, Digest string
	Repeats      int
	IdleRounds   int
	// Detail says what happened; Hint what the planner can do about it.
	Detail, Hint string
}

// Payload returns the reason as a JSON-compatible payload, ready for a
// decision record's Context or a tool result sent back to the model.
func (r Reason) Payload() blackboard.Payload {
	p := blackboard.Payload{"code": string(r.Code), "detail": r.Detail, "hint": r.Hint}
	switch r.Code {
	case CodeBudgetExceeded:
		p["budget"], p["limit"], p["used"], p["requested"] = string(r.Budget), r.Limit, r.Used, r.Requested
		if r.Run != "" {
			p["run"] = r.Run
		}
	case CodeLoopDetected:
		p["loop"] = string(r.Loop)
		if r.Loop == RepeatedCall {
			p["tool"], p["digest"], p["repeats"] = r.Tool, r.Digest, float64(r.Repeats)
		} else {
			p["idle_rounds"] = float64(r.IdleRounds)
		}
	}
	return p
}

// MarshalJSON encodes [Reason.Payload].
func (r Reason) MarshalJSON() ([]byte, error) { return json.Marshal(map[string]any(r.Payload())) }

// ReasonOf returns the reason of the [Refusal] in err's chain, if there is
// one.
func ReasonOf(err error) (Reason, bool) {
	var rf Refusal
	if errors.As(err, &rf) {
		return rf.Reason(), true
	}
	return Reason{}, false
}

// RefusalRecord builds the decision record of a call that a budget or the
// loop guard refused, for [audit.Append]: outcome refused,
// the refusal's code, and a Context holding the reason (under
// "reason") and, when snap was taken (it has a run id), the budget
// snapshot (under [KeyBudget]). kind names the tool or the model call. ok
// is false when err holds no [Refusal].
func RefusalRecord(traceID, kind string, err error, snap Snapshot) (d audit.Entry, ok bool) {
	var rf Refusal
	if !errors.As(err, &rf) {
		return audit.Entry{}, false
	}
	reason := rf.Reason()
	ctx := blackboard.Payload{KeyReason: map[string]any(reason.Payload())}
	if snap.RunID != "" {
		ctx[KeyBudget] = map[string]any(snap.Payload())
	}
	return audit.Entry{
		TraceID: traceID, Kind: kind, Outcome: audit.OutcomeRefused, Code: rf.Code(), Detail: reason.Detail, Context: ctx,
	}, true
}

// num formats a budget number: integers without a fraction.
func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

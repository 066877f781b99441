package llm

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/toolgate"
)

// grantEnded is how an [Agent]'s run ends when a tool call fails in a way
// the worker cannot repair within its grant ([Task.Grant]): at once, with
// the failure in hand for the orchestrator. It wraps [ErrGrantEnded] and
// the failure, so failure.Classify returns the failure as it is, and
// errors.As finds the *budget.Refusal behind a BUDGET_EXCEEDED or
// LOOP_DETECTED refusal. How the grant ended and its trajectory are in the
// run's [AgentResult] too.
type grantEnded struct {
	end        failure.GrantEnd
	reason     string // the yield check's reason
	failure    failure.Failure
	trajectory string // "T1(lint) × code_syntax → T2(call_api) × auth_error → YIELD"
}

func (e *grantEnded) Error() string {
	return fmt.Sprintf("llm: agent's grant ended (%s): %s; %s", e.end, e.reason, e.trajectory)
}

func (e *grantEnded) Unwrap() []error { return []error{ErrGrantEnded, e.failure} }

// taskRuntime is what one run of an Agent keeps of its task's budget,
// guard and grant.
type taskRuntime struct {
	t     Task
	meter *budget.Meter
}

func newTaskRuntime(t Task) *taskRuntime {
	rt := &taskRuntime{t: t}
	if t.Budget != nil {
		rt.meter = t.Budget.Meter(t.TokenEstimate)
	}
	return rt
}

// toolsAllowed reports whether the model may still call tools: always
// without a grant, while the grant is open with one.
func (rt *taskRuntime) toolsAllowed() bool {
	return rt.t.Grant == nil || rt.t.Grant.End() == ""
}

// beforeModelCall begins a new turn of the budget, charges what the
// calls so far used and admits the next one.
func (rt *taskRuntime) beforeModelCall(ctx context.Context, used Usage) error {
	if rt.meter == nil {
		return nil
	}
	rt.t.Budget.NextTurn()
	return rt.meter.BeforeModelCall(ctx, int64(used.PromptTokens), int64(used.CompletionTokens))
}

// turn records a tool call's result in the trajectory and, under a grant,
// takes one of its turns. It returns the error that ends the run
// when the call's failure makes the grant yield.
func (rt *taskRuntime) turn(res *AgentResult, tool string, r toolgate.Result) error {
	f, failed := r.Failure()
	e := failure.TrajectoryEntry{Tool: tool}
	if failed {
		e.Status, e.Category = f.Status(), f.Category()
	}
	res.Trajectory = append(res.Trajectory, e)
	l := rt.t.Grant
	if l == nil {
		return nil
	}
	var err error
	if failed {
		err = f
	}
	cont, reason := l.Turn(tool, err)
	res.GrantEnd = l.End()
	if cont || res.GrantEnd != failure.GrantYielded {
		return nil
	}
	return &grantEnded{end: res.GrantEnd, reason: reason, failure: f, trajectory: l.String()}
}

// skip answers tool calls the gate was not asked about, because the grant
// had ended, so that the conversation stays well formed.
func (rt *taskRuntime) skip(res *AgentResult, calls []toolCall) {
	if len(calls) == 0 {
		return
	}
	end := failure.GrantSpent
	if rt.t.Grant != nil {
		end = rt.t.Grant.End()
	}
	b, _ := json.Marshal(map[string]string{"outcome": "not_run",
		"hint": "Your grant of tool calls has ended (" + string(end) + "). Answer with what you have."})
	for _, c := range calls {
		res.messages = append(res.messages, message{Role: "tool", ToolCallID: c.ID, Content: string(b)})
	}
}

// finish charges the tokens of the last model call, which no later call
// settled, and records how the grant stands.
func (rt *taskRuntime) finish(res *AgentResult) {
	if rt.meter != nil {
		_ = rt.meter.Sync(int64(res.Usage.PromptTokens), int64(res.Usage.CompletionTokens)) // totals only grow
	}
	if rt.t.Grant != nil {
		res.GrantEnd = rt.t.Grant.End()
	}
}

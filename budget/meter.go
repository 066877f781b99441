package budget

import (
	"context"
	"fmt"
	"math"
	"sync"
)

// Meter connects one agent's model loop to a run, for an agent that
// reports its usage as running totals before each model call (the LLM
// agent's before-model-call hook passes the usage so far). Before each
// call, [Meter.BeforeModelCall] charges the tokens used since the last
// call, then admits the next call, holding the meter's estimate of its tokens
// until the next report settles it, so that parallel agents cannot all
// start calls against the same last tokens.
//
// A meter belongs to one agent: its totals only ever grow. Safe for
// concurrent use, though one agent's calls come one at a time.
type Meter struct {
	run      *Run
	estimate int64

	mu         sync.Mutex
	prompt     int64
	completion int64
	pending    *reservation
}

// Meter returns a meter on r that holds estimate tokens (0 for none) for
// each model call until its usage is reported. A negative estimate counts
// as 0.
func (r *Run) Meter(estimate int64) *Meter {
	return &Meter{run: r, estimate: max(estimate, 0)}
}

// BeforeModelCall is called before each model call with the agent's
// running totals of prompt and completion tokens (pass an API's total as
// prompt when it does not split them). It returns ctx's error if ctx is
// done, and fails with [ErrInvalid] if a total went down; otherwise it
// charges the growth since the last report and asks for the next call,
// which is refused with a [*Refusal] (BUDGET_EXCEEDED: tokens, model
// calls, cost or deadline) before it is made. A negative total (a count
// that wrapped where the agent adds them up) counts as the largest int64:
// usage that cannot be known ends the run with BUDGET_EXCEEDED.
func (m *Meter) BeforeModelCall(ctx context.Context, promptTotal, completionTotal int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.sync(promptTotal, completionTotal); err != nil {
		return err
	}
	res, err := m.run.reserveModelCall(m.estimate)
	if err != nil {
		return err
	}
	m.pending = res
	return nil
}

// Sync charges the growth of the totals since the last report without
// asking for a call: call it when the agent ends, so that the last call's
// tokens are counted. Its errors are those of [Meter.BeforeModelCall]
// without the context.
func (m *Meter) Sync(promptTotal, completionTotal int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sync(promptTotal, completionTotal)
}

func (m *Meter) sync(prompt, completion int64) error {
	// A running total is a sum of counts and cannot be negative: a negative
	// one is a sum that wrapped where it was added up (or a server's
	// nonsense). Its usage is unknown, so it counts as the most there can
	// be, which ends the run with BUDGET_EXCEEDED rather than passing for
	// little use.
	if saturates() {
		prompt, completion = unwrapTotal(prompt), unwrapTotal(completion)
	}
	if prompt < m.prompt || completion < m.completion {
		return fmt.Errorf("%w: usage went down from %d+%d to %d+%d tokens; a meter follows one agent's running totals",
			ErrInvalid, m.prompt, m.completion, prompt, completion)
	}
	dp, dc := prompt-m.prompt, completion-m.completion
	m.prompt, m.completion = prompt, completion
	if m.pending != nil {
		err := m.pending.Settle(dp, dc)
		m.pending = nil
		return err
	}
	if dp == 0 && dc == 0 {
		return nil
	}
	return m.run.ChargeTokens(dp, dc)
}

// unwrapTotal reads a negative running total as the largest one.
func unwrapTotal(n int64) int64 {
	if n < 0 {
		return math.MaxInt64
	}
	return n
}

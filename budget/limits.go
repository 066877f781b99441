package budget

import (
	"fmt"
	"math"
	"time"
)

// Resource names one budget of a run. Resources are stable strings: they
// appear in refusals, reasons and snapshots.
type Resource string

// The budgets a run can carry.
const (
	Tokens           Resource = "tokens"              // prompt plus completion tokens, as the model API reports them
	ModelCalls       Resource = "model_calls"         // calls to a model
	ToolCalls        Resource = "tool_calls"          // tool calls over the whole run
	toolCallsPerTurn Resource = "tool_calls_per_turn" // tool calls within one turn
	Rounds           Resource = "rounds"              // rounds of the run's loop
	Replans          Resource = "replans"             // re-planning attempts
	Cost             Resource = "cost"                // money or any unit the caller charges in
	Deadline         Resource = "deadline"            // wall-clock time since the run started, in milliseconds
)

// Resources returns every resource, in the order snapshots list them.
func Resources() []Resource {
	return []Resource{Tokens, ModelCalls, ToolCalls, toolCallsPerTurn, Rounds, Replans, Cost, Deadline}
}

// DefaultSoft is the soft threshold used when [Limits.Soft] is zero: past
// 80% of a budget, pressure starts to rise.
const defaultSoft = 0.8

// Limits is the budget of one run. A zero field puts no limit on that
// resource; negative values are invalid. [New] refuses limits that limit
// nothing at all: a root run must be bounded by at least one counter, a
// cost or a deadline. A sub-run ([Run.Sub]) may have zero limits, because
// its parent bounds it.
type Limits struct {
	Tokens           int64
	ModelCalls       int64
	ToolCalls        int64
	ToolCallsPerTurn int64
	Rounds           int64
	Replans          int64
	// Cost caps the sum of [Run.ChargeCost]; 0 means no cost limit.
	Cost float64
	// Deadline is how long the run may last, counted from its creation.
	Deadline time.Duration
	// Soft is the fraction of each budget past which pressure starts to
	// rise, in (0, 1]; 0 means 0.8 (for a sub-run: the parent's).
	Soft float64
}

// DefaultLimits returns a bounded budget for one interactive agent run: a
// starting point to adjust, not a recommendation for every workload.
//
//	tokens               200 000
//	model calls               50
//	tool calls               100
//	tool calls per turn       10
//	rounds                    25
//	re-plans                   3
//	cost                 no limit
//	deadline          15 minutes
//	soft threshold           0.8
func DefaultLimits() Limits {
	return Limits{
		Tokens:           200_000,
		ModelCalls:       50,
		ToolCalls:        100,
		ToolCallsPerTurn: 10,
		Rounds:           25,
		Replans:          3,
		Deadline:         15 * time.Minute,
		Soft:             defaultSoft,
	}
}

// counter returns the limit on a counted resource (everything but cost and
// the deadline), 0 for none.
func (l Limits) counter(r Resource) int64 {
	switch r {
	case Tokens:
		return l.Tokens
	case ModelCalls:
		return l.ModelCalls
	case ToolCalls:
		return l.ToolCalls
	case toolCallsPerTurn:
		return l.ToolCallsPerTurn
	case Rounds:
		return l.Rounds
	case Replans:
		return l.Replans
	}
	return 0
}

// limit returns the limit on r as a number (the deadline in milliseconds)
// and whether there is one.
func (l Limits) limit(r Resource) (float64, bool) {
	switch r {
	case Cost:
		return l.Cost, l.Cost > 0
	case Deadline:
		return float64(l.Deadline.Milliseconds()), l.Deadline > 0
	}
	n := l.counter(r)
	return float64(n), n > 0
}

// any reports whether l limits at least one resource.
func (l Limits) any() bool {
	for _, r := range Resources() {
		if _, ok := l.limit(r); ok {
			return true
		}
	}
	return false
}

// check validates l and fills in the soft threshold (soft is the value to
// use when l.Soft is zero).
func (l Limits) check(soft float64) (Limits, error) {
	bad := func(format string, args ...any) (Limits, error) {
		return Limits{}, fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
	}
	for _, r := range []Resource{Tokens, ModelCalls, ToolCalls, toolCallsPerTurn, Rounds, Replans} {
		if n := l.counter(r); n < 0 {
			return bad("negative %s limit %d", r, n)
		}
	}
	switch {
	case l.Cost < 0 || math.IsNaN(l.Cost) || math.IsInf(l.Cost, 0):
		return bad("cost limit %v is not a finite non-negative number", l.Cost)
	case l.Deadline < 0:
		return bad("negative deadline %v", l.Deadline)
	case l.Deadline > 0 && l.Deadline < time.Millisecond:
		return bad("deadline %v is shorter than a millisecond", l.Deadline)
	case math.IsNaN(l.Soft) || l.Soft < 0 || l.Soft > 1:
		return bad("soft threshold %v outside (0, 1]", l.Soft)
	}
	if l.Soft == 0 {
		l.Soft = soft
	}
	return l, nil
}

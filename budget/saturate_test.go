package budget_test

import (
	"context"
	"math"
	"testing"

	"github.com/blackboardkernel/bk/budget"
)

// huge is a usage a hostile or broken model server may report: near 2^63.
const huge = math.MaxInt64 - 10

// refusedAll checks that every kind of request of r is now refused with
// BUDGET_EXCEEDED by res of the run named owner.
func refusedAll(t *testing.T, r *budget.Run, res budget.Resource, owner string) {
	t.Helper()
	refusal(t, r.ModelCall(), res, owner)
	refusal(t, r.ToolCall(), res, owner)
	refusal(t, r.Allow(budget.Tokens, 1), res, owner)
	refusal(t, r.NextRound(), res, owner)
	_, err := r.ReserveModelCall(10)
	refusal(t, err, res, owner)
}

// TestAttackTokenCounterWrapsDirect: usage near 2^63 charged on a run must
// not wrap its token counter negative (which would admit every later call):
// the counter saturates, the charge ends the run with BUDGET_EXCEEDED, and
// every later request is refused.
func TestAttackTokenCounterWrapsDirect(t *testing.T) {
	r := newRun(t, budget.Limits{Tokens: 1000, ToolCalls: 100}, newClock(), "r")
	must(t, r.ChargeTokens(100, 50))
	refusal(t, r.ChargeTokens(huge, 20), budget.Tokens, "r")
	refusal(t, r.ChargeTokens(huge, huge), budget.Tokens, "r")
	refusedAll(t, r, budget.Tokens, "r")
	s := r.Snapshot()
	if s.Used[budget.Tokens] != math.MaxInt64 || s.PromptTokens != math.MaxInt64 || s.CompletionTokens != math.MaxInt64 ||
		s.Remaining[budget.Tokens] != 0 {
		t.Errorf("saturated counters: used %v prompt %d completion %d remaining %v",
			s.Used[budget.Tokens], s.PromptTokens, s.CompletionTokens, s.Remaining[budget.Tokens])
	}
	if err := r.ChargeTokens(-1, 0); err == nil {
		t.Error("negative usage accepted")
	}
}

// TestAttackTokenCounterWrapsSubRun: a sub-run's usage rolls up to its
// parent; usage near 2^63 reported in a sub-run saturates the parent's
// counter too and ends both runs.
func TestAttackTokenCounterWrapsSubRun(t *testing.T) {
	parent := newRun(t, budget.Limits{Tokens: 1000, ToolCalls: 100}, newClock(), "p")
	lane := sub(t, parent, budget.Limits{}, "p/lane")
	must(t, parent.ChargeTokens(10, 0))
	refusal(t, lane.ChargeTokens(huge, 0), budget.Tokens, "p")
	refusal(t, lane.ChargeTokens(0, huge), budget.Tokens, "p")
	refusedAll(t, lane, budget.Tokens, "p")
	refusedAll(t, parent, budget.Tokens, "p")
	other := sub(t, parent, budget.Limits{}, "p/other")
	refusedAll(t, other, budget.Tokens, "p")
	if s := parent.Snapshot(); s.Used[budget.Tokens] != math.MaxInt64 {
		t.Errorf("parent's tokens %v, want the saturated maximum", s.Used[budget.Tokens])
	}
}

// TestAttackTokenCounterWrapsAgent: an agent reports running totals
// through a meter; a total near 2^63 ends the run with BUDGET_EXCEEDED, and
// so does a total that wrapped negative where the agent summed it (usage
// that cannot be known counts as the most there can be).
func TestAttackTokenCounterWrapsAgent(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name               string
		prompt, completion int64
	}{
		{"near 2^63", huge, 25},
		{"both near 2^63", huge, huge},
		{"wrapped negative", math.MinInt64 + 1000, 25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRun(t, budget.Limits{Tokens: 1000, ToolCalls: 100}, newClock(), "r")
			m := r.Meter(50)
			must(t, m.BeforeModelCall(ctx, 0, 0))
			must(t, m.BeforeModelCall(ctx, 100, 20))
			refusal(t, m.BeforeModelCall(ctx, tc.prompt, tc.completion), budget.Tokens, "r")
			refusedAll(t, r, budget.Tokens, "r")
		})
	}
}

// TestAttackCountersSaturate: counts asked for in bulk and holds of
// estimates must not wrap either: a sub-run asking for 2^63-1 tool calls
// on a parent that has used some is refused, a count with no limit stays
// at the maximum, and a hold that would pass the maximum is refused.
func TestAttackCountersSaturate(t *testing.T) {
	parent := newRun(t, budget.Limits{ToolCalls: 5}, newClock(), "p")
	lane := sub(t, parent, budget.Limits{}, "p/lane")
	must(t, lane.Allow(budget.ToolCalls, 4))
	refusal(t, lane.Allow(budget.ToolCalls, math.MaxInt64), budget.ToolCalls, "p")
	must(t, lane.ToolCall())
	refusal(t, lane.ToolCall(), budget.ToolCalls, "p")

	open := newRun(t, budget.Limits{Deadline: 3600e9}, newClock(), "open")
	must(t, open.Allow(budget.ToolCalls, math.MaxInt64))
	must(t, open.Allow(budget.ToolCalls, math.MaxInt64))
	if s := open.Snapshot(); s.Used[budget.ToolCalls] != math.MaxInt64 {
		t.Errorf("tool calls %v, want the saturated maximum", s.Used[budget.ToolCalls])
	}
	res, err := open.ReserveModelCall(math.MaxInt64)
	must(t, err)
	_, err = open.ReserveModelCall(math.MaxInt64)
	refusal(t, err, budget.Tokens, "open")
	res.Release()
	if s := open.Snapshot(); s.HeldTokens != 0 {
		t.Errorf("held %d after the release, want 0", s.HeldTokens)
	}
}

// TestAttackCostSaturates: costs near the largest float64 must not sum to
// an infinity, which no snapshot could record; a cost beyond the limit
// ends the run.
func TestAttackCostSaturates(t *testing.T) {
	r := newRun(t, budget.Limits{Cost: 10}, newClock(), "r")
	refusal(t, r.ChargeCost(math.MaxFloat64), budget.Cost, "r")
	refusal(t, r.ChargeCost(math.MaxFloat64), budget.Cost, "r")
	refusedAll(t, r, budget.Cost, "r")
	s := r.Snapshot()
	if s.Used[budget.Cost] != math.MaxFloat64 {
		t.Errorf("cost %v, want the largest finite float64", s.Used[budget.Cost])
	}
	if p := s.Payload(); p["error"] != nil {
		t.Errorf("snapshot payload: %v", p["error"])
	}
}

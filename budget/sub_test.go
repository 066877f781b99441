package budget_test

import (
	"errors"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/budget"
)

func TestSubRunSpendCountsOnTheParent(t *testing.T) {
	clk := newClock()
	root := newRun(t, budget.Limits{Tokens: 1000, ModelCalls: 10, ToolCalls: 10, Cost: 5}, clk, "root")
	lane := sub(t, root, budget.Limits{}, "lane")
	leaf := sub(t, lane, budget.Limits{ToolCalls: 3}, "leaf")

	must(t, lane.ToolCall())
	must(t, leaf.ToolCall())
	must(t, leaf.ModelCall())
	must(t, leaf.ChargeTokens(100, 20))
	must(t, leaf.ChargeCost(1.5))
	res, err := leaf.ReserveModelCall(200)
	must(t, err)

	for _, tc := range []struct {
		run                          *budget.Run
		tools, models, tokens, costs float64
		held                         int64
	}{
		{root, 2, 2, 120, 1.5, 200},
		{lane, 2, 2, 120, 1.5, 200},
		{leaf, 1, 2, 120, 1.5, 200},
	} {
		s := tc.run.Snapshot()
		if s.Used[budget.ToolCalls] != tc.tools || s.Used[budget.ModelCalls] != tc.models || s.Used[budget.Tokens] != tc.tokens ||
			s.Used[budget.Cost] != tc.costs || s.HeldTokens != tc.held || s.PromptTokens != 100 || s.CompletionTokens != 20 {
			t.Errorf("%s: used %v held %d prompt %d completion %d", s.RunID, s.Used, s.HeldTokens, s.PromptTokens, s.CompletionTokens)
		}
	}
	res.Release()
	if s := root.Snapshot(); s.HeldTokens != 0 {
		t.Errorf("release did not reach the root: %d held", s.HeldTokens)
	}
	// The leaf's snapshot shows the chain, and what it can still spend is
	// the least over it.
	s := leaf.Snapshot()
	if s.Parent == nil || s.Parent.RunID != "lane" || s.Parent.Parent == nil || s.Parent.Parent.RunID != "root" || s.Parent.Parent.Parent != nil {
		t.Fatalf("chain %+v", s)
	}
	if left, ok := s.Left(budget.ToolCalls); !ok || left != 2 {
		t.Errorf("leaf tool calls left %v %v, want 2 (its own limit)", left, ok)
	}
	if left, ok := s.Left(budget.Tokens); !ok || left != 880 {
		t.Errorf("leaf tokens left %v %v, want the root's 880", left, ok)
	}
	if _, ok := s.Left(budget.Rounds); ok {
		t.Error("rounds are limited nowhere, yet Left found a limit")
	}
}

func TestSubRunCannotExceedTheParent(t *testing.T) {
	clk := newClock()
	root := newRun(t, budget.Limits{ToolCalls: 5, Tokens: 100}, clk, "root")
	for range 3 {
		must(t, root.ToolCall())
	}
	lane := sub(t, root, budget.Limits{ToolCalls: 10}, "lane")
	must(t, lane.ToolCall())
	must(t, lane.ToolCall())
	refusal(t, lane.ToolCall(), budget.ToolCalls, "root")
	refusal(t, root.ToolCall(), budget.ToolCalls, "root")
	if s := root.Snapshot(); s.Used[budget.ToolCalls] != 5 {
		t.Errorf("root used %v tool calls, limit 5", s.Used[budget.ToolCalls])
	}
	if s := lane.Snapshot(); s.Used[budget.ToolCalls] != 2 || s.Refused[budget.ToolCalls] != 1 {
		t.Errorf("lane: used %v refused %v", s.Used[budget.ToolCalls], s.Refused)
	}

	// A refusal by the parent leaves every level as it was: the lane's
	// model call is not counted on the lane either.
	must(t, root.ChargeTokens(100, 0))
	refusal(t, lane.ModelCall(), budget.Tokens, "root")
	if s := lane.Snapshot(); s.Used[budget.ModelCalls] != 0 || s.Parent.Used[budget.ModelCalls] != 0 {
		t.Errorf("a refused model call was counted: lane %v root %v", s.Used[budget.ModelCalls], s.Parent.Used[budget.ModelCalls])
	}

	// The lane's own limit binds the lane, and only the lane.
	root2 := newRun(t, budget.Limits{ToolCalls: 10}, clk, "root2")
	small := sub(t, root2, budget.Limits{ToolCalls: 2}, "small")
	must(t, small.ToolCall())
	must(t, small.ToolCall())
	refusal(t, small.ToolCall(), budget.ToolCalls, "small")
	for range 8 {
		must(t, root2.ToolCall())
	}
	refusal(t, root2.ToolCall(), budget.ToolCalls, "root2")
}

// Turns, rounds and re-plans belong to one loop: a lane has its own and
// never resets or spends the parent's.
func TestSubRunLoopCountersAreItsOwn(t *testing.T) {
	root := newRun(t, budget.Limits{ToolCalls: 100, ToolCallsPerTurn: 2, Rounds: 1, Replans: 1}, newClock(), "root")
	lane := sub(t, root, budget.Limits{ToolCallsPerTurn: 3}, "lane")
	must(t, root.ToolCall())
	must(t, root.ToolCall())
	refusal(t, root.ToolCall(), budget.ToolCallsPerTurn, "root")
	// The lane's turn is not the parent's: the lane may call, its new
	// turn does not reset the parent's.
	for range 3 {
		must(t, lane.ToolCall())
	}
	refusal(t, lane.ToolCall(), budget.ToolCallsPerTurn, "lane")
	lane.NextTurn()
	must(t, lane.ToolCall())
	refusal(t, root.ToolCall(), budget.ToolCallsPerTurn, "root")
	// Rounds and re-plans: the lane's are unlimited and do not count on
	// the parent, which still has its one of each.
	for range 5 {
		must(t, lane.NextRound())
		must(t, lane.Replan())
	}
	must(t, root.NextRound())
	must(t, root.Replan())
	s := root.Snapshot()
	if s.Round != 1 || s.Used[budget.Replans] != 1 || s.Used[budget.ToolCalls] != 6 || s.Used[budget.ToolCallsPerTurn] != 0 {
		t.Errorf("root after the lane's loop: round %d used %v", s.Round, s.Used)
	}
	// The root's new round reset the root's turn only.
	if ls := lane.Snapshot(); ls.Used[budget.ToolCallsPerTurn] != 0 || ls.Round != 5 {
		t.Errorf("lane turn/round: %v %d", ls.Used[budget.ToolCallsPerTurn], ls.Round)
	}
}

func TestSubRunDeadlines(t *testing.T) {
	clk := newClock()
	root := newRun(t, budget.Limits{Deadline: time.Minute}, clk, "root")
	clk.Advance(20 * time.Second)
	long := sub(t, root, budget.Limits{Deadline: time.Hour}, "long")
	short := sub(t, root, budget.Limits{Deadline: 10 * time.Second}, "short")
	if at, _ := long.Deadline(); !at.Equal(clk.Now().Add(40 * time.Second)) {
		t.Errorf("long lane's deadline %v: it must not outlast the root's", at)
	}
	clk.Advance(10 * time.Second)
	refusal(t, short.ToolCall(), budget.Deadline, "short")
	must(t, long.ToolCall())
	must(t, root.ToolCall())
	clk.Advance(30 * time.Second)
	e := refusal(t, long.ToolCall(), budget.Deadline, "root")
	if e.Limit != 60000 || e.Used != 60000 {
		t.Errorf("root deadline refusal %+v", e)
	}
	if left, ok := long.Snapshot().Left(budget.Deadline); !ok || left != 0 {
		t.Errorf("long lane time left %v %v", left, ok)
	}
}

func TestSubRunOptions(t *testing.T) {
	clk := newClock()
	root := newRun(t, budget.Limits{ToolCalls: 5, Soft: 0.6}, clk, "root")
	if _, err := root.Sub(budget.Limits{ToolCalls: -1}, ""); !errors.Is(err, budget.ErrInvalid) {
		t.Errorf("Sub with bad limits: %v", err)
	}
	a, err := root.Sub(budget.Limits{}, "")
	must(t, err)
	b, err := root.Sub(budget.Limits{Soft: 0.9}, "")
	must(t, err)
	if a.ID() != "root/1" || b.ID() != "root/2" {
		t.Errorf("sub ids %q %q", a.ID(), b.ID())
	}
	if a.Limits().Soft != 0.6 || b.Limits().Soft != 0.9 {
		t.Errorf("soft thresholds %v %v: a lane inherits its parent's unless it sets one", a.Limits().Soft, b.Limits().Soft)
	}
	// The parent's pressure shows in the lane's budget pressure.
	for range 4 {
		must(t, root.ToolCall())
	}
	if s := a.Snapshot(); !near(s.Budget, 0.5) || len(s.Pressure) != 0 {
		t.Errorf("lane budget pressure %v (own %v), want the root's 0.5", s.Budget, s.Pressure)
	}
}

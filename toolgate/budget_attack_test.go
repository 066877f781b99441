package toolgate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/toolgate"
)

// budgetGate is a gate with one read-only tool, lookup, and the
// gate's run b; ran counts the effect's calls.
func budgetGate(t *testing.T, ran *int, b *budget.Run) *toolgate.Gate {
	t.Helper()
	lookup := toolgate.Tool{Unscoped: true, Name: "lookup", Result: "order",
		Effect: func(context.Context, toolgate.Invocation) (blackboard.Payload, error) {
			*ran++
			return blackboard.Payload{"ok": true}, nil
		}}
	g, err := toolgate.New(context.Background(), toolgate.Config{
		Tools:     []toolgate.Tool{lookup},
		Contracts: map[string][]string{"agent": {"lookup"}},
		Budget:    b,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

func newRunOf(t *testing.T, calls int64) *budget.Run {
	t.Helper()
	r, err := budget.New(budget.Limits{ToolCalls: calls}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestAttackCallBudgetComposes: a call that carries a budget of its own
// is still charged to the gate's. Whatever the call carries (a guard
// alone, a looser run, a stricter run, a sub-run of the gate's), every
// limit applies and the strictest wins; a sub-run counts on the gate's run
// once.
func TestAttackCallBudgetComposes(t *testing.T) {
	guard := func() *budget.Guard {
		g, err := budget.NewGuard(0, 0)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	cases := []struct {
		name     string
		gateRun  int64
		own      func(gateRun *budget.Run) (*budget.Run, *budget.Guard)
		wantRan  int
		wantUsed float64 // the gate's run's count at the end
	}{
		{"a guard alone", 3, func(*budget.Run) (*budget.Run, *budget.Guard) { return nil, guard() }, 3, 3},
		{"a looser run", 3, func(*budget.Run) (*budget.Run, *budget.Guard) { return newRunOf(t, 100), nil }, 3, 3},
		{"a stricter run", 10, func(*budget.Run) (*budget.Run, *budget.Guard) { return newRunOf(t, 2), nil }, 2, 2},
		{"a sub-run of the gate's", 3, func(r *budget.Run) (*budget.Run, *budget.Guard) {
			sub, err := r.Sub(budget.Limits{ToolCalls: 10}, "")
			if err != nil {
				t.Fatal(err)
			}
			return sub, guard()
		}, 3, 3},
		{"the gate's own", 3, func(r *budget.Run) (*budget.Run, *budget.Guard) { return r, nil }, 3, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gateRun := newRunOf(t, tc.gateRun)
			ran := 0
			g := budgetGate(t, &ran, gateRun)
			ownRun, ownGuard := tc.own(gateRun)
			for i := range 14 {
				res, err := g.Call(context.Background(), toolgate.Call{Tool: "lookup", Caller: "agent", TraceID: "t-budget",
					Args: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), Budget: ownRun, Guard: ownGuard})
				if err != nil {
					t.Fatal(err)
				}
				if res.Outcome != audit.OutcomeExecuted && res.Code != reason.BudgetExceeded {
					t.Fatalf("call %d: %s %s", i, res.Outcome, res.Code)
				}
			}
			if ran != tc.wantRan {
				t.Errorf("%d calls ran, want %d", ran, tc.wantRan)
			}
			if used := gateRun.Snapshot().Used[budget.ToolCalls]; used != tc.wantUsed {
				t.Errorf("the gate's run counted %v calls, want %v", used, tc.wantUsed)
			}
		})
	}
}

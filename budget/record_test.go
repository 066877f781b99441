package budget_test

import (
	"context"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// A refused call goes on the blackboard: the decision record holds the
// code, the reason and the budget snapshot.
func TestRefusalRecordOnTheBlackboard(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	k, err := kernel.New(kernel.Config{Clock: clk.Now})
	must(t, err)
	defer k.Close()
	run := newRun(t, budget.Limits{ToolCalls: 1}, clk, "t")
	must(t, run.ToolCall())
	refused := run.ToolCall()

	d, ok := budget.RefusalRecord("t", "search", refused, run.Snapshot())
	if !ok {
		t.Fatal("no record for a refusal")
	}
	if _, err := audit.Append(ctx, k.Governor(), d); err != nil {
		t.Fatal(err)
	}
	var got []audit.Entry
	for r, err := range audit.List(ctx, k.Reader(), audit.Query{TraceID: "t"}) {
		must(t, err)
		got = append(got, r)
	}
	if len(got) != 1 {
		t.Fatalf("%d decision records", len(got))
	}
	r := got[0]
	why, _ := r.Context["reason"].(map[string]any)
	snap, _ := r.Context["budget"].(map[string]any)
	if r.Code != reason.BudgetExceeded || r.Outcome != audit.OutcomeRefused || r.Kind != "search" ||
		why["budget"] != "tool_calls" || why["used"] != 1.0 || snap["run_id"] != "t" {
		t.Errorf("decision record %+v", r)
	}

	g, _ := budget.NewGuard(1, 0)
	_ = g.Call("search", "d")
	d, ok = budget.RefusalRecord("t", "search", g.Call("search", "d"), budget.Snapshot{})
	if !ok || d.Code != reason.LoopDetected || d.Context["budget"] != nil || d.Detail == "" {
		t.Errorf("loop refusal record %+v", d)
	}
	if _, ok := budget.RefusalRecord("t", "search", nil, run.Snapshot()); ok {
		t.Error("a record for no refusal")
	}
}

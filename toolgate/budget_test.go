package toolgate

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/reason"
)

// newRun returns a run budget on the desk's clock, failing the test on an
// error.
func newRun(t *testing.T, d *desk, l budget.Limits) *budget.Run {
	t.Helper()
	r, err := budget.New(l, "run-t", d.clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// refusalOf returns the budget's refusal in err's chain.
func refusalOf(err error) (*budget.Refusal, bool) {
	var rf *budget.Refusal
	ok := errors.As(err, &rf)
	if !ok {
		rf = &budget.Refusal{}
	}
	return rf, ok
}

func newGuard(t *testing.T) *budget.Guard {
	t.Helper()
	g, err := budget.NewGuard(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// limits is what a test's calls are charged to: a run and a loop guard,
// either nil.
type limits struct {
	Run   *budget.Run
	Guard *budget.Guard
}

// lookup is a lookup_order call charged to b.
func lookup(trace, order string, b *limits) Call {
	c := Call{ID: "c_" + order, Tool: "lookup_order", Args: json.RawMessage(`{"order_id":"` + order + `"}`),
		Caller: "support", TraceID: trace}
	if b != nil {
		c.Budget, c.Guard = b.Run, b.Guard
	}
	return c
}

// reasonIn reads the structured reason a budget refusal's record holds.
func reasonIn(t *testing.T, d audit.Entry) map[string]any {
	t.Helper()
	r, ok := d.Context["reason"].(map[string]any)
	if !ok {
		t.Fatalf("decision record %s has no reason: %+v", d.ID, d.Context)
	}
	return r
}

func TestBudgetRefusesBeforeTheCall(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		run := newRun(t, d, budget.Limits{ToolCalls: 2})
		b := &limits{Run: run}
		for _, order := range []string{"A1", "A2"} {
			res, err := d.g.Call(d.ctx, lookup("t", order, b))
			if err != nil || res.Outcome != audit.OutcomeExecuted {
				t.Fatalf("lookup %s: %+v %v", order, res, err)
			}
		}
		before := len(d.records())
		res, err := d.g.Call(d.ctx, lookup("t", "A3", b))
		if err != nil {
			t.Fatal(err)
		}
		wantOutcome(t, "third call", res, audit.OutcomeRefused, reason.BudgetExceeded)
		if n := len(d.invocations("lookup_order")); n != 2 {
			t.Errorf("%d effects ran, want 2: the refused call must not run", n)
		}
		if got := len(d.records()); got != before+1 {
			t.Errorf("the refusal stored %d records, want only its decision record", got-before)
		}
		wantHint := "no tool calls are left in this run: answer from the results already gathered"
		if res.Hint != wantHint || res.RootCause.Code != reason.BudgetExceeded || res.RootCause.Detail == "" {
			t.Errorf("refusal %+v, want the reason's hint %q", res, wantHint)
		}

		// Its decision record: refused, the code, the reason naming the
		// budget, the snapshot, and the call.
		refused := d.decisions(audit.Query{TraceID: "t", Outcome: audit.OutcomeRefused})
		if len(refused) != 1 || refused[0].ID != res.DecisionID || refused[0].Code != reason.BudgetExceeded || refused[0].Kind != "lookup_order" {
			t.Fatalf("refusal records %+v", refused)
		}
		dr := refused[0]
		if r := reasonIn(t, dr); r["budget"] != "tool_calls" || r["limit"] != 2.0 || r["used"] != 2.0 || r["run"] != "run-t" {
			t.Errorf("reason %+v", r)
		}
		if snap, ok := dr.Context["budget"].(map[string]any); !ok || snap["run_id"] != "run-t" {
			t.Errorf("snapshot %+v", dr.Context["budget"])
		}
		if dr.Context["tool"] != "lookup_order" || dr.Context["call_id"] != "c_A3" {
			t.Errorf("the record does not name the call: %+v", dr.Context)
		}

		// Every other decision record of the admitted calls carries the
		// budget as it stood after the call was counted.
		others := d.decisions(audit.Query{TraceID: "t", Tool: "lookup_order"})
		n := 0
		for _, o := range others {
			if o.Outcome == audit.OutcomeRefused {
				continue
			}
			n++
			snap, ok := o.Context["budget"].(map[string]any)
			used, _ := snap["used"].(map[string]any)
			if !ok || used["tool_calls"] == nil {
				t.Errorf("%s record %s has no budget snapshot: %+v", o.Outcome, o.ID, o.Context)
			}
		}
		if n != 4 { // committed and executed, twice
			t.Errorf("%d records of admitted calls, want 4", n)
		}

		// The planner gets the reason as data; the router types it.
		f, ok := res.Failure()
		if !ok || f.Category() != failure.Category("rate_limit") || f.Retryable() {
			t.Errorf("Failure() = %v %v, want a rate_limit that is not retried", f, ok)
		}
		if r, ok := refusalOf(f); !ok || r.Resource != budget.ToolCalls {
			t.Errorf("ReasonOf(the failure) = %+v %v", r, ok)
		}
		if dec := failure.RemedyFor(f, 1, 3); dec.Route != failure.RouteAbort || dec.Retry {
			t.Errorf("router: %+v, want abort", dec)
		}
	})
}

func TestBudgetDeadlineAndCost(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		run := newRun(t, d, budget.Limits{Deadline: time.Minute, Cost: 1})
		b := &limits{Run: run}
		if res, _ := d.g.Call(d.ctx, lookup("t", "A1", b)); res.Outcome != audit.OutcomeExecuted {
			t.Fatalf("first call %+v", res)
		}
		if err := run.ChargeCost(1); err != nil {
			t.Fatal(err)
		}
		res, err := d.g.Call(d.ctx, lookup("t", "A2", b))
		if err != nil {
			t.Fatal(err)
		}
		wantOutcome(t, "cost spent", res, audit.OutcomeRefused, reason.BudgetExceeded)
		if r, _ := refusalOf(res.refusal); r.Resource != budget.Cost {
			t.Errorf("reason %+v, want cost", r)
		}
		d.clock.Advance(2 * time.Minute)
		res, _ = d.g.Call(d.ctx, lookup("t", "A3", b))
		if r, _ := refusalOf(res.refusal); res.Code != reason.BudgetExceeded || r.Resource != budget.Deadline {
			t.Errorf("past the deadline: %+v %+v", res, r)
		}
		if n := len(d.invocations("lookup_order")); n != 1 {
			t.Errorf("%d effects ran, want 1", n)
		}
	})
}

func TestLoopGuardAtTheGate(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		run := newRun(t, d, budget.Limits{ToolCalls: 10})
		b := &limits{Run: run, Guard: newGuard(t)}
		search := func(args string) Result {
			t.Helper()
			res, err := d.g.Call(d.ctx, Call{Tool: "search_kb", Args: json.RawMessage(args), Caller: "researcher", TraceID: "t", Budget: b.Run, Guard: b.Guard})
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		wantOutcome(t, "first search", search(`{"query":"refund policy"}`), audit.OutcomeExecuted, reason.EffectSucceeded)
		wantOutcome(t, "its one retry", search(`{ "query" : "refund policy" }`), audit.OutcomeExecuted, reason.EffectSucceeded)
		res := search(`{"query":"refund policy"}`)
		wantOutcome(t, "third identical search", res, audit.OutcomeRefused, reason.LoopDetected)
		if n := len(d.invocations("search_kb")); n != 2 {
			t.Errorf("%d searches ran, want 2", n)
		}
		// The guard went first: the looping call spent no tool call.
		if used := run.Snapshot().Used[budget.ToolCalls]; used != 2 {
			t.Errorf("tool calls used %v, want 2", used)
		}
		recs := d.decisions(audit.Query{TraceID: "t", Outcome: audit.OutcomeRefused})
		if len(recs) != 1 || recs[0].Code != reason.LoopDetected {
			t.Fatalf("records %+v", recs)
		}
		if r := reasonIn(t, recs[0]); r["loop"] != "repeated_call" || r["tool"] != "search_kb" || r["repeats"] != 2.0 {
			t.Errorf("reason %+v", r)
		}
		f, ok := res.Failure()
		if !ok || f.Category() != failure.Category("duplicate") {
			t.Errorf("Failure() = %v, want duplicate", f)
		}
		if !yields(f) {
			t.Error("a loop must end the lease")
		}
		// Other arguments are another call; malformed ones repeat too.
		wantOutcome(t, "another query", search(`{"query":"refund policy EU"}`), audit.OutcomeExecuted, reason.EffectSucceeded)
		for i, want := range []reason.Code{reason.InvalidArguments, reason.InvalidArguments, reason.LoopDetected} {
			if res := search(`{"query":`); res.Code != want {
				t.Errorf("malformed call %d: %s, want %s", i+1, res.Code, want)
			}
		}
	})
}

func TestBudgetGuardFirst(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		run := newRun(t, d, budget.Limits{ToolCalls: 1})
		b := &limits{Run: run, Guard: newGuard(t)}
		wantOutcome(t, "first", d.mustCall(lookup("t", "A1", b)), audit.OutcomeExecuted, reason.EffectSucceeded)
		wantOutcome(t, "second: the guard allows it, the budget does not", d.mustCall(lookup("t", "A1", b)), audit.OutcomeRefused, reason.BudgetExceeded)
		wantOutcome(t, "third: the guard refuses first", d.mustCall(lookup("t", "A1", b)), audit.OutcomeRefused, reason.LoopDetected)
		if s := run.Snapshot(); s.Refused[budget.ToolCalls] != 1 || s.Used[budget.ToolCalls] != 1 {
			t.Errorf("snapshot used %v refused %v, want 1 and 1", s.Used, s.Refused)
		}
	})
}

// mustCall makes a call, failing the test on an error.
func (d *desk) mustCall(c Call) Result {
	d.t.Helper()
	res, err := d.g.Call(d.ctx, c)
	if err != nil {
		d.t.Fatalf("Call %s: %v", c.Tool, err)
	}
	return res
}

func TestGateBudgetAndCallBudget(t *testing.T) {
	var gateRun *budget.Run
	onStores(t, func(t *testing.T, d *desk) {
		callRun := newRun(t, d, budget.Limits{ToolCalls: 5})
		wantOutcome(t, "gate's budget", d.mustCall(lookup("t", "A1", nil)), audit.OutcomeExecuted, reason.EffectSucceeded)
		wantOutcome(t, "gate's budget, spent", d.mustCall(lookup("t", "A2", nil)), audit.OutcomeRefused, reason.BudgetExceeded)
		// The call's own budget adds to the gate's: the gate's is still spent.
		wantOutcome(t, "the call's own", d.mustCall(lookup("t", "A3", &limits{Run: callRun})), audit.OutcomeRefused, reason.BudgetExceeded)
		if g, c := gateRun.Snapshot().Used[budget.ToolCalls], callRun.Snapshot().Used[budget.ToolCalls]; g != 1 || c != 1 {
			t.Errorf("gate run used %v, call run %v; want 1 and 1", g, c)
		}
	}, func(su *setup) {
		var err error
		gateRun, err = budget.New(budget.Limits{ToolCalls: 1}, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		su.cfg.Budget = gateRun
	})
}

// Lanes draw on one run from parallel goroutines: the run's limit holds
// exactly, each lane's own limit holds, and every refusal has its record.
func TestBudgetParallelLanes(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		const lanes, perLane, laneLimit, runLimit = 6, 5, 4, 15
		run := newRun(t, d, budget.Limits{ToolCalls: runLimit})
		var wg sync.WaitGroup
		executed := make([]int, lanes)
		codes := make([][]reason.Code, lanes)
		for l := range lanes {
			sub, err := run.Sub(budget.Limits{ToolCalls: laneLimit}, "")
			if err != nil {
				t.Fatal(err)
			}
			b := &limits{Run: sub, Guard: newGuard(t)}
			wg.Go(func() {
				trace := fmt.Sprintf("lane-%d", l)
				for i := range perLane {
					res, err := d.g.Call(d.ctx, lookup(trace, fmt.Sprintf("O%d-%d", l, i), b))
					if err != nil {
						t.Error(err)
						return
					}
					codes[l] = append(codes[l], res.Code)
					if res.Outcome == audit.OutcomeExecuted {
						executed[l]++
					}
				}
			})
		}
		wg.Wait()
		total := 0
		for l, n := range executed {
			total += n
			if n > laneLimit {
				t.Errorf("lane %d ran %d calls over its limit %d: %v", l, n, laneLimit, codes[l])
			}
		}
		if total != runLimit {
			t.Errorf("%d calls ran, want exactly the run's %d", total, runLimit)
		}
		if n := len(d.invocations("lookup_order")); n != runLimit {
			t.Errorf("%d effects ran, want %d", n, runLimit)
		}
		if used := run.Snapshot().Used[budget.ToolCalls]; used != runLimit {
			t.Errorf("run used %v", used)
		}
		refused := len(d.decisions(audit.Query{Outcome: audit.OutcomeRefused}))
		if refused != lanes*perLane-runLimit {
			t.Errorf("%d refusal records, want %d", refused, lanes*perLane-runLimit)
		}
	})
}

package budget_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/reason"
)

// Every budget refuses the call that would pass it before the call is
// made: the call function below only "runs" the call when asked first, so
// the number of calls made is the number the budget allowed.
func TestEveryBudgetRefusesBeforeTheCall(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits budget.Limits
		// call asks for one call (and, for usage known afterwards,
		// charges it once the call is made).
		call       func(r *budget.Run, clk *clock) error
		res        budget.Resource
		made       int     // calls that run before the refusal
		limit      float64 // the refusal's numbers
		used       float64
		requested  float64
		usedAfter  budget.Resource // the counter that must not move on refusal
		usedValue  float64
		refusedMsg string
		left       float64 // what Left reports after the refusal
		// charged: the refusal came from a charge (usage beyond the
		// limit), which is not a refused request.
		charged bool
	}{
		{
			name: "tool calls", limits: budget.Limits{ToolCalls: 3},
			call: func(r *budget.Run, _ *clock) error { return r.ToolCall() },
			res:  budget.ToolCalls, made: 3, limit: 3, used: 3, requested: 1,
			usedAfter: budget.ToolCalls, usedValue: 3, refusedMsg: "tool_calls of run r exhausted: 3 of 3 used, 1 more asked",
		},
		{
			name: "tool calls per turn", limits: budget.Limits{ToolCallsPerTurn: 2},
			call: func(r *budget.Run, _ *clock) error { return r.Allow(budget.ToolCalls, 1) },
			res:  budget.ToolCallsPerTurn, made: 2, limit: 2, used: 2, requested: 1,
			usedAfter: budget.ToolCalls, usedValue: 2,
		},
		{
			name: "model calls", limits: budget.Limits{ModelCalls: 2},
			call: func(r *budget.Run, _ *clock) error { return r.ModelCall() },
			res:  budget.ModelCalls, made: 2, limit: 2, used: 2, requested: 1,
			usedAfter: budget.ModelCalls, usedValue: 2,
		},
		{
			// Tokens are known when the model answers: each call uses 40,
			// so the third call's usage, 120 of 100, ends the run: its
			// charge returns the refusal, and so does every later call.
			name: "tokens", limits: budget.Limits{Tokens: 100},
			call: func(r *budget.Run, _ *clock) error {
				if err := r.ModelCall(); err != nil {
					return err
				}
				return r.ChargeTokens(30, 10)
			},
			res: budget.Tokens, made: 2, limit: 100, used: 120, requested: 0, charged: true,
			usedAfter: budget.ModelCalls, usedValue: 3,
		},
		{
			name: "tokens asked in advance", limits: budget.Limits{Tokens: 100},
			call: func(r *budget.Run, _ *clock) error { return r.Allow(budget.Tokens, 30) },
			res:  budget.Tokens, made: 3, limit: 100, used: 90, requested: 30,
			usedAfter: budget.Tokens, usedValue: 90, left: 10,
		},
		{
			name: "rounds", limits: budget.Limits{Rounds: 2},
			call: func(r *budget.Run, _ *clock) error { return r.NextRound() },
			res:  budget.Rounds, made: 2, limit: 2, used: 2, requested: 1,
			usedAfter: budget.Rounds, usedValue: 2,
		},
		{
			name: "replans", limits: budget.Limits{Replans: 1},
			call: func(r *budget.Run, _ *clock) error { return r.Replan() },
			res:  budget.Replans, made: 1, limit: 1, used: 1, requested: 1,
			usedAfter: budget.Replans, usedValue: 1,
		},
		{
			// Each tool call costs 0.4: the third finds 0.8 spent and runs,
			// and its cost, 1.2 of 1, ends the run.
			name: "cost", limits: budget.Limits{Cost: 1},
			call: func(r *budget.Run, _ *clock) error {
				if err := r.ToolCall(); err != nil {
					return err
				}
				return r.ChargeCost(0.4)
			},
			res: budget.Cost, made: 2, limit: 1, used: 0.4 * 3, requested: 0, charged: true,
			usedAfter: budget.ToolCalls, usedValue: 3,
		},
		{
			// Each call takes 25s of a one-minute deadline: calls start at
			// 0s, 25s and 50s; at 75s the run is out of time.
			name: "deadline", limits: budget.Limits{Deadline: time.Minute},
			call: func(r *budget.Run, clk *clock) error {
				if err := r.ToolCall(); err != nil {
					return err
				}
				clk.Advance(25 * time.Second)
				return nil
			},
			res: budget.Deadline, made: 3, limit: 60000, used: 75000,
			usedAfter: budget.ToolCalls, usedValue: 3, refusedMsg: "run r is past its deadline (75000 ms of 60000 ms)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			r := newRun(t, tc.limits, clk, "r")
			made := 0
			var err error
			for made < 100 {
				if err = tc.call(r, clk); err != nil {
					break
				}
				made++
			}
			if made != tc.made {
				t.Fatalf("%d calls made, want %d (last error %v)", made, tc.made, err)
			}
			e := refusal(t, err, tc.res, "r")
			if e.Limit != tc.limit || math.Abs(e.Used-tc.used) > 1e-9 || e.Requested != tc.requested {
				t.Errorf("refusal numbers limit=%v used=%v requested=%v, want %v %v %v", e.Limit, e.Used, e.Requested, tc.limit, tc.used, tc.requested)
			}
			if tc.refusedMsg != "" && !strings.Contains(err.Error(), tc.refusedMsg) {
				t.Errorf("message %q does not say %q", err, tc.refusedMsg)
			}
			// Refused again, and nothing counted for the refused calls.
			if err := tc.call(r, clk); err == nil {
				t.Fatal("a second attempt passed")
			}
			s := r.Snapshot()
			if got := s.Used[tc.usedAfter]; math.Abs(got-tc.usedValue) > 1e-9 {
				t.Errorf("%s used %v after the refusals, want %v", tc.usedAfter, got, tc.usedValue)
			}
			if want := int64(map[bool]int{false: 2, true: 1}[tc.charged]); s.Refused[tc.res] != want {
				t.Errorf("refused %v, want %d by %s", s.Refused, want, tc.res)
			}
			// The planner gets the reason as data.
			why, ok := budget.ReasonOf(err)
			if !ok || why.Code != reason.BudgetExceeded || why.Resource != tc.res || why.Hint == "" || why.Run != "r" {
				t.Errorf("reason %+v", why)
			}
			if left, ok := s.Left(tc.res); !ok || left != tc.left {
				t.Errorf("Left(%s) = %v, %v; want %v, true", tc.res, left, ok, tc.left)
			}
		})
	}
}

func TestReasonJSON(t *testing.T) {
	r := newRun(t, budget.Limits{ToolCalls: 1}, newClock(), "r1")
	must(t, r.ToolCall())
	err := r.ToolCall()
	enc, jerr := json.Marshal(func() *budget.Refusal { x, _ := budget.ReasonOf(err); return x }())
	if jerr != nil {
		t.Fatal(jerr)
	}
	var got map[string]any
	must(t, json.Unmarshal(enc, &got))
	want := map[string]any{"code": "BUDGET_EXCEEDED", "budget": "tool_calls", "limit": 1.0, "used": 1.0, "requested": 1.0, "run": "r1"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (in %s)", k, got[k], v, enc)
		}
	}
	if len(got) != len(want)+2 || got["detail"] == "" || got["hint"] == "" {
		t.Errorf("reason JSON %s: want exactly the budget fields, detail and hint", enc)
	}
	// Wrapped refusals are still found.
	if _, ok := budget.ReasonOf(errors.Join(errors.New("tool gate"), err)); !ok {
		t.Error("ReasonOf missed a wrapped refusal")
	}
	if _, ok := budget.ReasonOf(errors.New("other")); ok {
		t.Error("ReasonOf found a reason in a plain error")
	}
}

func TestPerTurnLimitResetsEachTurn(t *testing.T) {
	r := newRun(t, budget.Limits{ToolCalls: 5, ToolCallsPerTurn: 2}, newClock(), "r")
	for turn := 1; turn <= 3; turn++ {
		allowed := 0
		for r.ToolCall() == nil {
			allowed++
		}
		want := 2
		if turn == 3 {
			want = 1 // the run's limit binds before the turn's
		}
		if allowed != want {
			t.Errorf("turn %d: %d calls, want %d", turn, allowed, want)
		}
		if n := r.NextTurn(); n != int64(turn) {
			t.Errorf("NextTurn = %d, want %d", n, turn)
		}
	}
	refusal(t, r.ToolCall(), budget.ToolCalls, "r")
	// A new round begins a new turn, too.
	r2 := newRun(t, budget.Limits{ToolCallsPerTurn: 1, Rounds: 5}, newClock(), "r2")
	must(t, r2.ToolCall())
	refusal(t, r2.ToolCall(), budget.ToolCallsPerTurn, "r2")
	must(t, r2.NextRound())
	must(t, r2.ToolCall())
	if s := r2.Snapshot(); s.Turn != 1 || s.Round != 1 || s.Used[budget.ToolCallsPerTurn] != 1 || s.Used[budget.ToolCalls] != 2 {
		t.Errorf("snapshot turn=%d round=%d used=%v", s.Turn, s.Round, s.Used)
	}
}

// Past the soft threshold, pressure rises while calls still run; the
// hard stop comes only at the limit.
func TestSoftThresholdRaisesPressureFirst(t *testing.T) {
	r := newRun(t, budget.Limits{ToolCalls: 10}, newClock(), "r")
	want := []float64{0, 0, 0, 0, 0, 0, 0, 0, 0.5, 1} // after each call: 8 of 10 is the soft threshold
	for i, w := range want {
		must(t, r.ToolCall())
		s := r.Snapshot()
		if p := s.Pressure[budget.ToolCalls]; math.Abs(p-w) > 1e-9 || s.Budget != p {
			t.Errorf("after %d calls: pressure %v (budget %v), want %v", i+1, p, s.Budget, w)
		}
	}
	refusal(t, r.ToolCall(), budget.ToolCalls, "r")

	// Soft 0.5 on tokens: half the tokens used is where pressure starts;
	// held tokens count.
	r2 := newRun(t, budget.Limits{Tokens: 1000, Soft: 0.5}, newClock(), "r2")
	must(t, r2.ChargeTokens(400, 100))
	if p := r2.Snapshot().Pressure[budget.Tokens]; p != 0 {
		t.Errorf("at the soft threshold: %v", p)
	}
	res, err := r2.ReserveModelCall(250)
	must(t, err)
	if s := r2.Snapshot(); s.Pressure[budget.Tokens] != 0.5 || s.HeldTokens != 250 || s.Remaining[budget.Tokens] != 250 {
		t.Errorf("with 250 held: pressure %v held %d remaining %v", s.Pressure[budget.Tokens], s.HeldTokens, s.Remaining[budget.Tokens])
	}
	must(t, res.Settle(100, 50))
	if s := r2.Snapshot(); math.Abs(s.Pressure[budget.Tokens]-0.3) > 1e-9 || s.HeldTokens != 0 || s.PromptTokens != 500 || s.CompletionTokens != 150 {
		t.Errorf("settled: %+v", s)
	}
}

func TestReservations(t *testing.T) {
	r := newRun(t, budget.Limits{Tokens: 1000}, newClock(), "r")
	a, err := r.ReserveModelCall(600)
	must(t, err)
	// The estimate is held: a second call of the same size does not fit.
	e := refusal(t, func() error { _, err := r.ReserveModelCall(600); return err }(), budget.Tokens, "r")
	if e.Used != 600 || e.Requested != 600 {
		t.Errorf("refusal %+v", e)
	}
	must(t, a.Settle(200, 100))
	must(t, a.Settle(900, 900)) // only the first settle counts
	a.Release()
	if s := r.Snapshot(); s.Used[budget.Tokens] != 300 || s.HeldTokens != 0 || s.Used[budget.ModelCalls] != 1 {
		t.Errorf("after settle: used %v held %d", s.Used, s.HeldTokens)
	}
	b, err := r.ReserveModelCall(600)
	must(t, err)
	b.Release()
	if s := r.Snapshot(); s.Used[budget.Tokens] != 300 || s.HeldTokens != 0 || s.Used[budget.ModelCalls] != 2 {
		t.Errorf("after release: used %v held %d", s.Used, s.HeldTokens)
	}
	// Without an estimate, a model call needs one token left.
	must(t, r.ChargeTokens(700, 0))
	refusal(t, r.ModelCall(), budget.Tokens, "r")
	refusal(t, func() error { _, err := r.ReserveModelCall(0); return err }(), budget.Tokens, "r")
	if _, err := r.ReserveModelCall(-1); !errors.Is(err, budget.ErrInvalid) {
		t.Errorf("negative estimate: %v", err)
	}
	c := newRun(t, budget.Limits{Tokens: 10}, newClock(), "c")
	res, err := c.ReserveModelCall(5)
	must(t, err)
	if err := res.Settle(-1, 0); !errors.Is(err, budget.ErrInvalid) {
		t.Errorf("negative settle: %v", err)
	}
	if s := c.Snapshot(); s.HeldTokens != 5 {
		t.Errorf("a bad settle released the hold: %d held", s.HeldTokens)
	}
}

func TestDeadline(t *testing.T) {
	clk := newClock()
	r := newRun(t, budget.Limits{Deadline: time.Minute, Rounds: 100}, clk, "r")
	at, ok := r.Deadline()
	if !ok || !at.Equal(clk.Now().Add(time.Minute)) {
		t.Errorf("Deadline() = %v, %v", at, ok)
	}
	clk.Advance(59*time.Second + 999*time.Millisecond)
	must(t, r.NextRound())
	s := r.Snapshot()
	if s.Used[budget.Deadline] != 59999 || s.Remaining[budget.Deadline] != 1 || s.Pressure[budget.Deadline] <= 0.99 {
		t.Errorf("just before the deadline: %v %v %v", s.Used[budget.Deadline], s.Remaining[budget.Deadline], s.Pressure[budget.Deadline])
	}
	clk.Advance(time.Millisecond)
	// Every request is refused at the deadline, whatever it asks for.
	for _, ask := range []func() error{r.NextRound, r.Replan, r.ToolCall, r.ModelCall,
		func() error { return r.Allow(budget.Tokens, 1) },
		func() error { _, err := r.ReserveModelCall(10); return err }} {
		e := refusal(t, ask(), budget.Deadline, "r")
		if e.Limit != 60000 || e.Used != 60000 {
			t.Errorf("deadline refusal %+v", e)
		}
	}
	if _, ok := newRun(t, budget.Limits{Rounds: 1}, clk, "x").Deadline(); ok {
		t.Error("a run without a deadline has one")
	}
}

func TestLimitsValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    budget.Limits
	}{
		{"nothing limited", budget.Limits{}},
		{"only a soft threshold", budget.Limits{Soft: 0.5}},
		{"negative tokens", budget.Limits{Tokens: -1, ToolCalls: 5}},
		{"negative per turn", budget.Limits{ToolCallsPerTurn: -1, ToolCalls: 5}},
		{"negative cost", budget.Limits{Cost: -1}},
		{"NaN cost", budget.Limits{Cost: math.NaN()}},
		{"infinite cost", budget.Limits{Cost: math.Inf(1)}},
		{"negative deadline", budget.Limits{Deadline: -time.Second}},
		{"sub-millisecond deadline", budget.Limits{Deadline: time.Microsecond}},
		{"soft above 1", budget.Limits{ToolCalls: 5, Soft: 1.5}},
		{"negative soft", budget.Limits{ToolCalls: 5, Soft: -0.1}},
		{"NaN soft", budget.Limits{ToolCalls: 5, Soft: math.NaN()}},
	} {
		if _, err := budget.New(tc.l, "", nil); !errors.Is(err, budget.ErrInvalid) {
			t.Errorf("%s: New = %v, want ErrInvalid", tc.name, err)
		}
	}
	if r, err := budget.New(budget.Limits{Rounds: 1}, "", nil); err != nil || r.Snapshot().TakenAt.IsZero() {
		t.Errorf("nil clock (time.Now): %v", err)
	}
	// Any one limit is enough; the defaults are a valid, fully bounded budget.
	for _, l := range []budget.Limits{{Deadline: time.Second}, {Cost: 0.01}, {Replans: 1}, budget.DefaultLimits()} {
		r, err := budget.New(l, "", nil)
		if err != nil {
			t.Errorf("New(%+v): %v", l, err)
			continue
		}
		if r.Limits().Soft != budget.DefaultSoft || !strings.HasPrefix(r.ID(), "run-") {
			t.Errorf("New(%+v): soft %v id %q", l, r.Limits().Soft, r.ID())
		}
	}
	d := budget.DefaultLimits()
	for _, res := range budget.Resources() {
		if res == budget.Cost {
			continue
		}
		if _, ok := newRun(t, d, newClock(), "d").Snapshot().Limits[res]; !ok {
			t.Errorf("DefaultLimits leaves %s unlimited", res)
		}
	}

	r := newRun(t, budget.Limits{ToolCalls: 5}, newClock(), "r")
	for _, tc := range []struct {
		res budget.Resource
		n   int64
	}{{budget.ToolCalls, 0}, {budget.ToolCalls, -3}, {budget.Cost, 1}, {budget.Deadline, 1}, {budget.ToolCallsPerTurn, 1}, {"bananas", 1}} {
		if err := r.Allow(tc.res, tc.n); !errors.Is(err, budget.ErrInvalid) {
			t.Errorf("Allow(%s, %d) = %v, want ErrInvalid", tc.res, tc.n, err)
		}
	}
	for _, err := range []error{r.ChargeTokens(-1, 0), r.ChargeTokens(0, -1), r.ChargeCost(-1), r.ChargeCost(math.NaN()), r.ChargeCost(math.Inf(1))} {
		if !errors.Is(err, budget.ErrInvalid) {
			t.Errorf("bad charge: %v, want ErrInvalid", err)
		}
	}
	if s := r.Snapshot(); s.Used[budget.ToolCalls] != 0 || s.Used[budget.Tokens] != 0 || s.Used[budget.Cost] != 0 || len(s.Refused) != 0 {
		t.Errorf("invalid requests changed the run: %+v", s)
	}
	for _, res := range budget.Resources() {
		if !res.Valid() {
			t.Errorf("%s not valid", res)
		}
	}
	if budget.Resource("bananas").Valid() {
		t.Error("an unknown resource is valid")
	}
}

// The snapshot is a copy: changing it, or the limits a run returns,
// changes nothing in the run.
func TestSnapshotIsACopy(t *testing.T) {
	r := newRun(t, budget.Limits{ToolCalls: 2}, newClock(), "r")
	must(t, r.ToolCall())
	s := r.Snapshot()
	s.Used[budget.ToolCalls] = 0
	s.Limits[budget.ToolCalls] = 100
	l := r.Limits()
	l.ToolCalls = 100
	must(t, r.ToolCall())
	refusal(t, r.ToolCall(), budget.ToolCalls, "r")
	if got := r.Snapshot().Used[budget.ToolCalls]; got != 2 {
		t.Errorf("used %v, want 2", got)
	}
	p := r.Snapshot().Payload()
	if p["run_id"] != "r" || p["used"].(map[string]any)["tool_calls"] != 2.0 {
		t.Errorf("payload %v", p)
	}
	if got := r.Snapshot().Exhausted(); len(got) != 1 || got[0] != budget.ToolCalls {
		t.Errorf("Exhausted() = %v", got)
	}
}

package pressure_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/internal/pressure"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

var t0 = time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)

// Hand-made trace records, as a handle's Trace lists them.
func percept(kind string, p blackboard.Payload, conf *float64) blackboard.Record {
	return blackboard.Record{Slot: blackboard.Percepts, Mode: blackboard.ModeCommit, Kind: kind, Payload: p, Status: blackboard.StatusActive,
		Reason: reason.Committed, Provenance: blackboard.Provenance{Role: blackboard.RoleTool, TimestampMS: t0.UnixMilli(), Confidence: conf}}
}

func proposal(kind string, status blackboard.Status, code reason.Code) blackboard.Record {
	return blackboard.Record{Slot: blackboard.Beliefs, Mode: blackboard.ModePropose, Kind: kind, Status: status, Reason: code,
		Provenance: blackboard.Provenance{Role: blackboard.RolePlanner}}
}

func committedBelief(kind string) blackboard.Record {
	return blackboard.Record{Slot: blackboard.Beliefs, Mode: blackboard.ModeCommit, Kind: kind, Status: blackboard.StatusActive, Reason: reason.Committed,
		Provenance: blackboard.Provenance{Role: blackboard.RoleKernel}}
}

func pendingApproval(action string, at time.Time) blackboard.Record {
	f, _ := audit.Entry{TraceID: "t", Subject: action, Kind: "issue_refund", Outcome: audit.OutcomePendingApproval, Code: reason.Committed}.Follow()
	return followRecord(f, at)
}

func approval(action string) blackboard.Record {
	f, _ := audit.Approval{TraceID: "t", ActionID: action, Decision: audit.Approved, Approver: "human:alice", TTL: time.Hour}.Follow()
	return followRecord(f, time.Time{})
}

// followRecord is the record the Governor would append for f at at.
func followRecord(f kernel.Follow, at time.Time) blackboard.Record {
	return blackboard.Record{Slot: f.Entry.Slot, Mode: blackboard.ModeCommit, Kind: f.Entry.Kind, Status: blackboard.StatusActive, Payload: f.Entry.Payload,
		Provenance: blackboard.Provenance{Role: f.Role, Writer: f.Writer, TimestampMS: at.UnixMilli()}}
}

func TestMeasureEachPressure(t *testing.T) {
	clk := newClock()
	idle := func() budget.Snapshot { return newRun(t, budget.Limits{ToolCalls: 10}, clk, "r").Snapshot() }
	for _, tc := range []struct {
		name string
		in   func() pressure.Inputs
		want budget.State // only the named field is compared, the others must be 0
		get  func(budget.State) float64
	}{
		{"budget: 9 of 10 tool calls, soft 0.8", func() pressure.Inputs {
			r := newRun(t, budget.Limits{ToolCalls: 10}, clk, "r")
			for range 9 {
				must(t, r.Allow(budget.ToolCalls, 1))
			}
			return pressure.Inputs{Budget: r.Snapshot()}
		}, budget.State{Budget: 0.5}, func(s budget.State) float64 { return s.Budget }},
		{"loop: a call seen twice of two allowed", func() pressure.Inputs {
			g, _ := budget.NewGuard(0, 0)
			_, _ = g.Call("search", "d"), g.Call("search", "d")
			return pressure.Inputs{Budget: idle(), Loop: g.Pressure()}
		}, budget.State{Loop: 0.5}, func(s budget.State) float64 { return s.Loop }},
		{"loop: a refused repeat", func() pressure.Inputs {
			g, _ := budget.NewGuard(0, 0)
			_, _, _ = g.Call("search", "d"), g.Call("search", "d"), g.Call("search", "d")
			return pressure.Inputs{Budget: idle(), Loop: g.Pressure()}
		}, budget.State{Loop: 1}, func(s budget.State) float64 { return s.Loop }},
		{"loop: one idle round of two", func() pressure.Inputs {
			g, _ := budget.NewGuard(0, 0)
			_ = g.Round(false)
			return pressure.Inputs{Budget: idle(), Loop: g.Pressure()}
		}, budget.State{Loop: 0.5}, func(s budget.State) float64 { return s.Loop }},
		{"loop: 3 of 4 re-plans", func() pressure.Inputs {
			r := newRun(t, budget.Limits{Replans: 4}, clk, "r")
			for range 3 {
				must(t, r.Allow(budget.Replans, 1))
			}
			return pressure.Inputs{Budget: r.Snapshot()}
		}, budget.State{Loop: 0.75}, func(s budget.State) float64 { return s.Loop }},
		{"evidence: one of two belief proposals rejected for its evidence", func() pressure.Inputs {
			return pressure.Inputs{Budget: idle(), Trace: []blackboard.Record{
				proposal("refund_due", blackboard.StatusInvalidated, reason.StaleEvidence),
				proposal("eligible", blackboard.StatusInvalidated, reason.SupersededByCommit), committedBelief("eligible"),
			}}
		}, budget.State{Evidence: 0.5}, func(s budget.State) float64 { return s.Evidence }},
		{"evidence: pending and expired proposals stall too", func() pressure.Inputs {
			return pressure.Inputs{Budget: idle(), Trace: []blackboard.Record{
				proposal("a", blackboard.StatusActive, ""), proposal("b", blackboard.StatusExpired, reason.TTLExpired),
				proposal("c", blackboard.StatusInvalidated, reason.MissingEvidence),
				proposal("d", blackboard.StatusInvalidated, reason.RuleViolated), // not an evidence code
			}}
		}, budget.State{Evidence: 0.75}, func(s budget.State) float64 { return s.Evidence }},
		{"gate: an approval waiting 27 of 30 minutes", func() pressure.Inputs {
			b := idle()
			return pressure.Inputs{Budget: b, Now: t0.Add(27 * time.Minute), Trace: []blackboard.Record{pendingApproval("actions:t:5", t0)}}
		}, budget.State{Gate: 0.5}, func(s budget.State) float64 { return s.Gate }},
		{"gate: waited past the approval TTL", func() pressure.Inputs {
			return pressure.Inputs{Budget: idle(), Now: t0.Add(2 * time.Hour),
				Trace: []blackboard.Record{pendingApproval("actions:t:5", t0)}}
		}, budget.State{Gate: 1}, func(s budget.State) float64 { return s.Gate }},
		{"conflict: one of two current percepts conflicted", func() pressure.Inputs {
			return pressure.Inputs{Budget: idle(), Now: t0, Trace: []blackboard.Record{
				percept("charge", blackboard.Payload{"conflict": true}, nil), percept("order", blackboard.Payload{}, nil)}}
		}, budget.State{Conflict: 0.5}, func(s budget.State) float64 { return s.Conflict }},
		{"conflict: below a custom threshold", func() pressure.Inputs {
			return pressure.Inputs{Budget: idle(), Now: t0, ConflictThreshold: 0.95, Trace: []blackboard.Record{
				percept("charge", blackboard.Payload{"conflict": true}, new(0.9))}}
		}, budget.State{Conflict: 1}, func(s budget.State) float64 { return s.Conflict }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := pressure.Measure(tc.in())
			if got, want := tc.get(s), tc.get(tc.want); !near(got, want) {
				t.Errorf("pressure %v, want %v (state %+v)", got, want, s)
			}
			others := s.Budget + s.Loop + s.Evidence + s.Gate + s.Conflict - tc.get(s)
			if others != 0 {
				t.Errorf("other pressures rose: %+v", s)
			}
			if tc.get(s) > 0 && s.Escalation <= 0 {
				t.Errorf("pressure without escalation propensity: %+v", s)
			}
		})
	}
}

// What relieves each pressure, and the cases that must not raise one.
func TestMeasureRelief(t *testing.T) {
	b := newRun(t, budget.Limits{ToolCalls: 10}, newClock(), "r").Snapshot()
	for _, tc := range []struct {
		name  string
		trace []blackboard.Record
		now   time.Time
	}{
		{"a rejected belief later committed", []blackboard.Record{
			proposal("refund_due", blackboard.StatusInvalidated, reason.StaleEvidence), committedBelief("refund_due")}, t0},
		{"an approval answered", []blackboard.Record{pendingApproval("actions:t:5", t0), approval("actions:t:5")}, t0.Add(29 * time.Minute)},
		{"a wait inside the soft band", []blackboard.Record{pendingApproval("actions:t:5", t0)}, t0.Add(24 * time.Minute)},
		{"a conflict arbitrated by confidence", []blackboard.Record{percept("charge", blackboard.Payload{"conflict": true}, new(0.9))}, t0},
		{"a conflict superseded by a clean observation", []blackboard.Record{
			percept("charge", blackboard.Payload{"conflict": true}, nil), percept("charge", blackboard.Payload{}, nil)}, t0},
		{"a conflicted observation that expired", []blackboard.Record{func() blackboard.Record {
			r := percept("charge", blackboard.Payload{"conflict": true}, nil)
			r.Provenance.TTLMS = 1000
			return r
		}()}, t0.Add(time.Minute)},
		{"a pending_approval record the kernel did not write", []blackboard.Record{func() blackboard.Record {
			r := pendingApproval("actions:t:5", t0)
			r.Provenance.Role = blackboard.RoleTool
			return r
		}()}, t0.Add(time.Hour)},
	} {
		s := pressure.Measure(pressure.Inputs{Budget: b, Trace: tc.trace, Now: tc.now})
		if s.Evidence != 0 || s.Gate != 0 || s.Conflict != 0 || s.Escalation != 0 {
			t.Errorf("%s: %+v", tc.name, s)
		}
	}
}

func TestEscalationPropensity(t *testing.T) {
	clk := newClock()
	full := newRun(t, budget.Limits{ToolCalls: 1}, clk, "r")
	must(t, full.Allow(budget.ToolCalls, 1))
	for _, tc := range []struct {
		risk, want float64
	}{
		// Budget pressure 1, the rest 0: base = 0.5·1 + 0.5·(1/5) = 0.6.
		{0, 0.6}, {1, 0.6 + 0.6*0.4}, {0.5, 0.6 + 0.5*0.6*0.4}, {-3, 0.6}, {math.NaN(), 0.6}, {7, 0.84},
	} {
		s := pressure.Measure(pressure.Inputs{Budget: full.Snapshot(), Risk: tc.risk})
		if !near(s.Escalation, tc.want) {
			t.Errorf("risk %v: escalation %v, want %v", tc.risk, s.Escalation, tc.want)
		}
	}
	// No pressure, no propensity, whatever the risk.
	calm := newRun(t, budget.Limits{ToolCalls: 10}, clk, "calm").Snapshot()
	if s := pressure.Measure(pressure.Inputs{Budget: calm, Risk: 1}); s.Escalation != 0 {
		t.Errorf("calm run: %+v", s)
	}
}

// Every signal stays in [0, 1], over a grid of inputs including absurd
// ones, and Measure leaves its inputs as they were.
func TestMeasureBounds(t *testing.T) {
	clk := newClock()
	var snaps []budget.Snapshot
	for _, used := range []int64{0, 5, 9, 10} {
		r := newRun(t, budget.Limits{ToolCalls: 10, Tokens: 100, Replans: 2, Deadline: time.Minute}, clk, "r")
		for range used {
			must(t, r.Allow(budget.ToolCalls, 1))
		}
		// Up to 5× the limit: charged after the fact, and the run ends.
		if err := r.ChargeTokens(used*50, 0); err != nil && !errors.Is(err, budget.ErrExceeded) {
			t.Fatal(err)
		}
		snaps = append(snaps, r.Snapshot())
	}
	snaps = append(snaps, budget.Snapshot{}, budget.Snapshot{Soft: 7, Budget: 3,
		Limits: map[budget.Resource]float64{budget.Replans: 1}, Used: map[budget.Resource]float64{budget.Replans: 9}})
	g, _ := budget.NewGuard(0, 0)
	for range 5 {
		_ = g.Call("x", "d")
		_ = g.Round(false)
	}
	loops := []float64{0, g.Pressure(), 4, -1, math.NaN()}
	traces := [][]blackboard.Record{nil,
		{proposal("a", blackboard.StatusActive, ""), percept("p", blackboard.Payload{"conflict": true}, nil), pendingApproval("x", t0.Add(-48*time.Hour))},
		{pendingApproval("x", t0.Add(time.Hour))}, // a wait that starts in the future
	}
	for _, b := range snaps {
		for _, l := range loops {
			for _, tr := range traces {
				for _, risk := range []float64{-1, 0, 0.5, 1, 2} {
					for _, ttl := range []time.Duration{-time.Minute, 0, time.Millisecond, time.Hour} {
						keep := append([]blackboard.Record(nil), tr...)
						for i := range keep {
							keep[i] = keep[i].Clone()
						}
						in := pressure.Inputs{Budget: b, Loop: l, Trace: tr, Now: t0.Add(ttl), Risk: risk, ConflictThreshold: -2}
						s := pressure.Measure(in)
						for name, v := range map[string]float64{"budget": s.Budget, "loop": s.Loop, "evidence": s.Evidence,
							"gate": s.Gate, "conflict": s.Conflict, "escalation": s.Escalation} {
							if !(v >= 0 && v <= 1) {
								t.Fatalf("%s = %v for %+v", name, v, in)
							}
						}
						if !reflect.DeepEqual(keep, tr) && tr != nil {
							t.Fatal("Measure changed the trace")
						}
					}
				}
			}
		}
	}
}

// Measure on a real trace: a conflicted percept, the belief the kernel
// refused because of it, and an action waiting for its approval.
func TestMeasureKernelTrace(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	k, err := kernel.New(kernel.Config{Clock: clk.Now})
	must(t, err)
	defer k.Close()
	tool := k.Handle(blackboard.RoleTool, "orders")
	write := func(kind string, p blackboard.Payload) {
		if _, err := tool.Write(ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Percepts, Kind: kind, Payload: p}); err != nil {
			t.Fatal(err)
		}
	}
	submit := func(e kernel.Entry) kernel.Decision {
		e.TraceID = "t"
		d, err := k.Governor().Submit(ctx, "llm", e, nil)
		must(t, err)
		return d
	}
	write("order", blackboard.Payload{"order_id": "A1"})
	write("charge", blackboard.Payload{"amount": 90.0, "conflict": true})
	if d := submit(kernel.Entry{Slot: blackboard.Beliefs, Kind: "charged", Payload: blackboard.Payload{"value": true, "depends_on": []string{"charge"}}}); d.Code != reason.UnresolvedConflict {
		t.Fatalf("belief on a conflicted charge: %s", d.Code)
	}
	if d := submit(kernel.Entry{Slot: blackboard.Beliefs, Kind: "refund_due", Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}}); !d.Code.OK() {
		t.Fatalf("belief: %s", d.Code)
	}
	// The gate's way: the action with its decision record, pending approval.
	act, err := k.Governor().Submit(ctx, "llm", kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: "issue_refund",
		Payload: blackboard.Payload{"requires_beliefs": []string{"refund_due"}}}, func(d kernel.Decision, committed blackboard.Record) ([]kernel.Follow, error) {
		r := audit.ForDecision("t", "issue_refund", d, committed)
		r.Outcome = audit.OutcomePendingApproval
		f, err := r.Follow()
		return []kernel.Follow{f}, err
	})
	must(t, err)
	if !act.Code.OK() {
		t.Fatalf("action: %s", act.Code)
	}
	clk.Advance(27 * time.Minute)

	traceOf := func() []blackboard.Record {
		var out []blackboard.Record
		for r, err := range tool.Trace(ctx, "t") {
			must(t, err)
			out = append(out, r)
		}
		return out
	}
	run := newRun(t, budget.Limits{ToolCalls: 10}, clk, "t")
	s := pressure.Measure(pressure.Inputs{Budget: run.Snapshot(), Trace: traceOf()})
	if !near(s.Evidence, 0.5) || !near(s.Conflict, 0.5) || !near(s.Gate, 0.5) || s.Budget != 0 || s.Loop != 0 {
		t.Errorf("state %+v", s)
	}
	if !s.CapturedAt.Equal(clk.Now()) {
		t.Errorf("captured at %v, want the snapshot's time", s.CapturedAt)
	}
	// The approver answers: the gate pressure falls.
	f, err := audit.Approval{TraceID: "t", ActionID: act.CommittedID, Decision: audit.Approved, Approver: "human:alice", TTL: time.Hour}.Follow()
	must(t, err)
	if _, err := k.Governor().Append(ctx, f); err != nil {
		t.Fatal(err)
	}
	if s := pressure.Measure(pressure.Inputs{Budget: run.Snapshot(), Trace: traceOf()}); s.Gate != 0 {
		t.Errorf("gate pressure after the approval: %v", s.Gate)
	}
	// The state's JSON carries the spec's names.
	enc, err := json.Marshal(s)
	must(t, err)
	var m map[string]any
	must(t, json.Unmarshal(enc, &m))
	for _, key := range []string{"captured_at", "budget_pressure", "loop_pressure", "evidence_pressure", "gate_pressure", "conflict_pressure", "escalation_propensity"} {
		if _, ok := m[key]; !ok {
			t.Errorf("state JSON lacks %s: %s", key, enc)
		}
	}
}

// clock is a fake clock: time moves only when a test says so.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newRun starts a run named id on clk, failing the test on error.
func newRun(t *testing.T, l budget.Limits, clk *clock, id string) *budget.Run {
	t.Helper()
	r, err := budget.New(l, id, clk.Now)
	if err != nil {
		t.Fatalf("New(%+v): %v", l, err)
	}
	return r
}

// must fails the test on a non-nil error.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// near reports whether a and b agree to 1e-9.
func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

package inspect

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
)

// Rate is a share of a count: Num of Den. A rate with no denominator
// (Den 0) has no value: it is "n/a", never 0 or 100 %.
type Rate struct {
	Num int `json:"num"`
	Den int `json:"den"`
}

// Value is Num/Den, and false when Den is 0.
func (r Rate) Value() (float64, bool) {
	if r.Den == 0 {
		return 0, false
	}
	return float64(r.Num) / float64(r.Den), true
}

// String is "66.7 % (2/3)", or "n/a (0/0)" without a denominator.
func (r Rate) String() string {
	v, ok := r.Value()
	if !ok {
		return "n/a (0/0)"
	}
	return strconv.FormatFloat(100*v, 'f', 1, 64) + " % (" + strconv.Itoa(r.Num) + "/" + strconv.Itoa(r.Den) + ")"
}

// MarshalJSON adds "rate": Num/Den, or null without a denominator.
func (r Rate) MarshalJSON() ([]byte, error) {
	var rate *float64
	if v, ok := r.Value(); ok {
		rate = &v
	}
	return json.Marshal(struct {
		Num  int      `json:"num"`
		Den  int      `json:"den"`
		Rate *float64 `json:"rate"`
	}{r.Num, r.Den, rate})
}

// IntentRate is a rate for one intent ("" for plans that name none).
type IntentRate struct {
	Intent string `json:"intent"`
	Rate   Rate   `json:"rate"`
}

// Completion is the mean time to safe completion: Traces is how many
// traces completed safely of how many had an action; TotalMS the sum of
// their durations.
type Completion struct {
	Traces  Rate  `json:"traces"`
	TotalMS int64 `json:"total_ms"`
}

// Mean is the mean duration of the traces that completed safely, and
// false when none did.
func (c Completion) Mean() (time.Duration, bool) {
	if c.Traces.Num == 0 {
		return 0, false
	}
	return time.Duration(c.TotalMS) * time.Millisecond / time.Duration(c.Traces.Num), true
}

// MarshalJSON adds "mean_ms", null when no trace completed safely.
func (c Completion) MarshalJSON() ([]byte, error) {
	var mean *float64
	if c.Traces.Num > 0 {
		v := float64(c.TotalMS) / float64(c.Traces.Num)
		mean = &v
	}
	return json.Marshal(struct {
		Traces  Rate     `json:"traces"`
		TotalMS int64    `json:"total_ms"`
		MeanMS  *float64 `json:"mean_ms"`
	}{c.Traces, c.TotalMS, mean})
}

// String is "1.5s (3 of 4 traces)", or "n/a (0 of 4 traces)".
func (c Completion) String() string {
	mean, ok := c.Mean()
	if !ok {
		return fmt.Sprintf("n/a (0 of %d traces)", c.Traces.Den)
	}
	return fmt.Sprintf("%s (%d of %d traces)", mean, c.Traces.Num, c.Traces.Den)
}

// Metrics are the Cognitive Core spec's evaluation metrics, computed from
// the records of a store alone: the kernel's commits and refused
// proposals, the tool-call gate's effect records ([audit.EffectOf]),
// decision records ([audit.Of]) and approvals. No metric reads a record's
// own summary of an outcome that another record states directly: a
// tool's success is its effect record, not the decision record's
// outcome. Each is defined by its numerator and denominator:
//
//   - PlanPass, per intent (PlanPassAll over all): plans the kernel found
//     feasible (a plan record it committed, PLAN_FEASIBLE) of plans it
//     decided (those, and plan proposals it invalidated with a rejection
//     code; undecided and expired proposals are not counted). A plan's
//     intent is its payload's "intent"; else the intent the decision
//     records of its trace name in their Context, when they name exactly
//     one; else "".
//   - ToolSuccess: actions whose effect succeeded of actions whose tool
//     was started (an attempt record) and whose effect has a result (a
//     success, a failure including EFFECT_UNKNOWN, a refusal for good or
//     an escalation). An action still running is not counted.
//   - ToolRecovery: of the actions ToolSuccess counts that had an attempt
//     that did not succeed (a second attempt, or a result other than
//     success), those whose effect succeeded in the end.
//   - EvidenceBacked: committed actions that require beliefs (their
//     payload's requires_beliefs is not empty; safe fallbacks require
//     none and are not counted) whose required evidence resolves: each
//     required belief kind is met by an input that names a belief the
//     kernel committed in the store, and the action names at least one
//     evidence artifact, each an evidence record the kernel wrote in the
//     store.
//   - PolicyCompliance: calls policy let through (action proposals the
//     kernel committed) of calls decided (those, action proposals the
//     kernel refused, and calls refused before the kernel: a decision
//     record refused about no record, the loop guard's and budgets'
//     included). The safe fallbacks the gate proposes itself, and the
//     actions the kernel committed as safe fallbacks, are not calls.
//   - Completion: the mean, over the traces that completed safely, of the
//     time from a trace's first record to its last. A trace completed
//     safely when it has an action and every action ended executed (its
//     effect succeeded), refused (by the kernel, before it, or for good
//     by the gate), denied with its safe fallback committed, or escalated
//     (its effect escalated for another reason, or the action is itself
//     a safe fallback): none proposed and undecided, waiting, approved,
//     running, failed or EFFECT_UNKNOWN. Its denominator is the traces
//     with an action.
//   - LoopTrips: calls the loop guard refused (LOOP_DETECTED) of the
//     calls PolicyCompliance counts.
type Metrics struct {
	PlanPass         []IntentRate `json:"plan_verification_pass_rate_by_intent"`
	PlanPassAll      Rate         `json:"plan_verification_pass_rate"`
	ToolSuccess      Rate         `json:"tool_success_rate"`
	ToolRecovery     Rate         `json:"tool_recovery_rate"`
	EvidenceBacked   Rate         `json:"evidence_backed_output_rate"`
	PolicyCompliance Rate         `json:"policy_compliance_rate"`
	Completion       Completion   `json:"time_to_safe_completion"`
	LoopTrips        Rate         `json:"loop_guard_trip_rate"`
}

// metricTrace is what the metrics keep of one trace while the store is
// read.
type metricTrace struct {
	firstMS, lastMS int64
	seen            bool // a record was read: firstMS and lastMS are set
	intent          string
	intents         int  // distinct intents its decision records name, up to 2
	actions         int  // actions it has
	unsafe          bool // one of them did not end safely
}

// metricAction is what the metrics keep of one committed action.
type metricAction struct {
	trace, kind string
	fallback    bool // requires no belief: a safe fallback unless a tool ran its type
	escalates   string
}

// metricEffect is what the gate recorded about one action's effect.
type metricEffect struct {
	attempts int // the highest attempt number recorded
	result   *audit.Effect
}

// metricPlan is one plan the kernel decided.
type metricPlan struct {
	trace, intent string
	pass          bool
}

// metrics accumulates [Metrics] over one read of a store: every record
// is given to add once, slot by slot in [blackboard.AllSlots] order, and
// finish resolves what needs the records of a later slot. Its memory is
// linear in the actions, plans, beliefs and traces of the store.
type metrics struct {
	m        Metrics
	traces   map[string]*metricTrace
	effects  map[string]*metricEffect // by action id
	beliefs  map[string]string        // committed belief id -> kind
	evidence map[string]bool          // the kernel's evidence artifacts
	actions  map[string]*metricAction
	plans    []metricPlan
	// refusedCalls counts, per trace, the calls refused (by the kernel or
	// before it): each an action that ended refused.
	refusedCalls map[string]int
}

func newMetrics() *metrics {
	return &metrics{traces: map[string]*metricTrace{}, effects: map[string]*metricEffect{}, beliefs: map[string]string{},
		evidence: map[string]bool{}, actions: map[string]*metricAction{}, refusedCalls: map[string]int{}}
}

func (x *metrics) trace(id string) *metricTrace {
	t := x.traces[id]
	if t == nil {
		t = &metricTrace{}
		x.traces[id] = t
	}
	return t
}

// add takes one record.
func (x *metrics) add(r *blackboard.Record) {
	traceID := r.Provenance.TraceID
	t := x.trace(traceID)
	if ts := r.Provenance.TimestampMS; !t.seen {
		t.firstMS, t.lastMS, t.seen = ts, ts, true
	} else {
		t.firstMS, t.lastMS = min(t.firstMS, ts), max(t.lastMS, ts)
	}
	switch r.Slot {
	case blackboard.Percepts:
		if e, ok := audit.EffectOf(*r); ok {
			me := x.effects[e.ActionID]
			if me == nil {
				me = &metricEffect{}
				x.effects[e.ActionID] = me
			}
			if e.Status == audit.StatusAttempted {
				me.attempts = max(me.attempts, max(e.Attempt, 1))
			} else if me.result == nil {
				// The gate claims one result key per action: one result.
				me.result = &e
			}
		}
	case blackboard.Beliefs:
		if isKernelCommit(r) {
			x.beliefs[r.ID] = r.Kind
		}
	case blackboard.Plans:
		switch {
		case isKernelCommit(r) && r.Reason == reason.PlanFeasible:
			x.plans = append(x.plans, metricPlan{trace: traceID, intent: intentOf(r.Payload), pass: true})
		case r.Mode == blackboard.ModePropose && r.Status == blackboard.StatusInvalidated && r.Reason != reason.SupersededByCommit:
			x.plans = append(x.plans, metricPlan{trace: traceID, intent: intentOf(r.Payload)})
		}
	case blackboard.Evidence:
		switch {
		case isDecisionRecord(r):
			d, ok := audit.Of(*r)
			if !ok {
				return
			}
			if in, _ := d.Context["intent"].(string); in != "" && t.intents < 2 && in != t.intent {
				if t.intents == 0 {
					t.intent = in
				}
				t.intents++
			}
			// A call refused before the kernel leaves only this record; a
			// derivation that failed is no call.
			if d.Outcome == audit.OutcomeRefused && d.Subject == "" && d.Code != reason.DerivationFailed {
				x.m.PolicyCompliance.Den++
				x.refusedCalls[traceID]++
				if d.Code == reason.LoopDetected {
					x.m.LoopTrips.Num++
				}
			}
		case r.Provenance.Role == blackboard.RoleKernel && r.Mode == blackboard.ModeCommit:
			x.evidence[r.ID] = true
		}
	case blackboard.Actions:
		switch {
		case r.Mode == blackboard.ModePropose:
			switch {
			case r.Reason == reason.SupersededByCommit:
				// counted by its commit
			case r.Status == blackboard.StatusInvalidated && r.Provenance.Writer != audit.GateWriter:
				x.m.PolicyCompliance.Den++
				x.refusedCalls[traceID]++
			case r.Provenance.Writer != audit.GateWriter:
				// undecided or expired: an action that did not end
				t.actions++
				t.unsafe = true
			}
		case isKernelCommit(r):
			requires := list(r.Payload, "requires_beliefs")
			escalates, _ := r.Payload["escalates"].(string)
			x.actions[r.ID] = &metricAction{trace: traceID, kind: r.Kind, fallback: len(requires) == 0, escalates: escalates}
			if len(requires) > 0 {
				x.m.EvidenceBacked.Den++
				if x.backed(r, requires) {
					x.m.EvidenceBacked.Num++
				}
			}
		}
	}
}

// intentOf is a plan's own intent.
func intentOf(p blackboard.Payload) string {
	s, _ := p["intent"].(string)
	return s
}

// backed reports whether the committed action r's required evidence
// resolves in what was read before the actions: each required belief kind
// met by an input naming a committed belief, and at least one evidence
// artifact, every one the kernel's.
func (x *metrics) backed(r *blackboard.Record, requires []any) bool {
	if len(r.EvidenceRefs) == 0 {
		return false
	}
	for _, ev := range r.EvidenceRefs {
		if !x.evidence[ev] {
			return false
		}
	}
	for _, req := range requires {
		kind, ok := req.(string)
		if !ok {
			return false
		}
		met := false
		for _, in := range r.Provenance.InputRefs {
			if x.beliefs[in] == kind {
				met = true
				break
			}
		}
		if !met {
			return false
		}
	}
	return true
}

// finish resolves what needed every slot and returns the metrics.
func (x *metrics) finish() Metrics {
	m := x.m
	tools := map[string]bool{} // action types a tool ran
	fallbackOf := map[string]bool{}
	for id, a := range x.actions {
		if x.effects[id] != nil {
			tools[a.kind] = true
		}
		if a.escalates != "" {
			fallbackOf[a.escalates] = true
		}
	}
	for id, a := range x.actions {
		t := x.trace(a.trace)
		t.actions++
		if a.fallback && !tools[a.kind] {
			continue // a safe fallback: an escalation, no call
		}
		m.PolicyCompliance.Num++
		m.PolicyCompliance.Den++
		if !x.safeEnd(id, fallbackOf) {
			t.unsafe = true
		}
		e := x.effects[id]
		if e == nil || e.attempts == 0 || e.result == nil {
			continue
		}
		m.ToolSuccess.Den++
		ok := e.result.Status == audit.StatusSucceeded
		if ok {
			m.ToolSuccess.Num++
		}
		if e.attempts > 1 || !ok {
			m.ToolRecovery.Den++
			if ok {
				m.ToolRecovery.Num++
			}
		}
	}
	m.LoopTrips.Den = m.PolicyCompliance.Den
	for id, n := range x.refusedCalls {
		x.trace(id).actions += n
	}
	for _, t := range x.traces {
		if t.actions == 0 {
			continue
		}
		m.Completion.Traces.Den++
		if !t.unsafe {
			m.Completion.Traces.Num++
			m.Completion.TotalMS += t.lastMS - t.firstMS
		}
	}
	byIntent := map[string]*Rate{}
	for _, p := range x.plans {
		in := p.intent
		if t := x.traces[p.trace]; in == "" && t != nil && t.intents == 1 {
			in = t.intent
		}
		r := byIntent[in]
		if r == nil {
			r = &Rate{}
			byIntent[in] = r
		}
		r.Den++
		m.PlanPassAll.Den++
		if p.pass {
			r.Num++
			m.PlanPassAll.Num++
		}
	}
	m.PlanPass = []IntentRate{}
	for in, r := range byIntent {
		m.PlanPass = append(m.PlanPass, IntentRate{Intent: in, Rate: *r})
	}
	slices.SortFunc(m.PlanPass, func(a, b IntentRate) int { return cmp.Compare(a.Intent, b.Intent) })
	return m
}

// safeEnd reports whether the committed action id ended safely: executed,
// refused for good, escalated, or denied with its fallback committed.
func (x *metrics) safeEnd(id string, fallbackOf map[string]bool) bool {
	e := x.effects[id]
	if e == nil || e.result == nil {
		return false
	}
	switch e.result.Status {
	case audit.StatusSucceeded, audit.StatusRefused:
		return true
	case audit.StatusEscalated:
		return e.result.Code != reason.ApprovalDenied || fallbackOf[id]
	}
	return false
}

// writeMetrics prints m as `bk stats` shows it, one metric a line.
func writeMetrics(w io.Writer, m Metrics) {
	fmt.Fprintln(w, "METRICS\tVALUE")
	fmt.Fprintf(w, "plan-verification pass rate\t%s\n", m.PlanPassAll)
	for _, p := range m.PlanPass {
		in := p.Intent
		if in == "" {
			in = "(no intent)"
		}
		fmt.Fprintf(w, "  intent %s\t%s\n", Inert(clip(in, 32)), p.Rate)
	}
	fmt.Fprintf(w, "tool success rate\t%s\n", m.ToolSuccess)
	fmt.Fprintf(w, "tool recovery rate\t%s\n", m.ToolRecovery)
	fmt.Fprintf(w, "evidence-backed output rate\t%s\n", m.EvidenceBacked)
	fmt.Fprintf(w, "policy-compliance rate\t%s\n", m.PolicyCompliance)
	fmt.Fprintf(w, "mean time to safe completion\t%s\n", m.Completion)
	fmt.Fprintf(w, "loop-guard trip rate\t%s\n", m.LoopTrips)
}

package inspect

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/kernelhook"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// EventType says what a [TimelineEvent] is.
type EventType string

// The types of timeline events.
const (
	EventObservation EventType = "observation" // a tool committed a percept
	EventConstraint  EventType = "constraint"  // a constraint was committed
	EventProposal    EventType = "proposal"    // a planner or simulator proposed
	EventValidation  EventType = "validation"  // the kernel validated evidence
	EventArbitration EventType = "arbitration" // a conflict was arbitrated by confidence
	EventArtifact    EventType = "artifact"    // an evidence artifact was recorded
	EventCommit      EventType = "commit"      // the kernel committed a record
	EventRefusal     EventType = "refusal"     // the kernel refused a proposal
	EventExpiry      EventType = "expiry"      // a record's TTL ran out
	EventApproval    EventType = "approval"    // an approver approved or denied an action
	EventEffect      EventType = "effect"      // an effect attempt, result or failure
	EventDecision    EventType = "decision"    // a decision record (the audit log)
	EventRecord      EventType = "record"      // any other record
)

// TimelineEvent is one line of a [TimelineReport].
type TimelineEvent struct {
	// Step is the event's place in the paper's execution loop (t0 tools
	// commit percepts, t2 proposals, t3 evidence validation, t4
	// arbitration, t5 artifacts, t6 commits, ... t9 action gating); it
	// never goes back, and an event that cannot take its loop step takes
	// the next one.
	Step   int       `json:"step"`
	TimeMS int64     `json:"ts_ms"`
	Type   EventType `json:"type"`
	// Record is the record the event is about.
	Record string          `json:"record,omitempty"`
	Slot   blackboard.Slot `json:"slot,omitempty"`
	Kind   string          `json:"kind,omitempty"`
	Code   reason.Code     `json:"code,omitempty"`
	// Text is the event in the words of the paper's representative traces
	// ("percept.charge committed (stale=true)").
	Text string `json:"text"`
	// Detail adds what the text leaves out (a fallback's reason, a
	// refusal's rule).
	Detail string `json:"detail,omitempty"`
	// Span is the traceparent of the span the record was written under.
	Span string `json:"span,omitempty"`
}

// Label is the event's step as the paper writes it: "t3".
func (e TimelineEvent) Label() string { return "t" + strconv.Itoa(e.Step) }

// Line is the event's text with its detail: "action.queue_for_review
// committed (reason=PLAN_MISSING_BELIEF)". It holds stored text as it is
// stored: print it through [Inert].
func (e TimelineEvent) Line() string {
	if e.Detail == "" {
		return e.Text
	}
	return e.Text + " (" + e.Detail + ")"
}

// TimelineReport is the ordered events of one trace, rendered like the
// paper's representative traces (§10.4–10.5). Build one with [Timeline];
// print it with [TimelineReport.WriteText], or encode it as JSON.
type TimelineReport struct {
	TraceID   string `json:"trace_id"`
	Namespace string `json:"namespace,omitempty"`
	Records   int    `json:"records"`
	Decisions int    `json:"decisions"` // proposals the kernel decided
	Refusals  int    `json:"refusals"`  // of which refused
	// Outcome is what happened to the trace's actions, by type
	// ("issue_refund denied; send_email executed"), or "no action".
	Outcome string `json:"outcome"`
	// Actions is Outcome as counts of actions by type and fate.
	Actions []ActionOutcome `json:"actions,omitempty"`
	Events  []TimelineEvent `json:"events"`
}

// The timeline's steps of the paper's loop (§6.4).
const (
	stepObserve  = 0
	stepPropose  = 2
	stepValidate = 3
	stepArbitate = 4
	stepArtifact = 5
	stepBelief   = 6
	stepPlan     = 5 // a plan is proposed after its beliefs: t5 when they failed, t7 after t6
	stepPlanGate = 6
	stepAction   = 8
	stepGate     = 9
	stepNext     = -1 // the step after the previous event's
	stepSame     = -2 // the previous event's step (written in the same batch)
)

// Timeline reads the records of one trace from s, in append order, and
// returns them as events: each percept and constraint, each proposal and
// the kernel's verdict on it (evidence validation, arbitration, the
// artifact, the commit or the refusal with its code), approvals, the
// gate's effect attempts and results (read with [audit.EffectOf]),
// decision records and expiries. It only reads, so it works on any store,
// also one another process is writing, and on a trace of any namespace
// (the report names it): trace traceID of namespace, or, with namespace
// "", of the one namespace that holds a trace of that id (an id several
// namespaces hold is [blackboard.ErrInvalidInput]). A trace without
// records is [blackboard.ErrNotFound]. Safe for concurrent use, as far as s
// is.
func Timeline(ctx context.Context, s store.Store, namespace, traceID string) (TimelineReport, error) {
	recs, err := readTrace(ctx, s, namespace, traceID)
	if err != nil {
		return TimelineReport{}, err
	}
	if len(recs) == 0 {
		return TimelineReport{}, fmt.Errorf("inspect: timeline: no trace %q: %w", traceID, blackboard.ErrNotFound)
	}
	b := timelineBuilder{t: TimelineReport{TraceID: traceID, Namespace: cmp.Or(recs[0].Namespace, blackboard.DefaultNamespace), Records: len(recs)}, byID: indexRecords(recs), prev: -1, fallbacks: fallbackTypes(recs)}
	var expiries []*blackboard.Record
	for i := range recs {
		r := &recs[i]
		b.record(r)
		if r.Status == blackboard.StatusExpired {
			expiries = append(expiries, r)
		}
		// An expiry is shown once the trace's clock has passed it.
		for len(expiries) > 0 && (i == len(recs)-1 || expiresBy(expiries[0], recs[i+1].Provenance.TimestampMS)) {
			b.expiry(expiries[0])
			expiries = expiries[1:]
		}
	}
	b.t.Actions = actionOutcomes(recs)
	b.t.Outcome = outcomeText(b.t.Actions)
	return b.t, nil
}

// expiresBy reports whether r's TTL had run out by nowMS.
func expiresBy(r *blackboard.Record, nowMS int64) bool {
	return r.Provenance.TTLMS > 0 && nowMS > r.Provenance.TimestampMS+r.Provenance.TTLMS
}

// readTrace reads a whole trace, of namespace or, when it is "", of the
// one namespace that holds it ([traceNamespace]).
func readTrace(ctx context.Context, s store.Store, namespace, traceID string) ([]blackboard.Record, error) {
	ns, err := traceNamespace(ctx, s, namespace, traceID)
	if err != nil {
		return nil, err
	}
	var recs []blackboard.Record
	for r, err := range s.ListTrace(ctx, ns, traceID) {
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	return recs, nil
}

func indexRecords(recs []blackboard.Record) map[string]*blackboard.Record {
	m := make(map[string]*blackboard.Record, len(recs))
	for i := range recs {
		m[recs[i].ID] = &recs[i]
	}
	return m
}

type timelineBuilder struct {
	t       TimelineReport
	byID    map[string]*blackboard.Record
	prev    int
	prevObs bool // the previous event is an observation or a constraint
	// fallbacks are the trace's safe fallback types: only theirs is a
	// reason, any other action's "reason" is an argument.
	fallbacks map[string]bool
}

// add appends an event at step (one of the loop's steps, stepNext or
// stepSame). Consecutive observations and constraints share their step,
// as the paper's t0 does.
func (b *timelineBuilder) add(step int, typ EventType, r *blackboard.Record, code reason.Code, text, detail string) {
	obs := typ == EventObservation || typ == EventConstraint
	switch {
	case step == stepSame && b.prev >= 0, obs && b.prevObs:
		step = b.prev
	case step < 0:
		step = b.prev + 1
	default:
		step = max(step, b.prev+1)
	}
	b.prev, b.prevObs = step, obs
	e := TimelineEvent{Step: step, Type: typ, Code: code, Text: text, Detail: detail}
	if r != nil {
		e.TimeMS, e.Record, e.Slot, e.Kind, e.Span = r.Provenance.TimestampMS, r.ID, r.Slot, r.Kind, r.Provenance.Span
	}
	b.t.Events = append(b.t.Events, e)
}

// singular names a slot's record in the paper's traces: "percept".
func singular(s blackboard.Slot) string {
	if s == blackboard.Evidence {
		return "evidence"
	}
	return strings.TrimSuffix(string(s), "s")
}

func (b *timelineBuilder) record(r *blackboard.Record) {
	name := singular(r.Slot) + "." + r.Kind
	switch {
	case r.Slot == blackboard.Constraints && r.Mode == blackboard.ModeCommit:
		cname, _ := r.Payload["name"].(string)
		b.add(stepObserve, EventConstraint, r, "", "constraint."+cmpOr(cname, r.Kind)+" committed", scopeDetail(r))
	case r.Slot == blackboard.Percepts && isEffect(r):
		b.effect(r)
	case r.Slot == blackboard.Percepts:
		b.add(stepObserve, EventObservation, r, "", name+" committed"+parens(perceptFlags(r)), "")
	case r.Mode == blackboard.ModePropose:
		b.proposal(r, name)
	case r.Slot == blackboard.Evidence && r.Kind == kernelhook.KindBeliefValidation && r.Provenance.Role == blackboard.RoleKernel:
		b.artifact(r)
	case r.Slot == blackboard.Evidence && r.Kind == audit.Kind && r.Provenance.Role == blackboard.RoleKernel:
		b.decisionRecord(r)
	case r.Slot == blackboard.Evidence && r.Kind == audit.KindApproval && r.Provenance.Role == blackboard.RoleApprover:
		a, _ := audit.ApprovalOf(*r)
		b.add(stepNext, EventApproval, r, "", "approval: "+string(a.Decision)+" by "+r.Provenance.Writer, "for "+a.ActionID)
	case r.Slot == blackboard.Evidence && r.Provenance.Role == blackboard.RoleKernel &&
		(r.Kind == audit.KindPolicy || r.Kind == audit.KindControls || r.Kind == audit.KindCompiledContext):
		b.runRecord(r) // records of the run, not decisions
	case r.Mode == blackboard.ModeCommit && r.Provenance.Role == blackboard.RoleKernel:
		b.commit(r, name)
	default:
		b.add(stepNext, EventRecord, r, r.Reason, name+" written by "+string(r.Provenance.Role), "")
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func scopeDetail(r *blackboard.Record) string {
	if r.Scope == blackboard.ScopePersistent {
		return "persistent"
	}
	return ""
}

func parens(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// perceptFlags renders what a percept says about itself, as the paper's
// traces do: "stale=true", "conflict=true, confidence=0.8"; "" when it
// says nothing.
func perceptFlags(r *blackboard.Record) string {
	var parts []string
	for _, key := range []string{"stale", "conflict", "low_confidence"} {
		if r.Payload.Bool(key) {
			parts = append(parts, key+"=true")
		}
	}
	if c := r.Provenance.Confidence; c != nil {
		parts = append(parts, "confidence="+strconv.FormatFloat(*c, 'g', -1, 64))
	}
	return strings.Join(parts, ", ")
}

func (b *timelineBuilder) proposal(r *blackboard.Record, name string) {
	committed := r.Reason == reason.SupersededByCommit
	if r.Slot == blackboard.Plans && committed {
		return // the committed plan's line says "proposed -- feasible"
	}
	step := stepNext
	switch r.Slot {
	case blackboard.Beliefs:
		step = stepPropose
	case blackboard.Plans:
		step = stepPlan
	case blackboard.Actions:
		step = stepAction
	}
	b.add(step, EventProposal, r, "", name+" proposed", "")
	if r.Status != blackboard.StatusInvalidated || committed {
		return
	}
	b.t.Decisions++
	b.t.Refusals++
	code := r.Reason
	switch r.Slot {
	case blackboard.Beliefs:
		b.add(stepValidate, EventRefusal, r, code, "evidence validation: "+string(code)+" -- belief rejected", "")
	case blackboard.Plans:
		b.add(stepPlanGate, EventRefusal, r, code, "plan validation: "+string(code)+" -- plan rejected", "")
	case blackboard.Actions:
		b.add(stepGate, EventRefusal, r, code, "action gating: "+string(code)+" -- action blocked", "")
	default:
		b.add(stepNext, EventRefusal, r, code, singular(r.Slot)+" check: "+string(code)+" -- "+singular(r.Slot)+" rejected", "")
	}
}

// artifact shows a belief's evidence validation: each arbitrated conflict,
// then the artifact itself.
func (b *timelineBuilder) artifact(r *blackboard.Record) {
	checks := list(r.Payload, "checks")
	arbitrated := false
	for i, p := range r.Provenance.InputRefs {
		if i >= len(checks) || !strings.Contains(fmt.Sprint(checks[i]), "conflict_arbitrated") {
			continue
		}
		arbitrated = true
		conf, pr := "?", b.byID[p]
		if pr == nil {
			pr = r
		} else if pr.Provenance.Confidence != nil {
			conf = strconv.FormatFloat(*pr.Provenance.Confidence, 'g', -1, 64)
		}
		b.add(stepValidate, EventValidation, pr, "", "evidence validation: CONFLICTING_EVIDENCE detected", "")
		threshold, _ := r.Payload.Float("conflict_threshold")
		b.add(stepArbitate, EventArbitration, r, "", "arbitration: confidence "+conf+" >= threshold "+
			strconv.FormatFloat(threshold, 'g', -1, 64)+" -- resolved", "")
	}
	if !arbitrated {
		b.add(stepValidate, EventValidation, r, "", "evidence validation: passed", "")
	}
	b.add(stepArtifact, EventArtifact, r, "", "evidence artifact recorded", "")
}

// runRecord shows a record the gate or the context compiler keeps about
// the run: the policy snapshot in force, the trace's run controls, a
// compiled context a model was shown. None is a decision.
func (b *timelineBuilder) runRecord(r *blackboard.Record) {
	hash, _ := r.Payload["hash"].(string)
	switch r.Kind {
	case audit.KindPolicy:
		b.add(stepSame, EventArtifact, r, "", "policy snapshot recorded", hash)
	case audit.KindControls:
		mode, _ := r.Payload["mode"].(string)
		b.add(stepSame, EventArtifact, r, "", "run controls: "+mode, fmt.Sprint(r.Payload["prohibited"]))
	default:
		tokens, _ := r.Payload.Float("tokens")
		b.add(stepSame, EventArtifact, r, "", "compiled context shown to the model: "+strconv.Itoa(int(tokens))+" tokens", hash)
	}
}

func (b *timelineBuilder) commit(r *blackboard.Record, name string) {
	b.t.Decisions++
	switch r.Slot {
	case blackboard.Plans:
		b.add(stepPlan, EventCommit, r, r.Reason, name+" proposed -- feasible", "")
	case blackboard.Beliefs:
		b.add(stepBelief, EventCommit, r, r.Reason, name+" committed", "")
	case blackboard.Actions:
		detail := ""
		if why, ok := r.Payload["reason"].(string); ok && b.fallbacks[r.Kind] {
			detail = "reason=" + why
		}
		b.add(stepGate, EventCommit, r, r.Reason, name+" committed", detail)
	default:
		b.add(stepNext, EventCommit, r, r.Reason, name+" committed", "")
	}
}

// isEffect reports whether a percept is one the tool-call gate wrote
// about an effect.
func isEffect(r *blackboard.Record) bool {
	_, ok := audit.EffectOf(*r)
	return ok
}

// effectText is an effect in one line: "effect.issue_refund failed
// (attempt 3): RETRIES_EXHAUSTED". A success names no code: the percept
// it produced follows.
func effectText(e audit.Effect) string {
	s := "effect." + e.Tool + " " + e.Status
	if e.Attempt > 0 {
		s += " (attempt " + strconv.Itoa(e.Attempt) + ")"
	}
	if e.Code != "" && e.Status != audit.StatusAttempted && e.Status != audit.StatusSucceeded {
		s += ": " + string(e.Code)
	}
	return s
}

func (b *timelineBuilder) effect(r *blackboard.Record) {
	e, _ := audit.EffectOf(*r)
	text := effectText(e)
	if e.Status == audit.StatusSucceeded {
		text += " -> percept." + r.Kind
	}
	b.add(stepNext, EventEffect, r, e.Code, text, "")
}

func (b *timelineBuilder) decisionRecord(r *blackboard.Record) {
	d, err := decisionOf(r)
	if err != nil {
		b.add(stepSame, EventDecision, r, "", "decision record (unreadable)", err.Error())
		return
	}
	step := stepSame
	if d.Subject == "" {
		step = stepNext // refused before the kernel: no other record of it
		if d.Outcome == audit.OutcomeRefused {
			b.t.Decisions++
			b.t.Refusals++
		}
	}
	detail := d.Rule
	if detail == "" {
		detail = d.Detail
	}
	b.add(step, EventDecision, r, d.Code, "decision: "+d.Kind+" "+string(d.Outcome)+" ("+string(d.Code)+")", clipText(detail, 80))
}

func (b *timelineBuilder) expiry(r *blackboard.Record) {
	b.add(stepNext, EventExpiry, r, r.Reason, singular(r.Slot)+"."+r.Kind+" expired ("+string(r.Reason)+")", "")
}

// clipText cuts s to about n bytes on a rune boundary.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// WriteText writes the timeline one event a line: text, record id, under
// a line that sums the trace up. Stored text is printed through [Inert].
func (t TimelineReport) WriteText(w io.Writer) error { return t.write(w, false) }

// WriteSteps writes the timeline as [TimelineReport.WriteText] does, each
// event led by its step of the paper's loop ("t0" … "t9"), as the paper
// prints its traces: for reading beside the paper (bk timeline --steps).
func (t TimelineReport) WriteSteps(w io.Writer) error { return t.write(w, true) }

func (t TimelineReport) write(w io.Writer, steps bool) error {
	var sb strings.Builder
	fmt.Fprintf(&sb, "trace \"%s\" (namespace %s): %d records, %d decisions, %d refused; outcome: %s\n",
		Inert(t.TraceID), Inert(t.Namespace), t.Records, t.Decisions, t.Refusals, Inert(t.Outcome))
	for _, e := range t.Events {
		if steps {
			fmt.Fprintf(&sb, "  %-4s %-62s %s\n", e.Label(), Inert(e.Line()), Inert(e.Record))
		} else {
			fmt.Fprintf(&sb, "  %-62s %s\n", Inert(e.Line()), Inert(e.Record))
		}
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// String renders the timeline as [TimelineReport.WriteText] does.
func (t TimelineReport) String() string {
	var sb strings.Builder
	_ = t.WriteText(&sb)
	return sb.String()
}

// WriteJSON writes the timeline as one indented JSON object, through
// [InertJSON].
func (t TimelineReport) WriteJSON(w io.Writer) error { return writeJSON(w, t) }

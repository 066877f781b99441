package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// KeyEffect is the payload key under which the tool-call gate keeps its own
// fields in the percepts it writes about an effect (an attempt, a result, a
// failure, an escalation): an object with "status", "tool", "action_id",
// "attempt" and "code". [Kernel.Timeline] and [Kernel.Explain] read it.
const KeyEffect = "effect"

// KindBeliefValidation is the kind of the evidence artifact the kernel
// writes with a committed belief: the checks each percept passed.
const KindBeliefValidation = "belief_validation"

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

// TimelineEvent is one line of a [Timeline].
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
	Record string `json:"record,omitempty"`
	Slot   Slot   `json:"slot,omitempty"`
	Kind   string `json:"kind,omitempty"`
	Code   Code   `json:"code,omitempty"`
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

// Timeline is the ordered events of one trace, rendered like the paper's
// representative traces (§10.4–10.5). Build one with [Kernel.Timeline] or
// [TraceTimeline]; print it with [Timeline.WriteText], or encode it as
// JSON.
type Timeline struct {
	TraceID   string          `json:"trace_id"`
	Namespace string          `json:"namespace,omitempty"`
	Records   int             `json:"records"`
	Decisions int             `json:"decisions"` // proposals the kernel decided
	Refusals  int             `json:"refusals"`  // of which refused
	Outcome   string          `json:"outcome"`   // the trace's last action: see [Timeline.Outcome]
	Events    []TimelineEvent `json:"events"`
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

// Timeline returns the events of a trace of the kernel's namespace (see
// [TraceTimeline]). A trace of another namespace is [ErrNotFound].
func (k *Kernel) Timeline(ctx context.Context, traceID string) (Timeline, error) {
	t, err := TraceTimeline(ctx, k.store, traceID)
	if err == nil && t.Namespace != k.namespace {
		return Timeline{}, newErr("timeline", "", "", ErrNotFound, fmt.Sprintf("trace %q belongs to another namespace", traceID))
	}
	return t, err
}

// TraceTimeline reads the records of one trace from s, in append order,
// and returns them as events: each percept and constraint, each proposal
// and the kernel's verdict on it (evidence validation, arbitration, the
// artifact, the commit or the refusal with its code), approvals, effect
// attempts and results, decision records and expiries. It only reads, so
// it works on any store, also one another process is writing. A trace
// without records is [ErrNotFound].
func TraceTimeline(ctx context.Context, s Store, traceID string) (Timeline, error) {
	recs, err := readTrace(ctx, s, traceID)
	if err != nil {
		return Timeline{}, err
	}
	if len(recs) == 0 {
		return Timeline{}, newErr("timeline", "", "", ErrNotFound, fmt.Sprintf("no trace %q", traceID))
	}
	b := timelineBuilder{t: Timeline{TraceID: traceID, Namespace: nsOf(recs[0].Namespace), Records: len(recs)}, byID: indexRecords(recs), prev: -1}
	var expiries []*Record
	for i := range recs {
		r := &recs[i]
		b.record(r)
		if r.Status == StatusExpired {
			expiries = append(expiries, r)
		}
		// An expiry is shown once the trace's clock has passed it.
		for len(expiries) > 0 && (i == len(recs)-1 || expiresBy(expiries[0], recs[i+1].Provenance.TimestampMS)) {
			b.expiry(expiries[0])
			expiries = expiries[1:]
		}
	}
	b.t.Outcome = b.outcome
	if b.t.Outcome == "" {
		b.t.Outcome = "no action"
	}
	return b.t, nil
}

// expiresBy reports whether r's TTL had run out by nowMS.
func expiresBy(r *Record, nowMS int64) bool {
	return r.Provenance.TTLMS > 0 && nowMS > r.Provenance.TimestampMS+r.Provenance.TTLMS
}

// readTrace reads a whole trace.
func readTrace(ctx context.Context, s Store, traceID string) ([]Record, error) {
	var recs []Record
	for r, err := range s.ListTrace(ctx, traceID) {
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	return recs, nil
}

func indexRecords(recs []Record) map[string]*Record {
	m := make(map[string]*Record, len(recs))
	for i := range recs {
		m[recs[i].ID] = &recs[i]
	}
	return m
}

type timelineBuilder struct {
	t       Timeline
	byID    map[string]*Record
	prev    int
	prevObs bool // the previous event is an observation or a constraint
	outcome string
}

// add appends an event at step (one of the loop's steps, stepNext or
// stepSame). Consecutive observations and constraints share their step,
// as the paper's t0 does.
func (b *timelineBuilder) add(step int, typ EventType, r *Record, code Code, text, detail string) {
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
func singular(s Slot) string {
	if s == Evidence {
		return "evidence"
	}
	return strings.TrimSuffix(s.String(), "s")
}

func (b *timelineBuilder) record(r *Record) {
	name := singular(r.Slot) + "." + r.Kind
	switch {
	case r.Slot == Constraints && r.Mode == ModeCommit:
		cname, _ := r.Payload.String(KeyName)
		b.add(stepObserve, EventConstraint, r, "", "constraint."+cmpOr(cname, r.Kind)+" committed", scopeDetail(r))
	case r.Slot == Percepts && isEffect(r):
		b.effect(r)
	case r.Slot == Percepts:
		b.add(stepObserve, EventObservation, r, "", name+" committed"+parens(PerceptFlags(r)), "")
	case r.Mode == ModePropose:
		b.proposal(r, name)
	case r.Slot == Evidence && r.Kind == KindBeliefValidation && r.Provenance.Role == RoleKernel:
		b.artifact(r)
	case r.Slot == Evidence && r.Kind == KindDecisionRecord && r.Provenance.Role == RoleKernel:
		b.decisionRecord(r)
	case r.Slot == Evidence && r.Kind == KindApproval && r.Provenance.Role == RoleApprover:
		decision, _ := r.Payload.String(KeyDecision)
		action, _ := r.Payload.String(KeyActionID)
		b.add(stepNext, EventApproval, r, "", "approval: "+decision+" by "+r.Provenance.Writer, "for "+action)
	case r.Mode == ModeCommit && r.Provenance.Role == RoleKernel:
		b.commit(r, name)
	default:
		b.add(stepNext, EventRecord, r, r.Reason, name+" written by "+r.Provenance.Role.String(), "")
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func scopeDetail(r *Record) string {
	if r.Scope == ScopePersistent {
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

// PerceptFlags renders what a percept says about itself, as the paper's
// traces do: "stale=true", "conflict=true, confidence=0.8"; "" when it
// says nothing.
func PerceptFlags(r *Record) string {
	var parts []string
	for _, key := range []string{KeyStale, KeyConflict, KeyLowConfidence} {
		if r.Payload.Bool(key) {
			parts = append(parts, key+"=true")
		}
	}
	if c := r.Provenance.Confidence; c != nil {
		parts = append(parts, "confidence="+strconv.FormatFloat(*c, 'g', -1, 64))
	}
	return strings.Join(parts, ", ")
}

func (b *timelineBuilder) proposal(r *Record, name string) {
	committed := r.Reason == CodeSupersededByCommit
	if r.Slot == Plans && committed {
		return // the committed plan's line says "proposed -- feasible"
	}
	step := stepNext
	switch r.Slot {
	case Beliefs:
		step = stepPropose
	case Plans:
		step = stepPlan
	case Actions:
		step = stepAction
	}
	b.add(step, EventProposal, r, "", name+" proposed", "")
	if r.Status != StatusInvalidated || committed {
		return
	}
	b.t.Decisions++
	b.t.Refusals++
	code := r.Reason
	switch r.Slot {
	case Beliefs:
		b.add(stepValidate, EventRefusal, r, code, "evidence validation: "+string(code)+" -- belief rejected", "")
	case Plans:
		b.add(stepPlanGate, EventRefusal, r, code, "plan validation: "+string(code)+" -- plan rejected", "")
	case Actions:
		b.add(stepGate, EventRefusal, r, code, "action gating: "+string(code)+" -- action blocked", "")
		b.outcome = r.Kind + " refused: " + string(code)
	default:
		b.add(stepNext, EventRefusal, r, code, singular(r.Slot)+" check: "+string(code)+" -- "+singular(r.Slot)+" rejected", "")
	}
}

// artifact shows a belief's evidence validation: each arbitrated conflict,
// then the artifact itself.
func (b *timelineBuilder) artifact(r *Record) {
	checks := r.Payload.list("checks")
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

func (b *timelineBuilder) commit(r *Record, name string) {
	b.t.Decisions++
	switch r.Slot {
	case Plans:
		b.add(stepPlan, EventCommit, r, r.Reason, name+" proposed -- feasible", "")
	case Beliefs:
		b.add(stepBelief, EventCommit, r, r.Reason, name+" committed", "")
	case Actions:
		detail := ""
		if reason, ok := r.Payload.String(KeyReason); ok {
			detail = "reason=" + reason
		}
		b.add(stepGate, EventCommit, r, r.Reason, name+" committed", detail)
		b.outcome = r.Kind + " committed"
	default:
		b.add(stepNext, EventCommit, r, r.Reason, name+" committed", "")
	}
}

// isEffect reports whether a percept is one the tool-call gate wrote
// about an effect.
func isEffect(r *Record) bool {
	_, ok := r.Payload[KeyEffect].(map[string]any)
	return ok
}

func effectMeta(r *Record) (status, tool, action string, attempt int, code string) {
	m, _ := r.Payload[KeyEffect].(map[string]any)
	status, _ = m["status"].(string)
	tool, _ = m["tool"].(string)
	action, _ = m["action_id"].(string)
	if n, ok := toFloat(m["attempt"]); ok {
		attempt = int(n)
	}
	code, _ = m["code"].(string)
	return
}

func (b *timelineBuilder) effect(r *Record) {
	status, tool, action, attempt, code := effectMeta(r)
	text := "effect." + tool + " " + status
	if attempt > 0 {
		text += " (attempt " + strconv.Itoa(attempt) + ")"
	}
	if status == "succeeded" {
		text += " -> percept." + r.Kind
	} else if code != "" && status != "attempted" {
		text += ": " + code
	}
	_ = action
	b.add(stepNext, EventEffect, r, Code(code), text, "")
}

func (b *timelineBuilder) decisionRecord(r *Record) {
	d, err := decisionRecordOf(r)
	if err != nil {
		b.add(stepSame, EventDecision, r, "", "decision record (unreadable)", err.Error())
		return
	}
	step := stepSame
	if d.Subject == "" {
		step = stepNext // refused before the kernel: no other record of it
		if d.Outcome == OutcomeRefused {
			b.t.Decisions++
			b.t.Refusals++
			b.outcome = d.Kind + " refused: " + string(d.Code)
		}
	}
	detail := d.Rule
	if detail == "" {
		detail = d.Detail
	}
	b.add(step, EventDecision, r, d.Code, "decision: "+d.Kind+" "+string(d.Outcome)+" ("+string(d.Code)+")", clipText(detail, 80))
}

func (b *timelineBuilder) expiry(r *Record) {
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

// WriteText writes the timeline as the paper prints a trace, one event a
// line: step, text, record id. Stored text is printed through [Inert].
func (t Timeline) WriteText(w io.Writer) error {
	var sb strings.Builder
	fmt.Fprintf(&sb, "trace \"%s\" (namespace %s): %d records, %d decisions, %d refused; outcome: %s\n",
		Inert(t.TraceID), Inert(t.Namespace), t.Records, t.Decisions, t.Refusals, Inert(t.Outcome))
	for _, e := range t.Events {
		fmt.Fprintf(&sb, "  %-4s %-62s %s\n", e.Label(), Inert(e.Line()), Inert(e.Record))
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// String renders the timeline as [Timeline.WriteText] does.
func (t Timeline) String() string {
	var sb strings.Builder
	_ = t.WriteText(&sb)
	return sb.String()
}

// WriteJSON writes the timeline as one indented JSON object, through
// [InertJSON].
func (t Timeline) WriteJSON(w io.Writer) error { return writeInertJSON(w, t) }

// Inert returns s as a terminal may show it: every character a terminal
// or a text layout could act on is replaced by an escape that reads as
// text. Stored text (a kind, a tool name a model chose, a fallback's
// reason) is written by whoever could write a record, and printed to an
// operator who trusts what the inspector shows, so an escape sequence in it
// must not erase lines, move the cursor or write the clipboard, and a
// newline or a bidirectional override must not forge a line or reorder
// one. Escaped: C0 controls and DEL (\n, \r, \t, else \x1b), C1 controls
// U+0080–U+009F (\x9b), bytes that are not UTF-8 (\xff, which an 8-bit
// terminal could read as C1), bidirectional controls (U+061C, U+200E,
// U+200F, U+202A–U+202E, U+2066–U+2069) and the line and paragraph
// separators U+2028, U+2029 (\u202e). Everything else is kept as it is.
// [Timeline.WriteText] and [Explanation.WriteText] print every stored
// field through it; [InertJSON] is its counterpart for JSON text. Safe for
// concurrent use.
func Inert(s string) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if active(r, n) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s // the common case: nothing to escape
	}
	var sb strings.Builder
	sb.Grow(len(s) + 8)
	sb.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case !active(r, n):
			sb.WriteString(s[i : i+n])
		case r == '\n':
			sb.WriteString(`\n`)
		case r == '\r':
			sb.WriteString(`\r`)
		case r == '\t':
			sb.WriteString(`\t`)
		case r == utf8.RuneError:
			fmt.Fprintf(&sb, `\x%02x`, s[i]) // a byte that is not UTF-8
		case r < 0x100:
			fmt.Fprintf(&sb, `\x%02x`, r)
		default:
			fmt.Fprintf(&sb, `\u%04x`, r)
		}
		i += n
	}
	return sb.String()
}

// InertJSON returns JSON text with the characters [Inert] escapes that
// encoding/json leaves raw (DEL, C1 controls, bidirectional controls; it
// escapes the other C0 controls and the separators itself) written as
// \uXXXX escapes: the same JSON value, printable to a terminal. Such
// characters can only stand inside JSON strings, where the escape means
// the same. Text that is not UTF-8 has its invalid bytes replaced by
// U+FFFD. Safe for concurrent use.
func InertJSON(b []byte) []byte {
	i := 0
	for i < len(b) {
		r, n := utf8.DecodeRune(b[i:])
		if active(r, n) && r >= 0x20 {
			break
		}
		i += n
	}
	if i == len(b) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	out = append(out, b[:i]...)
	for i < len(b) {
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			out = append(out, `\ufffd`...)
		case active(r, n) && r >= 0x20:
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}

// active reports whether the rune r, read from n bytes, is one a terminal
// or a layout acts on (see [Inert]).
func active(r rune, n int) bool {
	if mutInertText {
		return false
	}
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r == utf8.RuneError && n == 1:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x2028 && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// writeInertJSON writes v as one indented JSON object through [InertJSON].
func writeInertJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(InertJSON(b), '\n'))
	return err
}

package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

const (
	// Kind is the evidence kind of a decision record.
	Kind = "decision_record"
	// version is the version of [Entry]'s shape, which the encoder
	// writes in Entry.Version.
	version = 1
)

// Outcome says what a governed call came to: what the gate answers a
// call with (toolgate.Result.Outcome: refused, pending approval, executed or
// failed) and what a decision record keeps (all six).
type Outcome string

// The outcomes of a governed call.
const (
	OutcomeCommitted       Outcome = "committed"        // the kernel committed the proposal
	OutcomeRefused         Outcome = "refused"          // the kernel, a contract or a budget refused it
	OutcomePendingApproval Outcome = "pending_approval" // committed, waiting for an approver
	OutcomeExecuted        Outcome = "executed"         // the effect ran and succeeded
	OutcomeFailed          Outcome = "failed"           // the effect ran and failed for good
	OutcomeEscalated       Outcome = "escalated"        // handed to a person (a denial, an expiry, a failure)
)

// Entry is one entry of the audit log, in a versioned shape: what the
// kernel decided (code, rule, failed record, causes, evidence, constraints
// in force) and the call itself (Context: the tool, its arguments, the
// framework's call id, the budget). TraceID, Namespace, TimeMS and
// RecordID come from the evidence record that holds it when it is decoded
// ([Of]); the encoder stores only TraceID's record in that trace.
type Entry struct {
	// Version is the version of the entry's shape (1), set by the encoder:
	// a reader can tell a later shape from this one.
	Version int `json:"version"`
	// ID is the decision's id; RecordID the evidence record holding it.
	ID        string `json:"decision_id,omitempty"`
	RecordID  string `json:"record_id,omitempty"`
	TraceID   string `json:"trace_id,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	TimeMS    int64  `json:"ts_ms,omitempty"`
	// Subject is the record the decision is about: the proposal decided,
	// the committed record, or the record a governed write stored (an
	// effect's result).
	Subject string         `json:"subject,omitempty"`
	Kind    string         `json:"kind"` // the action type or tool
	Outcome Outcome        `json:"outcome"`
	Code    reason.Code    `json:"code"`
	Rule    string         `json:"rule,omitempty"`
	Failed  string         `json:"failed,omitempty"`
	Detail  string         `json:"detail,omitempty"`
	Causes  []kernel.Cause `json:"causes,omitempty"`
	// EvidenceRefs is the chain that explains the decision.
	EvidenceRefs []string `json:"evidence_refs,omitempty"`
	// Constraints names the constraints in force when it was decided.
	Constraints []string           `json:"constraints,omitempty"`
	Approvals   []string           `json:"approvals,omitempty"`
	Context     blackboard.Payload `json:"context,omitempty"`
}

// ForDecision is the decision record of a kernel decision about a
// proposal of kind in trace traceID: committed (about the committed
// record, with the chain it rests on) or refused (about the proposal, with
// the failed record and the causes' records), with the constraints that
// were in force. committed is the committed record (the one
// [kernel.Governor.Submit] hands its callback; zero for a refusal): its
// input and evidence refs are the chain. The caller adds the Context, and
// sets Outcome to [OutcomePendingApproval] for a committed action that
// waits for one.
func ForDecision(traceID, kind string, d kernel.Decision, committed blackboard.Record) Entry {
	r := Entry{
		ID: d.ID, TraceID: traceID, Subject: d.ProposalID, Kind: kind, Outcome: OutcomeRefused, Code: d.Code,
		Rule: d.Rule, Failed: d.Failed, Detail: d.Detail, Causes: d.Causes, Constraints: d.Constraints,
	}
	if d.Committed() {
		r.Outcome, r.Subject = OutcomeCommitted, d.CommittedID
		r.EvidenceRefs = append(append([]string(nil), committed.Provenance.InputRefs...), committed.EvidenceRefs...)
		return r
	}
	if d.Failed != "" {
		r.EvidenceRefs = append(r.EvidenceRefs, d.Failed)
	}
	for _, c := range d.Causes {
		if c.Record != "" && c.Record != d.Failed {
			r.EvidenceRefs = append(r.EvidenceRefs, c.Record)
		}
	}
	return r
}

// ForRecord is the decision record of a governed write: rec (an effect's
// result, written with its id set) came to outcome with code. kind names
// the call (the action type), so that one query by kind finds the call's
// whole chain; the evidence is what rec rests on.
func ForRecord(rec blackboard.Record, kind string, outcome Outcome, code reason.Code) Entry {
	return Entry{
		ID: "decision:" + rec.ID, TraceID: rec.Provenance.TraceID, Subject: rec.ID, Kind: kind, Outcome: outcome, Code: code,
		EvidenceRefs: append([]string(nil), rec.Provenance.InputRefs...),
	}
}

// Follow encodes r as the entry the kernel appends with the kernel's role
// in trace r.TraceID: an evidence record of kind [Kind] that names its
// subject. Pass it to [kernel.Governor.Submit] or [kernel.Governor.Write]
// from their then function, or to [kernel.Governor.Append] ([Append]).
// It fails with [blackboard.ErrInvalidInput] when r has no kind, outcome or
// code, and with [blackboard.ErrInvalidPayload] when its context cannot be
// stored. The entry's payload shares r's lists and context (the kernel
// stores a copy of it): leave them unchanged until it is appended.
func (r Entry) Follow() (kernel.Follow, error) {
	if r.Kind == "" || r.Outcome == "" || r.Code == "" {
		return kernel.Follow{}, fmt.Errorf("%w: audit: a decision record needs a kind, an outcome and a code", blackboard.ErrInvalidInput)
	}
	traceID := r.TraceID
	r.Version = version
	// The holding record says these: they are not stored twice.
	r.TraceID, r.Namespace, r.TimeMS, r.RecordID = "", "", 0, ""
	payload, err := r.payload()
	if err != nil {
		return kernel.Follow{}, err
	}
	e := kernel.Entry{TraceID: traceID, Slot: blackboard.Evidence, Kind: Kind, Payload: payload}
	if r.Subject != "" {
		e.InputRefs = []string{r.Subject}
	}
	return kernel.Follow{Role: blackboard.RoleKernel, Entry: e}, nil
}

// Append writes r on its own through g, for a call refused before it
// reached the kernel's pipeline (a contract, a budget, an
// execution-time check), and returns it as written (with its ids and
// time). Its errors are those of [Entry.Follow] and
// [kernel.Governor.Append].
func Append(ctx context.Context, g *kernel.Governor, r Entry) (Entry, error) {
	f, err := r.Follow()
	if err != nil {
		return Entry{}, err
	}
	rec, err := g.Append(ctx, f)
	if err != nil {
		return Entry{}, err
	}
	// What Of would decode, without decoding it.
	r.Version, r.RecordID, r.TraceID, r.Namespace, r.TimeMS = version, rec.ID, rec.Provenance.TraceID, rec.Namespace, rec.Provenance.TimestampMS
	if r.ID == "" {
		r.ID = "decision:" + rec.ID
	}
	return r, nil
}

// Of decodes the decision record held by rec. ok is false unless rec is
// an evidence record of kind [Kind] written with the kernel's role (by
// the Governor: no handle can forge one) whose payload decodes.
func Of(rec blackboard.Record) (r Entry, ok bool) {
	if rec.Slot != blackboard.Evidence || rec.Kind != Kind || (!mutKernelOnly && rec.Provenance.Role != blackboard.RoleKernel) {
		return Entry{}, false
	}
	enc, err := json.Marshal(map[string]any(rec.Payload))
	if err == nil {
		err = json.Unmarshal(enc, &r)
	}
	if err != nil {
		return Entry{}, false
	}
	r.RecordID, r.TraceID, r.Namespace, r.TimeMS = rec.ID, rec.Provenance.TraceID, rec.Namespace, rec.Provenance.TimestampMS
	if r.ID == "" {
		r.ID = "decision:" + rec.ID
	}
	return r, true
}

// Query narrows [List]. A zero field matches everything.
type Query struct {
	// TraceID keeps the records of one trace (read through its index).
	TraceID string
	// Kind keeps the records of one action type or tool ([Entry.Kind]).
	Kind string
	// Tool keeps the records whose context names the tool (the tool gate
	// writes it under "tool"), so it finds a call's whole chain: refusal
	// or commit, result, escalation and its fallback.
	Tool string
	// Outcome keeps the records with that outcome.
	Outcome Outcome
}

// Match reports whether r passes the filter.
func (f Query) Match(r Entry) bool {
	return (f.TraceID == "" || r.TraceID == f.TraceID) && (f.Kind == "" || r.Kind == f.Kind) &&
		(f.Tool == "" || r.Context["tool"] == any(f.Tool)) && (f.Outcome == "" || r.Outcome == f.Outcome)
}

// List streams the decision records the reader sees that match f, in
// append order. With f.TraceID it reads that trace; without, every
// evidence record of the reader's namespace, so its cost grows with the
// history: it is for recovery and for people, not for a call's path.
func List(ctx context.Context, rd kernel.Reader, f Query) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		src := rd.List(ctx, blackboard.Evidence, store.Filter{})
		if f.TraceID != "" {
			src = rd.Trace(ctx, f.TraceID)
		}
		for rec, err := range src {
			if err != nil {
				yield(Entry{}, err)
				return
			}
			r, ok := Of(rec)
			if ok && f.Match(r) && !yield(r, nil) {
				return
			}
		}
	}
}

// About returns the decision record written in the same batch as the
// record subjectID, directly after it: the one that follows a decision's
// committed record (or its refused proposal), or a governed write's
// record. It reads that one record by id, so it costs the same at any
// length of the trace. The error wraps [blackboard.ErrNotFound] when the
// subject has no such decision record (a record written without one, a
// record of another namespace).
func About(ctx context.Context, rd kernel.Reader, subjectID string) (Entry, error) {
	notFound := func(why string) (Entry, error) {
		return Entry{}, fmt.Errorf("audit: decision about %s: %s: %w", subjectID, why, blackboard.ErrNotFound)
	}
	ns, traceID, idx, ok := store.SplitRecordID(subjectID)
	if !ok {
		return notFound("not a record id")
	}
	rec, err := rd.Get(ctx, store.RecordID(blackboard.Evidence, ns, traceID, idx+2))
	if err != nil {
		if errors.Is(err, blackboard.ErrNotFound) {
			return notFound("no decision record follows it")
		}
		return Entry{}, err
	}
	r, ok := Of(rec)
	if !ok {
		return notFound("no decision record follows it")
	}
	if r.Subject != subjectID || r.TraceID != traceID {
		return notFound("the decision record that follows it is about " + r.Subject)
	}
	return r, nil
}

// payload is r as the payload [Of] decodes: the fields under their JSON
// names, empty ones left out as the JSON tags say. Built by hand: a JSON
// round trip cost most of a tool call's allocations. The map is sized to
// its fields, string lists go in as they are (the kernel turns them into
// []any when it normalises the payload, which it does with every payload
// it is given) and the values the gate writes on every call are boxed
// once, in the package. Only a Context that holds values other than
// JSON's own (a struct, say) goes through JSON.
func (r Entry) payload() (blackboard.Payload, error) {
	n := 4 // version, kind, outcome, code
	for _, s := range [...]string{r.ID, r.RecordID, r.TraceID, r.Namespace, r.Subject, r.Rule, r.Failed, r.Detail} {
		if s != "" {
			n++
		}
	}
	for _, l := range [...]int{len(r.Causes), len(r.EvidenceRefs), len(r.Constraints), len(r.Approvals), len(r.Context)} {
		if l > 0 {
			n++
		}
	}
	if r.TimeMS != 0 {
		n++
	}
	p := make(blackboard.Payload, n)
	p["version"], p["kind"], p["outcome"], p["code"] = versionValue(r.Version), interned(r.Kind), outcomeValue(r.Outcome), interned(string(r.Code))
	put := func(m map[string]any, key, v string) {
		if v != "" {
			m[key] = v
		}
	}
	strs := func(key string, v []string) {
		if len(v) > 0 {
			p[key] = v
		}
	}
	put(p, "decision_id", r.ID)
	put(p, "record_id", r.RecordID)
	put(p, "trace_id", r.TraceID)
	put(p, "namespace", r.Namespace)
	if r.TimeMS != 0 {
		p["ts_ms"] = float64(r.TimeMS)
	}
	put(p, "subject", r.Subject)
	put(p, "rule", r.Rule)
	put(p, "failed", r.Failed)
	put(p, "detail", r.Detail)
	if len(r.Causes) > 0 {
		cs := make([]any, len(r.Causes))
		for i, c := range r.Causes {
			m := map[string]any{"code": string(c.Code)}
			put(m, "record", c.Record)
			put(m, "rule", c.Rule)
			put(m, "detail", c.Detail)
			cs[i] = m
		}
		p["causes"] = cs
	}
	strs("evidence_refs", r.EvidenceRefs)
	strs("constraints", r.Constraints)
	strs("approvals", r.Approvals)
	if len(r.Context) > 0 {
		if !plainJSON(map[string]any(r.Context)) {
			c, err := toPayload(r.Context)
			if err != nil {
				return nil, err
			}
			p["context"] = map[string]any(c)
		} else {
			p["context"] = map[string]any(r.Context)
		}
	}
	return p, nil
}

// internedCap bounds the strings [interned] keeps: the kinds and codes of
// one deployment are a few dozen; a flood of new ones (tool names a model
// makes up) fills the table and is then boxed per record, as before.
const internedCap = 512

var (
	internedMu  sync.Mutex                     // serialises additions
	internedTab atomic.Pointer[map[string]any] // read without a lock; replaced whole on each addition
)

// interned is s as a payload value, boxed once per distinct string: the
// kind and code of a record repeat on every call of a tool, and boxing
// them anew cost two allocations a record. Safe for concurrent use.
func interned(s string) any {
	if t := internedTab.Load(); t != nil {
		if v, ok := (*t)[s]; ok {
			return v
		}
	}
	internedMu.Lock()
	defer internedMu.Unlock()
	old := internedTab.Load()
	if old != nil {
		if v, ok := (*old)[s]; ok {
			return v
		}
		if len(*old) >= internedCap {
			return s
		}
	}
	var v any = s
	t := make(map[string]any, 1)
	if old != nil {
		t = maps.Clone(*old)
	}
	t[s] = v
	internedTab.Store(&t)
	return v
}

// versionBoxed is version as a payload holds it, boxed once.
var versionBoxed any = float64(version)

// versionValue is a version as a payload holds it: a float64, boxed
// without an allocation when it is version (every record written).
func versionValue(v int) any {
	if v == version {
		return versionBoxed
	}
	return float64(v)
}

// outcomeValue is an outcome as a payload holds it: a string, boxed
// without an allocation when it is one of the constants.
func outcomeValue(o Outcome) any {
	switch o {
	case OutcomeCommitted:
		return string(OutcomeCommitted)
	case OutcomeRefused:
		return string(OutcomeRefused)
	case OutcomePendingApproval:
		return string(OutcomePendingApproval)
	case OutcomeExecuted:
		return string(OutcomeExecuted)
	case OutcomeFailed:
		return string(OutcomeFailed)
	case OutcomeEscalated:
		return string(OutcomeEscalated)
	}
	return string(o)
}

// plainJSON reports whether v holds only the values a JSON decoder makes
// (and the Go numbers and string slices the kernel normalises itself).
func plainJSON(v any) bool {
	switch v := v.(type) {
	case nil, string, bool, float64, float32, int, int64, int32, uint, uint64, uint32, []string:
		return true
	case map[string]any:
		for _, x := range v {
			if !plainJSON(x) {
				return false
			}
		}
		return true
	case blackboard.Payload:
		return plainJSON(map[string]any(v))
	case []any:
		for _, x := range v {
			if !plainJSON(x) {
				return false
			}
		}
		return true
	}
	return false
}

// toPayload turns a struct into a payload through JSON.
func toPayload(v any) (blackboard.Payload, error) {
	enc, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: audit: %v", blackboard.ErrInvalidPayload, err)
	}
	var p blackboard.Payload
	if err := json.Unmarshal(enc, &p); err != nil {
		return nil, fmt.Errorf("%w: audit: %v", blackboard.ErrInvalidPayload, err)
	}
	return p, nil
}

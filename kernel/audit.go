package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// Decision records are the audit log of governed calls: one per executed,
// refused or escalated call, written by the kernel in the same store batch
// as the state change it records, so that no audit entry can be lost to a
// crash between the two.
const (
	// KindDecisionRecord is the evidence kind that holds a decision record.
	KindDecisionRecord = "decision_record"
	// DecisionRecordVersion is the version of [DecisionRecord]'s shape.
	DecisionRecordVersion = 1
)

// Outcome says what a governed call came to.
type Outcome string

// The outcomes a decision record carries.
const (
	OutcomeCommitted       Outcome = "committed"        // the kernel committed the proposal
	OutcomeRefused         Outcome = "refused"          // the kernel, a role contract or a budget refused it
	OutcomePendingApproval Outcome = "pending_approval" // committed, waiting for an approver
	OutcomeExecuted        Outcome = "executed"         // the effect ran and succeeded
	OutcomeFailed          Outcome = "failed"           // the effect ran and failed for good
	OutcomeEscalated       Outcome = "escalated"        // handed to a person (a denial, an expiry, a failure)
)

// DecisionRecord is one entry of the audit log, in a versioned shape. The
// kernel fills what it decided (code, rule, failed record, causes,
// evidence, constraints in force); the caller adds the call itself
// (Context: the tool, its arguments, the framework's call id, the budget).
type DecisionRecord struct {
	Version int `json:"version"`
	// ID is the decision's id; RecordID the evidence record holding it.
	ID        string `json:"decision_id"`
	RecordID  string `json:"record_id,omitempty"`
	TraceID   string `json:"trace_id"`
	Namespace string `json:"namespace,omitempty"`
	TimeMS    int64  `json:"ts_ms"`
	// Subject is the record the decision is about: the proposal decided,
	// or the record a governed write stored (an effect's result).
	Subject string  `json:"subject,omitempty"`
	Kind    string  `json:"kind"` // the action type or tool
	Outcome Outcome `json:"outcome"`
	Code    Code    `json:"code"`
	Rule    string  `json:"rule,omitempty"`
	Failed  string  `json:"failed,omitempty"`
	Detail  string  `json:"detail,omitempty"`
	Causes  []Cause `json:"causes,omitempty"`
	// EvidenceRefs is the chain that explains the decision.
	EvidenceRefs []string `json:"evidence_refs,omitempty"`
	// Constraints names the constraints in force when it was decided.
	Constraints []string `json:"constraints,omitempty"`
	Approvals   []string `json:"approvals,omitempty"`
	Context     Payload  `json:"context,omitempty"`
}

// Audit asks the kernel to write a decision record with a submit or a
// write (see [Entry.Audit]).
type Audit struct {
	// Outcome and Code describe a write (an effect's result); for a
	// submit the kernel sets them from its decision (Outcome committed
	// becomes PendingApproval when the caller says so).
	Outcome Outcome
	Code    Code
	// PendingApproval marks a committed action that waits for approval.
	PendingApproval bool
	// Kind, for a write, is the decision record's kind when it is not the
	// written record's own: an executor recording an effect's result as a
	// percept names the action type, so that one query by kind finds the
	// call's whole chain. A submit's record always has the proposal's kind.
	Kind      string
	Approvals []string
	Context   Payload
}

// DecisionFilter narrows [Kernel.DecisionRecords]. A zero field matches
// everything.
type DecisionFilter struct {
	TraceID string
	Kind    string
	Outcome Outcome
}

func (f DecisionFilter) match(d *DecisionRecord) bool {
	return (f.TraceID == "" || d.TraceID == f.TraceID) && (f.Kind == "" || d.Kind == f.Kind) &&
		(f.Outcome == "" || d.Outcome == f.Outcome)
}

// auditRecord builds the evidence record that holds d, written by the
// kernel in trace s at position index (from 0) of the batch's new ids.
func (s *snapshot) auditRecord(d *DecisionRecord, index int, refs []string) (Record, error) {
	return s.k.auditRecord(d, s.traceID, s.n+1+index, s.nowMS, s.span, refs)
}

// auditRecord builds the evidence record that holds d as the n-th record
// of its trace.
func (k *Kernel) auditRecord(d *DecisionRecord, traceID string, n int, nowMS int64, span string, refs []string) (Record, error) {
	d.Version = DecisionRecordVersion
	d.TraceID, d.Namespace, d.TimeMS = traceID, k.namespace, nowMS
	id := recordID(Evidence, traceID, n)
	d.RecordID = id
	if d.ID == "" {
		d.ID = "decision:" + id
	}
	payload, err := toPayload(d)
	if err != nil {
		return Record{}, err
	}
	return Record{
		ID: id, Slot: Evidence, Mode: ModeCommit, Kind: KindDecisionRecord, Payload: payload,
		Provenance: Provenance{Role: RoleKernel, Writer: RoleKernel.String(), TraceID: traceID, TimestampMS: nowMS,
			InputRefs: refs, Span: span},
		Status: StatusActive, Reason: CodeCommitted, Scope: ScopeEpisode, Namespace: k.namespace,
	}, nil
}

// toPayload turns a struct into a normalised payload through JSON.
func toPayload(v any) (Payload, error) {
	enc, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidPayload, err)
	}
	var p Payload
	if err := json.Unmarshal(enc, &p); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidPayload, err)
	}
	return normalizePayload(p, DefaultMaxPayloadBytes)
}

// decisionRecordOf decodes a decision record from its evidence record.
func decisionRecordOf(r *Record) (DecisionRecord, error) {
	var d DecisionRecord
	enc, err := json.Marshal(map[string]any(r.Payload))
	if err == nil {
		err = json.Unmarshal(enc, &d)
	}
	if err != nil {
		return DecisionRecord{}, fmt.Errorf("kernel: decision record %s: %w", r.ID, err)
	}
	d.RecordID = r.ID
	return d, nil
}

// constraintNames lists the names of the constraints in force.
func (s *snapshot) constraintNames() []string {
	cons := s.constraints()
	if len(cons) == 0 {
		return nil
	}
	out := make([]string, len(cons))
	for i, c := range cons {
		out[i] = c.name
	}
	return out
}

// RecordDecision writes a decision record on its own, for a call that was
// refused before it reached the kernel's pipeline (a role contract, a
// budget). d.TraceID names the trace; the kernel sets the version, time,
// namespace and ids. It is meant for the owner's governance code (the
// tool-call gate), not for planners.
func (k *Kernel) RecordDecision(ctx context.Context, d DecisionRecord) (out DecisionRecord, err error) {
	ctx, sp := k.span(ctx, "kernel.record_decision", d.TraceID, Evidence)
	var start time.Time
	if k.metricsOn(ctx) {
		start = time.Now()
	}
	defer func() {
		if err != nil {
			endSpan(sp, "", err)
			return
		}
		if sp != nil {
			sp.SetAttributes(attribute.String(AttrKind, d.Kind), attribute.String(AttrOutcome, string(d.Outcome)),
				attribute.String(AttrRecordID, out.RecordID), attribute.String(AttrRole, RoleKernel.String()))
		}
		// A decision made before the kernel's pipeline (a role contract, a
		// budget) counts with the kernel's own.
		k.decided(ctx, nil, start, RoleKernel, RoleKernel.String(), d.Kind, Actions,
			&Decision{ID: out.ID, Code: d.Code, ProposalID: out.RecordID, Rule: d.Rule, Detail: d.Detail}, nil)
		code := d.Code
		if d.Outcome != OutcomeRefused && d.Outcome != OutcomeFailed {
			code = "" // the status marks refusals and failures only
		}
		if sp != nil && code != "" {
			sp.SetAttributes(attribute.String(AttrCode, string(d.Code)))
		}
		endSpan(sp, code, nil)
	}()
	if err := checkName("trace id", d.TraceID); err != nil {
		return DecisionRecord{}, newErr("record decision", "", CodeInvalidInput, ErrInvalidInput, err.Error())
	}
	if d.Outcome == "" || d.Code == "" || d.Kind == "" {
		return DecisionRecord{}, newErr("record decision", "", CodeInvalidInput, ErrInvalidInput, "a decision record needs a kind, an outcome and a code")
	}
	for attempt := 0; attempt < maxAttempts; attempt++ {
		snap, err := k.load(ctx, d.TraceID, false)
		if err != nil {
			return DecisionRecord{}, err
		}
		rec, err := snap.auditRecord(&d, 0, nil)
		if err == nil {
			err = snap.apply(ctx, Batch{Appends: []Record{rec}})
		}
		snap.release()
		if raced(err) {
			d.ID, d.RecordID = "", ""
			continue
		}
		if err != nil {
			return DecisionRecord{}, err
		}
		return d, nil
	}
	return DecisionRecord{}, newErr("record decision", "", "", ErrConflict, "too much contention on the trace")
}

// auditDecision builds the decision record of a decision, as the
// batch's index-th new record.
func (s *snapshot) auditDecision(a *Audit, p *Record, out *outcome, index int) (Record, error) {
	d := DecisionRecord{
		ID: "decision:" + p.ID, Subject: p.ID, Kind: p.Kind, Outcome: OutcomeRefused, Code: out.code,
		Rule: out.rule, Failed: out.failed, Detail: out.detail, Causes: out.causes, Constraints: s.constraintNames(),
		Approvals: a.Approvals, Context: a.Context,
	}
	if out.code.OK() {
		d.Outcome, d.Subject = OutcomeCommitted, out.record.ID
		if a.PendingApproval {
			d.Outcome = OutcomePendingApproval
		}
		d.EvidenceRefs = append(append([]string(nil), out.record.Provenance.InputRefs...), out.record.EvidenceRefs...)
	} else {
		if out.failed != "" {
			d.EvidenceRefs = append(d.EvidenceRefs, out.failed)
		}
		for _, c := range out.causes {
			if c.Record != "" && c.Record != out.failed {
				d.EvidenceRefs = append(d.EvidenceRefs, c.Record)
			}
		}
	}
	return s.auditRecord(&d, index, []string{d.Subject})
}

// DecisionAbout returns the decision record the kernel wrote in the same
// batch as the record subjectID: the one a [Governor.Submit] with an
// [Entry.Audit] wrote about the record it committed (or the proposal it
// refused), or the one a [Governor.Write] wrote about the record it
// stored. Such a decision record directly follows its subject in the
// trace, so DecisionAbout reads that one record by id and costs the same
// at any length of the trace. It is [ErrNotFound] when the subject has no
// such decision record (a record written without an Audit, a record
// [Kernel.RecordDecision] is about, a record of another namespace).
func (k *Kernel) DecisionAbout(ctx context.Context, subjectID string) (DecisionRecord, error) {
	notFound := func(why string) (DecisionRecord, error) {
		return DecisionRecord{}, newErr("decision about", subjectID, "", ErrNotFound, why)
	}
	traceID, n, ok := splitRecordID(subjectID)
	if !ok {
		return notFound("not a record id")
	}
	r, err := k.store.Get(ctx, recordID(Evidence, traceID, n+1))
	if errors.Is(err, ErrNotFound) {
		return notFound("no decision record follows it")
	}
	if err != nil {
		return DecisionRecord{}, err
	}
	if r.Kind != KindDecisionRecord || r.Provenance.Role != RoleKernel || r.Namespace != k.namespace {
		return notFound("no decision record follows it")
	}
	d, err := decisionRecordOf(&r)
	if err != nil {
		return DecisionRecord{}, err
	}
	if d.Subject != subjectID || d.TraceID != traceID {
		return notFound("the decision record that follows it is about " + d.Subject)
	}
	return d, nil
}

// splitRecordID returns the trace and the position in it of a record id
// the kernel made ([recordID]).
func splitRecordID(id string) (traceID string, n int, ok bool) {
	slot, rest, ok := strings.Cut(id, ":")
	if !ok {
		return "", 0, false
	}
	if _, err := ParseSlot(slot); err != nil {
		return "", 0, false
	}
	i := strings.LastIndexByte(rest, ':')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(rest[i+1:])
	if err != nil || n < 1 {
		return "", 0, false
	}
	return rest[:i], n, true
}

// DecisionRecords streams the decision records of the kernel's namespace
// that match f, in append order. With f.TraceID it reads that trace
// through its index; without, it reads the evidence slot.
func (k *Kernel) DecisionRecords(ctx context.Context, f DecisionFilter) iter.Seq2[DecisionRecord, error] {
	return func(yield func(DecisionRecord, error) bool) {
		src := k.store.ListSlot(ctx, Evidence, Filter{Namespace: k.namespace})
		if f.TraceID != "" {
			src = k.store.ListTrace(ctx, f.TraceID)
		}
		for r, err := range src {
			if err != nil {
				yield(DecisionRecord{}, err)
				return
			}
			if r.Slot != Evidence || r.Kind != KindDecisionRecord || r.Provenance.Role != RoleKernel || r.Namespace != k.namespace {
				continue
			}
			d, err := decisionRecordOf(&r)
			if err != nil {
				yield(DecisionRecord{}, err)
				return
			}
			if f.match(&d) && !yield(d, nil) {
				return
			}
		}
	}
}

package audit

import (
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/internal/jsonval"
	"github.com/blackboardkernel/bk/reason"
)

// KeyEffect is the payload key under which the tool-call gate (package
// toolgate) keeps its [Effect] in the percepts it writes. A successful result's other keys are the
// effect's output, at the top level, so that beliefs, rules, constraints
// and once-keys read them as they read any percept (percepts.order.amount,
// a "stale" flag from the source). An output may not use this key.
const KeyEffect = "effect"

// Status values of an [Effect].
const (
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusEscalated = "escalated"
	StatusRefused   = "refused"
	StatusAttempted = "attempted"
)

// Effect is the tool-call gate's own account of an effect, stored under
// [KeyEffect] in each percept the gate writes about one: an attempt, a
// result (the tool's result kind), a failure or a refusal for good and an
// escalation (toolgate's KindAttempt, KindFailed and KindEscalated). The
// gate writes it with its one encoder, [Effect.Encode], and reads it with
// [EffectOf], and so do the inspector's timelines, explanations and effect
// lists: its layout is defined here alone. A value; safe to share.
type Effect struct {
	// Status is one of StatusAttempted, StatusSucceeded, StatusFailed,
	// StatusRefused and StatusEscalated.
	Status string
	// Tool is the tool's name, ActionID the committed action the effect
	// is for, and Key its idempotency key (toolgate's Invocation.Key).
	Tool, ActionID, Key string
	// Attempt numbers the attempt from 1; 0 on a refusal for good or an
	// escalation, which are written before any attempt.
	Attempt int
	// Code is a result's code (EFFECT_SUCCEEDED, RETRIES_EXHAUSTED,
	// APPROVAL_DENIED, ...); empty on an attempt.
	Code reason.Code
	// Approval is the approval the action runs under; on an escalation,
	// the denial or the approval that expired.
	Approval string
	// Approver and Note are an escalation's: who denied, and the note.
	Approver, Note string
	// Error is the message of a failure or a refusal for good: the
	// gate's own words, or of an effect's error what may be stored (its
	// kind, or the masked text of a toolgate.Recordable one), never the raw
	// text of an effect's error or panic.
	Error string
	// ExecutionStatus, Category and Retryable are a failure's typed
	// signal ([failure.Failure]), when the effect's error carried one;
	// ExecutionStatus is empty otherwise.
	ExecutionStatus failure.ExecStatus
	Category        failure.Category
	Retryable       bool
	// LeaseUntilMS is an attempt's deadline (Unix milliseconds, the
	// kernel's clock): no other driver takes the action over before it.
	LeaseUntilMS int64
	// PreviousError is, on a retry, the error of the attempt before, as
	// Error holds one.
	PreviousError string
}

// The fields of an Effect under KeyEffect. Failure keys are the failure
// package's, so that a reader of the payload sees the typed signal under
// the names a worker reads.
const (
	fieldStatus        = "status"
	fieldTool          = "tool"
	fieldActionID      = "action_id"
	fieldKey           = "key"
	fieldAttempt       = "attempt"
	fieldCode          = "code"
	fieldApproval      = "approval"
	fieldApprover      = "approver"
	fieldNote          = "note"
	fieldError         = "error"
	fieldExecStatus    = "execution_status"
	fieldCategory      = "category"
	fieldRetryable     = "retryable"
	fieldLeaseUntilMS  = "lease_until_ms"
	fieldPreviousError = "previous_error"
)

// Encode is the one encoder of an Effect: the object stored under
// [KeyEffect] (the gate puts it there beside a result's output). Empty
// fields are left out. The status, tool and code are boxed once per
// distinct string, so that writing an effect allocates little.
func (e Effect) Encode() map[string]any {
	m := make(map[string]any, 8)
	m[fieldStatus], m[fieldTool], m[fieldActionID], m[fieldKey] = interned(e.Status), interned(e.Tool), e.ActionID, e.Key
	if e.Attempt > 0 {
		m[fieldAttempt] = countValue(e.Attempt)
	}
	put := func(field, v string) {
		if v != "" {
			m[field] = v
		}
	}
	if e.Code != "" {
		m[fieldCode] = interned(string(e.Code))
	}
	put(fieldApproval, e.Approval)
	put(fieldApprover, e.Approver)
	put(fieldNote, e.Note)
	put(fieldError, e.Error)
	put(fieldPreviousError, e.PreviousError)
	if e.ExecutionStatus != "" {
		m[fieldExecStatus], m[fieldCategory], m[fieldRetryable] = string(e.ExecutionStatus), string(e.Category), e.Retryable
	}
	if e.LeaseUntilMS != 0 {
		m[fieldLeaseUntilMS] = float64(e.LeaseUntilMS) // as the kernel stores it: no second box
	}
	return m
}

// counts are the first attempt numbers as a stored payload holds them
// (float64), boxed once: the kernel turns an int into a float64 and would
// box it anew.
var counts = func() (c [9]any) {
	for i := range c {
		c[i] = float64(i)
	}
	return c
}()

// countValue is n as a payload value, a float64, boxed without an
// allocation when it is small.
func countValue(n int) any {
	if n >= 0 && n < len(counts) {
		return counts[n]
	}
	return float64(n)
}

// toolWriter is the writer id under which the gate writes a tool's
// attempts and results (toolgate's toolWriter is the same rule).
func toolWriter(tool string) string { return "tool:" + tool }

// EffectOf is the one decoder of an [Effect]: it returns the effect a
// percept the gate wrote records, and false for any other record. A record
// is taken for the gate's only when it is a percept written with the tool
// role under the gate's writer id for the tool it names ("tool:" +
// Effect.Tool), with a known status and an action id. An object under
// [KeyEffect] in a percept another writer stored is an ordinary
// observation, so a tool cannot pass off a result of another tool, or of
// an action that never ran, as the gate's. Writer ids are the kernel
// owner's to hand out: a tool handle given the id "tool:NAME" writes as
// the gate does for NAME. Safe for concurrent use.
func EffectOf(r blackboard.Record) (Effect, bool) {
	m, ok := r.Payload[KeyEffect].(map[string]any)
	if !ok || r.Slot != blackboard.Percepts || r.Provenance.Role != blackboard.RoleTool {
		return Effect{}, false
	}
	str := func(field string) string {
		s, _ := m[field].(string)
		return s
	}
	e := Effect{Status: str(fieldStatus), Tool: str(fieldTool), ActionID: str(fieldActionID), Key: str(fieldKey),
		Code: reason.Code(str(fieldCode)), Approval: str(fieldApproval), Approver: str(fieldApprover), Note: str(fieldNote),
		Error: str(fieldError), PreviousError: str(fieldPreviousError),
		ExecutionStatus: failure.ExecStatus(str(fieldExecStatus)), Category: failure.Category(str(fieldCategory))}
	switch e.Status {
	case StatusAttempted, StatusSucceeded, StatusFailed, StatusRefused, StatusEscalated:
	default:
		return Effect{}, false
	}
	if e.Tool == "" || e.ActionID == "" || r.Provenance.Writer != toolWriter(e.Tool) {
		return Effect{}, false
	}
	if n, ok := jsonval.Float(m[fieldAttempt]); ok {
		e.Attempt = int(n)
	}
	if n, ok := jsonval.Float(m[fieldLeaseUntilMS]); ok {
		e.LeaseUntilMS = int64(n)
	}
	e.Retryable, _ = m[fieldRetryable].(bool)
	return e, true
}

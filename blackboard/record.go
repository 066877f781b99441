package blackboard

import (
	"github.com/blackboardkernel/bk/reason"
)

// Slot is one of the seven typed regions of the blackboard (paper Table 1).
// Its value is the slot's name, as records, stores and rules spell it. The
// zero value "" is not a valid slot.
type Slot string

// The seven slots.
const (
	Percepts    Slot = "percepts"    // raw observations, committed by tools
	Beliefs     Slot = "beliefs"     // interpreted state, proposed by planners, committed by the kernel
	Constraints Slot = "constraints" // invariants, committed by symbolic validators
	Plans       Slot = "plans"       // intended action sequences, validated by the kernel
	Evidence    Slot = "evidence"    // justification artifacts
	Predictions Slot = "predictions" // forward dynamics, proposed by planners and simulators
	Actions     Slot = "actions"     // external effects, committed only by the kernel
)

// AllSlots returns the seven slots in the paper's table order.
func AllSlots() []Slot {
	return []Slot{Percepts, Beliefs, Constraints, Plans, Evidence, Predictions, Actions}
}

// Valid reports whether s names one of the seven slots. Decoding does not
// check (a Slot is a string), so a store or reader checks what it reads.
func (s Slot) Valid() bool {
	switch s {
	case Percepts, Beliefs, Constraints, Plans, Evidence, Predictions, Actions:
		return true
	}
	return false
}

// Mode says whether a record is a proposal awaiting the kernel's decision or
// a committed fact. The zero value "" is not a valid mode.
type Mode string

// The two modes.
const (
	ModePropose Mode = "propose"
	ModeCommit  Mode = "commit"
)

// Valid reports whether m is ModePropose or ModeCommit.
func (m Mode) Valid() bool {
	return m == ModePropose || m == ModeCommit
}

// Status is the life-cycle state of a record. It only ever moves from
// StatusActive to StatusInvalidated or StatusExpired. The zero value "" is
// not a valid status.
type Status string

// The three statuses.
const (
	StatusActive      Status = "ACTIVE"
	StatusInvalidated Status = "INVALIDATED"
	StatusExpired     Status = "EXPIRED"
)

// Scope says how long a record matters: for its own episode (trace) only, or
// across episodes, as learned constraints do. The zero value "" is not a
// valid scope.
type Scope string

// The two scopes. In a kernel entry (kernel.Entry) the zero value means ScopeEpisode.
const (
	ScopeEpisode    Scope = "episode"
	ScopePersistent Scope = "persistent"
)

// Valid reports whether sc is ScopeEpisode or ScopePersistent.
func (sc Scope) Valid() bool {
	return sc == ScopeEpisode || sc == ScopePersistent
}

// Role is the authority a handle acts with (paper §6.1). Callers never hold
// RoleKernel: only the kernel itself writes with it. The zero value "" is
// not a valid role.
type Role string

// The roles.
const (
	RoleKernel    Role = "kernel"
	RoleTool      Role = "tool"
	RolePlanner   Role = "planner"
	RoleSymbolic  Role = "symbolic_validator"
	RoleEvidence  Role = "evidence_validator"
	RoleSimulator Role = "simulator"
	// RoleApprover decides approvals of committed actions: it writes
	// evidence (approval records), which the tool gate writes on a
	// verified approver's behalf through the kernel's governor (kernel.Governor); no handle has it.
	RoleApprover Role = "approver"
)

// Valid reports whether r is a known role.
func (r Role) Valid() bool {
	switch r {
	case RoleKernel, RoleTool, RolePlanner, RoleSymbolic, RoleEvidence, RoleSimulator, RoleApprover:
		return true
	}
	return false
}

// Provenance says who wrote a record, when, for which trace and from what.
type Provenance struct {
	Role        Role     `json:"role"`
	Writer      string   `json:"writer_id"`
	TraceID     string   `json:"trace_id"`
	TimestampMS int64    `json:"ts_ms"`
	InputRefs   []string `json:"input_refs,omitempty"`
	// Confidence is nil when the source gave none; a nil confidence passes
	// the confidence gate (unknown is not low).
	Confidence *float64 `json:"confidence,omitempty"`
	// TTLMS is the record's time to live in milliseconds; 0 means it never
	// expires.
	TTLMS int64 `json:"ttl_ms,omitempty"`
	// Span is the OpenTelemetry span the record was written under, as a
	// W3C traceparent ("00-<trace id>-<span id>-<flags>"); empty when the
	// write was not traced. A decision's span links to the spans of the
	// percepts its evidence rests on through it.
	Span string `json:"span,omitempty"`
}

// Record is one entry on the  Records are append-only: a store
// never overwrites one, and Status (with Reason) is the only thing that ever
// changes after it is written.
type Record struct {
	// ID is "{slot}:{trace_id}:{n}".
	ID           string     `json:"id"`
	Slot         Slot       `json:"slot"`
	Mode         Mode       `json:"mode"`
	Kind         string     `json:"kind"`
	Payload      Payload    `json:"payload"`
	Provenance   Provenance `json:"provenance"`
	EvidenceRefs []string   `json:"evidence_refs,omitempty"`
	Status       Status     `json:"status"`
	// Reason is the typed code of the last decision about the record:
	// COMMITTED or PLAN_FEASIBLE for committed records, the rejection code
	// for invalidated ones, empty for a pending proposal.
	Reason reason.Code `json:"reason,omitempty"`
	Scope  Scope       `json:"scope"`
	// Namespace is the application the record belongs to (see
	// kernel.Config.Namespace). Stores keep an empty namespace as
	// [DefaultNamespace].
	Namespace string `json:"namespace,omitempty"`
}

// Clone returns a deep copy of r that shares no mutable memory with it.
func (r Record) Clone() Record {
	r.Payload = r.Payload.Clone()
	r.Provenance.InputRefs, r.EvidenceRefs = cloneRefs(r.Provenance.InputRefs, r.EvidenceRefs)
	if c := r.Provenance.Confidence; c != nil {
		v := *c
		r.Provenance.Confidence = &v
	}
	return r
}

// cloneRefs copies two lists of ids into one allocation. Each copy is
// capped at its length, so appending to one never writes into the other.
func cloneRefs(a, b []string) ([]string, []string) {
	if a == nil || b == nil {
		return cloneStrings(a), cloneStrings(b)
	}
	buf := make([]string, len(a)+len(b))
	copy(buf, a)
	copy(buf[len(a):], b)
	return buf[:len(a):len(a)], buf[len(a):]
}

func cloneStrings(s []string) []string {
	if s == nil {
		return nil
	}
	return append(make([]string, 0, len(s)), s...)
}

// ExpiredAt reports whether the record's time to live has run out at
// nowMS (Unix milliseconds). Its status is not consulted: a record is
// expired when this holds or its status is [StatusExpired].
func (r *Record) ExpiredAt(nowMS int64) bool {
	return r.Provenance.TTLMS > 0 && nowMS > r.Provenance.TimestampMS+r.Provenance.TTLMS
}

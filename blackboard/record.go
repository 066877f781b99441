package blackboard

import (
	"fmt"
	"time"

	"github.com/blackboardkernel/bk/reason"
)

// Slot is one of the seven typed regions of the blackboard (paper Table 1).
// The zero value is not a valid slot.
type Slot uint8

// The seven slots.
const (
	Percepts    Slot = iota + 1 // raw observations, committed by tools
	Beliefs                     // interpreted state, proposed by planners, committed by the kernel
	Constraints                 // invariants, committed by symbolic validators
	Plans                       // intended action sequences, validated by the kernel
	Evidence                    // justification artifacts
	Predictions                 // forward dynamics, proposed by planners and simulators
	Actions                     // external effects, committed only by the kernel
)

var slotNames = [...]string{"", "percepts", "beliefs", "constraints", "plans", "evidence", "predictions", "actions"}

// AllSlots returns the seven slots in the paper's table order.
func AllSlots() []Slot {
	return []Slot{Percepts, Beliefs, Constraints, Plans, Evidence, Predictions, Actions}
}

// Valid reports whether s names one of the seven slots.
func (s Slot) Valid() bool { return s >= Percepts && s <= Actions }

func (s Slot) String() string {
	if s.Valid() {
		return slotNames[s]
	}
	return fmt.Sprintf("Slot(%d)", uint8(s))
}

// MarshalText encodes the slot by name.
func (s Slot) MarshalText() ([]byte, error) {
	if !s.Valid() {
		return nil, fmt.Errorf("%w: slot %d", ErrInvalidInput, uint8(s))
	}
	return []byte(slotNames[s]), nil
}

// UnmarshalText decodes a slot name.
func (s *Slot) UnmarshalText(b []byte) error {
	v, err := parseSlot(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// parseSlot returns the slot with the given name, or an error wrapping
// [ErrInvalidInput].
func parseSlot(name string) (Slot, error) {
	for i := Percepts; i <= Actions; i++ {
		if slotNames[i] == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown slot %q", ErrInvalidInput, name)
}

// Mode says whether a record is a proposal awaiting the kernel's decision or
// a committed fact.
type Mode uint8

// The two modes.
const (
	ModePropose Mode = iota + 1
	ModeCommit
)

var modeNames = [...]string{"", "propose", "commit"}

// Valid reports whether m is ModePropose or ModeCommit.
func (m Mode) Valid() bool {
	return m == ModePropose || m == ModeCommit
}

func (m Mode) String() string {
	if m.Valid() {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// MarshalText encodes the mode by name.
func (m Mode) MarshalText() ([]byte, error) {
	if !m.Valid() {
		return nil, fmt.Errorf("%w: mode %d", ErrInvalidInput, uint8(m))
	}
	return []byte(modeNames[m]), nil
}

// UnmarshalText decodes a mode name.
func (m *Mode) UnmarshalText(b []byte) error {
	for i := ModePropose; i <= ModeCommit; i++ {
		if modeNames[i] == string(b) {
			*m = i
			return nil
		}
	}
	return fmt.Errorf("%w: unknown mode %q", ErrInvalidInput, b)
}

// Status is the life-cycle state of a record. It only ever moves from
// StatusActive to StatusInvalidated or StatusExpired.
type Status uint8

// The three statuses.
const (
	StatusActive Status = iota + 1
	StatusInvalidated
	StatusExpired
)

var statusNames = [...]string{"", "ACTIVE", "INVALIDATED", "EXPIRED"}

// Valid reports whether st is one of the three statuses.
func (st Status) valid() bool {
	return st >= StatusActive && st <= StatusExpired
}

func (st Status) String() string {
	if st.valid() {
		return statusNames[st]
	}
	return fmt.Sprintf("Status(%d)", uint8(st))
}

// MarshalText encodes the status by name.
func (st Status) MarshalText() ([]byte, error) {
	if !st.valid() {
		return nil, fmt.Errorf("%w: status %d", ErrInvalidInput, uint8(st))
	}
	return []byte(statusNames[st]), nil
}

// UnmarshalText decodes a status name.
func (st *Status) UnmarshalText(b []byte) error {
	for i := StatusActive; i <= StatusExpired; i++ {
		if statusNames[i] == string(b) {
			*st = i
			return nil
		}
	}
	return fmt.Errorf("%w: unknown status %q", ErrInvalidInput, b)
}

// Scope says how long a record matters: for its own episode (trace) only, or
// across episodes, as learned constraints do.
type Scope uint8

// The two scopes. In a kernel entry (kernel.Entry) the zero value means ScopeEpisode.
const (
	ScopeEpisode Scope = iota + 1
	ScopePersistent
)

var scopeNames = [...]string{"", "episode", "persistent"}

// Valid reports whether sc is ScopeEpisode or ScopePersistent.
func (sc Scope) Valid() bool {
	return sc == ScopeEpisode || sc == ScopePersistent
}

func (sc Scope) String() string {
	if sc.Valid() {
		return scopeNames[sc]
	}
	return fmt.Sprintf("Scope(%d)", uint8(sc))
}

// MarshalText encodes the scope by name.
func (sc Scope) MarshalText() ([]byte, error) {
	if !sc.Valid() {
		return nil, fmt.Errorf("%w: scope %d", ErrInvalidInput, uint8(sc))
	}
	return []byte(scopeNames[sc]), nil
}

// UnmarshalText decodes a scope name.
func (sc *Scope) UnmarshalText(b []byte) error {
	for i := ScopeEpisode; i <= ScopePersistent; i++ {
		if scopeNames[i] == string(b) {
			*sc = i
			return nil
		}
	}
	return fmt.Errorf("%w: unknown scope %q", ErrInvalidInput, b)
}

// Role is the authority a handle acts with (paper §6.1). Callers never hold
// RoleKernel: only the kernel itself writes with it.
type Role uint8

// The roles.
const (
	RoleKernel Role = iota + 1
	RoleTool
	RolePlanner
	RoleSymbolic
	RoleEvidence
	RoleSimulator
	// RoleApprover decides approvals of committed actions: it writes
	// evidence (approval records), which the tool gate writes on a
	// verified approver's behalf through the kernel's governor (kernel.Governor); no handle has it.
	RoleApprover
)

var roleNames = [...]string{"", "kernel", "tool", "planner", "symbolic_validator", "evidence_validator", "simulator", "approver"}

// Valid reports whether r is a known role.
func (r Role) Valid() bool {
	return r >= RoleKernel && r <= RoleApprover
}

func (r Role) String() string {
	if r.Valid() {
		return roleNames[r]
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// MarshalText encodes the role by name.
func (r Role) MarshalText() ([]byte, error) {
	if !r.Valid() {
		return nil, fmt.Errorf("%w: role %d", ErrInvalidInput, uint8(r))
	}
	return []byte(roleNames[r]), nil
}

// UnmarshalText decodes a role name.
func (r *Role) UnmarshalText(b []byte) error {
	for i := RoleKernel; i <= RoleApprover; i++ {
		if roleNames[i] == string(b) {
			*r = i
			return nil
		}
	}
	return fmt.Errorf("%w: unknown role %q", ErrInvalidInput, b)
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
// nowMS (Unix milliseconds). Its status is not consulted.
func (r *Record) ExpiredAt(nowMS int64) bool {
	return r.Provenance.TTLMS > 0 && nowMS > r.Provenance.TimestampMS+r.Provenance.TTLMS
}

// Expired reports whether r's time to live has run out at now.
func (r Record) Expired(now time.Time) bool {
	return r.Status == StatusExpired || r.ExpiredAt(now.UnixMilli())
}

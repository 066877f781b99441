package kernel

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/kernelhook"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// Paper defaults (docs/reproduction.md).
const (
	defaultMinConfidence     = 0.5
	defaultMaxPayloadBytes   = 1 << 20
	defaultConflictThreshold = 0.7
	// FallbackQueueForReview is the safe fallback registered by default.
	FallbackQueueForReview = "queue_for_review"
)

// maxAttempts bounds the optimistic retry loop when concurrent writers to
// one trace race for the same record id or proposal.
const maxAttempts = 64

// Kernel is the sole authority that commits beliefs, plans, predictions and
// actions. Its owner hands out role-bound handles ([Kernel.Handle],
// [Kernel.Proposer], [Kernel.Symbolic]); nothing outside the kernel can write with the
// kernel's own role.
//
// A Kernel is safe for concurrent use by many goroutines and many traces. It
// holds no lock of its own: its configuration is fixed by [New], and
// concurrent writes to one trace are ordered by the store (a record id or a
// proposal decided twice is retried against a fresh read).
type Kernel struct {
	store             store.Store
	states            stateCache      // decoded trace states, by trace
	written           writtenCache    // the states this kernel's last batches left, by trace
	persistent        persistentCache // the namespace's persistent constraints
	ownsStore         bool
	now               func() time.Time
	minConfidence     float64
	conflictThreshold float64
	maxPayload        int
	namespace         string
	shared            []sharedKind
	specs             map[string]ActionSpec
	beliefSpecs       map[string]BeliefSpec
	reserved          map[reservation][]string // see Config.Reserved
	strictActions     bool
	validators        []Validator
	log               *slog.Logger
	tracerSet         bool
	tracerProvider    trace.TracerProvider
	tracer            trace.Tracer // nil: tracing off
	meterSet          bool
	meterProvider     metric.MeterProvider
	metrics           *metrics // nil: metrics off
	signing           *signing // nil: no Config.Signer
	// thresholds are minConfidence and conflictThreshold as the evidence
	// artifacts record them, boxed once instead of on every belief.
	thresholds [2]any
}

// ActionSpec is what the kernel's owner fixes about an action type.
type ActionSpec struct {
	// Type is the action type (the action record's kind).
	Type string
	// MinBeliefs are belief kinds every proposal of this type must declare in
	// requires_beliefs; declaring fewer is UNGROUNDED_ACTION.
	MinBeliefs []string
	// SafeFallback lets the action commit with no required beliefs (as
	// queue_for_review does). Any other action without beliefs is
	// UNGROUNDED_ACTION.
	SafeFallback bool
	// RequirePrediction turns the prediction gate on for this type: a
	// committed prediction for it must exist and be non-negative.
	RequirePrediction bool
	// RequirePlan lets the action commit only as a step of a committed,
	// feasible plan of the same trace (NO_FEASIBLE_PLAN otherwise); the plan
	// then joins the action's provenance.
	RequirePlan bool
	// Repeatable lets one observation ground several commits of this type
	// in a trace. By default a second commit of the type that rests on an
	// observation an earlier commit already rested on (through any belief:
	// a new belief over the same percept is no new evidence) is
	// DUPLICATE_ACTION: the evidence is used up by the action it grounds.
	Repeatable bool
	// Once, when set, limits how many actions of this type may ever commit
	// per key in the kernel's namespace, across traces and processes (see
	// [OnceKey]).
	Once *OnceKey
	// Predictors names the writers whose predictions count at this type's
	// prediction gate. Empty means every simulator handle; a planner's
	// prediction counts only if the planner is named here.
	Predictors []string
}

// OnceKey makes an action type once-only per key: the kernel claims the
// key in the store in the same atomic batch as the commit, so of any number
// of concurrent or repeated commits with one key, across traces and
// processes sharing the store, at most Limit succeed; the others are
// DUPLICATE_ACTION. Keys belong to the kernel's namespace, and values are
// compared by their canonical form (package canon). A commit whose action
// was retired ([Governor.Retire]: it never ran and never will) no longer
// counts against Limit.
type OnceKey struct {
	// Fields are the payload fields whose values form the key, in order.
	Fields []string
	// Percept, when set, reads Fields from the current observation of this
	// percept kind in the trace instead of from the action's payload, so
	// that the planner cannot choose the key. The percept must pass the
	// evidence checks.
	Percept string
	// Limit is how many commits one key allows; zero means one.
	Limit int
}

// BeliefSpec is what the kernel's owner fixes about a belief kind: the
// percept kinds it must rest on. Without one, a planner chooses a belief's
// evidence itself and could shop for a clean percept that says nothing about
// the belief; with one, a proposal that does not depend on every listed kind
// is MISSING_EVIDENCE.
type BeliefSpec struct {
	Kind      string
	DependsOn []string
}

// defaultFallback is the spec of queue_for_review until an owner registers
// another.
var defaultFallback = ActionSpec{Type: FallbackQueueForReview, SafeFallback: true}

// spec returns the spec registered for an action type, queue_for_review's
// default included.
func (k *Kernel) spec(actionType string) (ActionSpec, bool) {
	s, ok := k.specs[actionType]
	if !ok && actionType == FallbackQueueForReview {
		return defaultFallback, true
	}
	return s, ok
}

// defaultThresholds are the default thresholds boxed once, not for every
// kernel (a kernel per episode is a common pattern).
var defaultThresholds = [2]any{defaultMinConfidence, defaultConflictThreshold}

// discardLogger is every kernel's logger without [Config.Logger]: one shared
// value, since a kernel per episode is a common pattern.
var discardLogger = slog.New(slog.DiscardHandler)

func unit(f float64) bool { return !math.IsNaN(f) && f >= 0 && f <= 1 }

// Close releases the store if the kernel created it.
// With a Config.Signer it first stops the periodic checkpoints and
// records the last one (see [Kernel.Checkpoint]); its error is returned,
// joined with the store's.
func (k *Kernel) Close() error {
	err := k.closeSigning()
	if k.ownsStore {
		err = errors.Join(err, k.store.Close())
	}
	return err
}

// Entry is what a handle asks the kernel to write.
type Entry struct {
	TraceID string
	Slot    blackboard.Slot
	// Mode defaults to the mode the handle's role writes the slot in.
	Mode    blackboard.Mode
	Kind    string
	Payload blackboard.Payload
	// InputRefs and EvidenceRefs must name records of the same trace or of
	// persistent scope.
	InputRefs    []string
	EvidenceRefs []string
	// Confidence is optional; nil means the source gave none. new(0.9)
	// gives one.
	Confidence *float64
	// TTL is optional; zero means the record never expires.
	TTL time.Duration
	// Scope defaults to ScopeEpisode.
	Scope blackboard.Scope
	// OnceKeys are keys the write claims in the store, in the same batch:
	// a key already claimed fails the write with [blackboard.ErrDuplicateKey] and
	// stores nothing. Only the [Governor] claims keys: [Governor.Write]
	// (an executor's effect attempts use them) and [Governor.Submit] (by
	// the committed record, or the refused proposal: the gate's retry
	// keys); every other handle refuses an entry with keys
	// ([blackboard.ErrPermission]).
	OnceKeys []string

	// owned says the payload was built by the kernel for this write,
	// shares nothing with anyone and was found valid and within the size
	// limit as it was built (see [Constraint.canonical]): it is stored as
	// it is rather than normalised into a copy.
	owned bool
}

// permissions is the paper's Table 1 as the kernel enforces it: the mode a
// role may write each slot in. The kernel role is not listed: no handle has
// it.
var permissions = map[grant]blackboard.Mode{
	{blackboard.RoleTool, blackboard.Percepts}:         blackboard.ModeCommit,
	{blackboard.RolePlanner, blackboard.Beliefs}:       blackboard.ModePropose,
	{blackboard.RolePlanner, blackboard.Plans}:         blackboard.ModePropose,
	{blackboard.RolePlanner, blackboard.Predictions}:   blackboard.ModePropose,
	{blackboard.RolePlanner, blackboard.Actions}:       blackboard.ModePropose,
	{blackboard.RoleSymbolic, blackboard.Constraints}:  blackboard.ModeCommit,
	{blackboard.RoleEvidence, blackboard.Evidence}:     blackboard.ModeCommit,
	{blackboard.RoleSimulator, blackboard.Predictions}: blackboard.ModePropose,
	// No handle has the approver's role: the tool gate writes approvals
	// through the Governor, after its own checks.
	{blackboard.RoleApprover, blackboard.Evidence}: blackboard.ModeCommit,
}

// grant is a key of permissions: a role writing a slot.
type grant struct {
	role blackboard.Role
	slot blackboard.Slot
}

// allowed reports whether role may write slot in mode (paper Table 1).
func allowed(role blackboard.Role, slot blackboard.Slot, mode blackboard.Mode) bool {
	if role == blackboard.RoleKernel || !role.Valid() || !slot.Valid() || !mode.Valid() {
		return false
	}
	return permissions[grant{role, slot}] == mode
}

func (k *Kernel) nowMS() int64 { return k.now().UnixMilli() }

// checkEntry validates everything about e that needs no store access and
// returns the record to write (without id) or a typed error.
func (k *Kernel) checkEntry(role blackboard.Role, writer string, e *Entry) (blackboard.Record, error) {
	const op = "write"
	mode := e.Mode
	switch {
	case !e.Slot.Valid():
		return blackboard.Record{}, newErr(op, "", reason.InvalidInput, blackboard.ErrInvalidInput, fmt.Sprintf("unknown slot %q", e.Slot))
	case e.Mode != "" && !e.Mode.Valid():
		return blackboard.Record{}, newErr(op, "", reason.InvalidInput, blackboard.ErrInvalidInput, fmt.Sprintf("unknown mode %q", e.Mode))
	}
	if mode == "" {
		mode = permissions[grant{role, e.Slot}]
	}
	if !mutPermissions && !allowed(role, e.Slot, mode) {
		m := "any mode"
		if mode != "" {
			m = string(mode)
		}
		return blackboard.Record{}, newErr(op, "", reason.PermissionDenied, blackboard.ErrPermission,
			fmt.Sprintf("role %s may not write %s in %s", role, e.Slot, m))
	}
	if err := checkName("trace id", e.TraceID); err != nil {
		return blackboard.Record{}, newErr(op, "", reason.InvalidInput, blackboard.ErrInvalidInput, err.Error())
	}
	if err := k.checkTraceOwner(op, e.TraceID); err != nil {
		return blackboard.Record{}, err
	}
	if err := checkName("kind", e.Kind); err != nil {
		return blackboard.Record{}, newErr(op, "", reason.InvalidInput, blackboard.ErrInvalidInput, err.Error())
	}
	if c := e.Confidence; c != nil && !unit(*c) {
		return blackboard.Record{}, newErr(op, "", reason.InvalidInput, blackboard.ErrInvalidInput, fmt.Sprintf("confidence %v outside [0,1]", *c))
	}
	if e.TTL < 0 || e.TTL > store.MaxTTL {
		return blackboard.Record{}, newErr(op, "", reason.InvalidInput, blackboard.ErrInvalidInput, fmt.Sprintf("TTL %v outside [0, %v]", e.TTL, store.MaxTTL))
	}
	scope := e.Scope
	if scope == "" {
		scope = blackboard.ScopeEpisode
	}
	if !scope.Valid() {
		return blackboard.Record{}, newErr(op, "", reason.InvalidInput, blackboard.ErrInvalidInput, fmt.Sprintf("unknown scope %q", e.Scope))
	}
	if !mutPersistentScope && scope == blackboard.ScopePersistent && (role == blackboard.RolePlanner || role == blackboard.RoleSimulator) {
		// A proposer's persistent record would become every trace's state.
		return blackboard.Record{}, newErr(op, "", reason.PermissionDenied, blackboard.ErrPermission,
			fmt.Sprintf("role %s may not write persistent scope", role))
	}
	for _, ref := range e.InputRefs {
		if ref == "" {
			return blackboard.Record{}, newErr(op, "", reason.InvalidReference, ErrInvalidReference, "empty input ref")
		}
	}
	for _, ref := range e.EvidenceRefs {
		if ref == "" {
			return blackboard.Record{}, newErr(op, "", reason.InvalidReference, ErrInvalidReference, "empty evidence ref")
		}
	}
	var payload blackboard.Payload
	var err error
	if e.owned {
		payload = e.Payload
	} else {
		payload, err = normalizePayload(e.Payload, k.maxPayload)
	}
	if err != nil {
		sentinel := blackboard.ErrInvalidPayload
		if errors.Is(err, ErrPayloadTooLarge) {
			sentinel = ErrPayloadTooLarge
		}
		return blackboard.Record{}, newErr(op, "", reason.InvalidInput, sentinel, strings.TrimPrefix(err.Error(), sentinel.Error()+": "))
	}
	if err := checkShape(e.Slot, mode, e.Kind, payload); err != nil {
		code := reason.InvalidInput
		sentinel := blackboard.ErrInvalidInput
		if mode == blackboard.ModePropose {
			code, sentinel = reason.InvalidProposal, ErrInvalidProposal
		}
		return blackboard.Record{}, newErr(op, "", code, sentinel, err.Error())
	}
	var conf *float64
	if e.Confidence != nil {
		conf = new(*e.Confidence)
	}
	ttl := int64(0)
	if e.TTL > 0 {
		ttl = int64((e.TTL + time.Millisecond - 1) / time.Millisecond)
	}
	rec := blackboard.Record{
		Slot:    e.Slot,
		Mode:    mode,
		Kind:    e.Kind,
		Payload: payload,
		Provenance: blackboard.Provenance{
			Role:        role,
			Writer:      writer,
			TraceID:     e.TraceID,
			TimestampMS: k.nowMS(),
			InputRefs:   slices.Clone(e.InputRefs),
			Confidence:  conf,
			TTLMS:       ttl,
		},
		EvidenceRefs: slices.Clone(e.EvidenceRefs),
		Status:       blackboard.StatusActive,
		Scope:        scope,
		Namespace:    k.namespace,
	}
	if mode == blackboard.ModeCommit {
		rec.Reason = reason.Committed
	}
	return rec, nil
}

// checkName refuses empty, over-long and control-character names.
func checkName(what, s string) error {
	if s == "" {
		return fmt.Errorf("empty %s", what)
	}
	if len(s) > 512 {
		return fmt.Errorf("%s longer than 512 bytes", what)
	}
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return fmt.Errorf("%s contains a control character", what)
			}
			i++
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && w == 1 {
			return fmt.Errorf("%s is not valid UTF-8", what)
		}
		i += w
	}
	return nil
}

// checkShape checks the fields the kernel will later read, so that a
// malformed record is refused when written rather than misread when decided.
func checkShape(slot blackboard.Slot, mode blackboard.Mode, kind string, p blackboard.Payload) error {
	strs := func(key string) error {
		if !stringList(p, key) {
			return fmt.Errorf("%s must be a list of strings", key)
		}
		return nil
	}
	switch slot {
	case blackboard.Beliefs:
		return strs(keyDependsOn)
	case blackboard.Plans:
		steps, ok := p[keySteps].([]any)
		if !ok || len(steps) == 0 {
			return fmt.Errorf("a plan needs a non-empty list %q", keySteps)
		}
		for i, s := range steps {
			step, ok := s.(map[string]any)
			if !ok {
				return fmt.Errorf("step %d is not an object", i)
			}
			if a, ok := step[keyAction].(string); !ok || a == "" {
				return fmt.Errorf("step %d has no %q", i, keyAction)
			}
			if !stringList(step, keyRequiresBeliefs) {
				return fmt.Errorf("step %d: %s must be a list of strings", i, keyRequiresBeliefs)
			}
		}
	case blackboard.Actions:
		return strs(keyRequiresBeliefs)
	case blackboard.Predictions:
		if a, ok := p[keyActionType].(string); !ok || a == "" {
			return fmt.Errorf("a prediction needs %q", keyActionType)
		}
		if _, ok := p[keyExpectedOutcome].(float64); !ok {
			return fmt.Errorf("a prediction needs a numeric %q", keyExpectedOutcome)
		}
		return strs(keyRequiresBeliefs)
	case blackboard.Constraints:
		if n, present := p[keyName]; present {
			if s, ok := n.(string); !ok || s == "" {
				return fmt.Errorf("%q must be a non-empty string", keyName)
			}
		}
		if f, present := p[keyBlocksField]; present {
			if _, ok := f.(string); !ok {
				return fmt.Errorf("%q must be a string", keyBlocksField)
			}
		}
		if b, present := p[keyBindPercept]; present {
			if _, ok := b.(string); !ok {
				return fmt.Errorf("%q must be a string", keyBindPercept)
			}
		}
		if e, present := p[keyEnabled]; present {
			if _, ok := e.(bool); !ok {
				return fmt.Errorf("%q must be a boolean", keyEnabled)
			}
		}
		if _, present := p[keyAppliesTo]; present {
			if types, ok := p.Strings(keyAppliesTo); !ok || len(types) == 0 {
				return fmt.Errorf("%q must be a non-empty list of action types", keyAppliesTo)
			}
		}
	}
	return nil
}

// stringList reports whether p[key] is absent, nil or a list of strings,
// what [blackboard.Payload.Strings] accepts, without building the list.
func stringList(p blackboard.Payload, key string) bool {
	switch l := p[key].(type) {
	case nil, []string:
		return true
	case []any:
		for _, e := range l {
			if _, ok := e.(string); !ok {
				return false
			}
		}
		return true
	}
	return false
}

func init() {
	kernelhook.Now = func(k any) time.Time { return k.(*Kernel).now() }
	kernelhook.Namespace = func(k any) string { return k.(*Kernel).namespace }
}

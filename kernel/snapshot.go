package kernel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// snapshot is one read of a trace: every record of the trace, plus the
// active persistent constraints when a decision needs them. Decisions are
// computed from a snapshot and applied with a store batch that fails if the
// snapshot went stale (a taken id or a proposal no longer active), in which
// case the kernel reads again.
type snapshot struct {
	k          *Kernel
	traceID    string
	nowMS      int64
	span       string // the span the decision runs under, for the records it writes
	recs       []Record
	persistent []Record // active persistent constraints of every trace
	// scratch for the batch a commit applies, reused with the snapshot
	appends [3]Record
	invs    [1]Invalidation
	claims  [1]Claim
	cons    []constraint // reused by constraints()
}

// snapshotReader is the fast path a store may offer the kernel: copy one
// trace (and, if asked, the active persistent constraints) into the given
// buffers. MemStore implements it; other stores are read through ListTrace
// and ListSlot.
type snapshotReader interface {
	readTrace(ctx context.Context, traceID, namespace string, withConstraints bool, recs, persistent []Record) ([]Record, []Record, error)
}

// normalizedApplier is the write path a store may offer the kernel for
// batches whose payloads the kernel normalised or built itself: every
// string in them was checked on the way in ([normalizePayload]), so the
// store need not walk the payloads again. MemStore implements it; other
// stores get [Store.Apply], which checks everything.
type normalizedApplier interface {
	applyNormalized(ctx context.Context, b Batch) error
}

// apply writes a batch the kernel built. Its claims are the kernel's, in
// the kernel's key space (see [KeyStore]).
func (k *Kernel) apply(ctx context.Context, b Batch) error {
	for i := range b.Claims {
		b.Claims[i].Namespace = k.keySpace()
	}
	if a, ok := k.store.(normalizedApplier); ok {
		return a.applyNormalized(ctx, b)
	}
	return k.store.Apply(ctx, b)
}

// snapshots recycles snapshot buffers: a decision reads a whole trace, and
// reusing the slices keeps that read free of allocations.
var snapshots = sync.Pool{New: func() any { return new(snapshot) }}

// load reads a trace. The caller must release the snapshot when done and
// must not keep pointers into it afterwards.
func (k *Kernel) load(ctx context.Context, traceID string, withConstraints bool) (*snapshot, error) {
	s := snapshots.Get().(*snapshot)
	s.k, s.traceID, s.nowMS, s.span = k, traceID, k.nowMS(), spanRef(ctx)
	var err error
	if fast, ok := k.store.(snapshotReader); ok {
		s.recs, s.persistent, err = fast.readTrace(ctx, traceID, k.namespace, withConstraints, s.recs[:0], s.persistent[:0])
	} else {
		err = s.readFrom(ctx, k.store, withConstraints)
	}
	if err == nil {
		err = s.checkNamespace()
	}
	if err != nil {
		s.release()
		return nil, err
	}
	return s, nil
}

// checkNamespace refuses a trace that holds another namespace's records:
// two applications sharing a store must not decide on each other's state.
func (s *snapshot) checkNamespace() error {
	for i := range s.recs {
		if ns := s.recs[i].Namespace; !mutNamespace && ns != s.k.namespace {
			return newErr("read", s.recs[i].ID, CodePermissionDenied, ErrPermission,
				fmt.Sprintf("trace %q belongs to namespace %q, not %q", s.traceID, ns, s.k.namespace))
		}
	}
	return nil
}

func (s *snapshot) readFrom(ctx context.Context, st Store, withConstraints bool) error {
	s.recs, s.persistent = s.recs[:0], s.persistent[:0]
	for r, err := range st.ListTrace(ctx, s.traceID) {
		if err != nil {
			return err
		}
		s.recs = append(s.recs, r)
	}
	if withConstraints {
		ns := s.k.namespace
		if mutNamespace {
			ns = "" // every namespace's
		}
		for r, err := range st.ListSlot(ctx, Constraints, Filter{Status: StatusActive, Scope: ScopePersistent, Namespace: ns}) {
			if err != nil {
				return err
			}
			s.persistent = append(s.persistent, r)
		}
	}
	return nil
}

// release returns the snapshot's buffers to the pool.
func (s *snapshot) release() {
	clear(s.recs) // drop references to payloads so the pool does not pin them
	clear(s.persistent)
	s.appends, s.invs, s.claims = [3]Record{}, [1]Invalidation{}, [1]Claim{}
	clear(s.cons)
	s.k = nil
	snapshots.Put(s)
}

// nextID returns the i-th fresh id for this snapshot (i from 0).
func (s *snapshot) nextID(slot Slot, i int) string {
	return recordID(slot, s.traceID, len(s.recs)+1+i)
}

func (s *snapshot) byID(id string) *Record {
	if i := s.indexOf(id); i >= 0 {
		return &s.recs[i]
	}
	return nil
}

// indexOf returns the position of the record with that id, or -1.
func (s *snapshot) indexOf(id string) int {
	for i := len(s.recs) - 1; i >= 0; i-- {
		if s.recs[i].ID == id {
			return i
		}
	}
	return -1
}

// current returns the current observation of a percept kind: the latest
// committed percept of that kind that is not invalidated, or nil.
func (s *snapshot) current(kind string) *Record { return s.latest(Percepts, kind, isObservation) }

// latest returns the latest record of kind in slot that keep accepts.
func (s *snapshot) latest(slot Slot, kind string, keep func(*Record) bool) *Record {
	for i := len(s.recs) - 1; i >= 0; i-- {
		r := &s.recs[i]
		if r.Slot == slot && r.Kind == kind && keep(r) {
			return r
		}
	}
	return nil
}

func committedActive(r *Record) bool { return r.Mode == ModeCommit && r.Status == StatusActive }

// isObservation reports whether r is a percept observation that counts: a
// committed percept not invalidated (an expired one still counts, as stale
// evidence rather than no evidence).
func isObservation(r *Record) bool {
	return r.Slot == Percepts && r.Mode == ModeCommit && r.Status != StatusInvalidated
}

// perceptFor resolves a belief dependency: a percept record id of this
// trace, or a percept kind (its current observation, expired or not — an
// expired percept is stale evidence, not missing evidence). An id may name
// a superseded observation; the caller checks that against [snapshot.current].
func (s *snapshot) perceptFor(dep string) *Record {
	if r := s.byID(dep); r != nil && isObservation(r) {
		return r
	}
	return s.current(dep)
}

// belief returns the committed, active belief of kind.
func (s *snapshot) belief(kind string) *Record { return s.latest(Beliefs, kind, committedActive) }

// stale reports whether a percept may not be used as evidence now: flagged
// stale by its source, already expired, or past its TTL.
func (s *snapshot) stale(r *Record) bool {
	return !mutStale && (r.Payload.Bool(KeyStale) || r.Status == StatusExpired || r.expired(s.nowMS))
}

// markExpired marks, in the snapshot only, the active records whose TTL has
// run out as EXPIRED, and returns the invalidations that record it (nil
// when none). Decisions write them with their batch; reads never do.
func (s *snapshot) markExpired() []Invalidation {
	var out []Invalidation
	for i := range s.recs {
		r := &s.recs[i]
		if r.Status == StatusActive && r.expired(s.nowMS) {
			r.Status, r.Reason = StatusExpired, CodeTTLExpired
			out = append(out, Invalidation{ID: r.ID, Status: StatusExpired, Reason: CodeTTLExpired})
		}
	}
	return out
}

// checkRefs verifies that every id names a record of this trace, or a
// persistent record of the namespace that every trace shares (a
// constraint, or a kind the owner shares).
func (s *snapshot) checkRefs(ctx context.Context, what string, ids []string) error {
	for _, id := range ids {
		if s.byID(id) != nil {
			continue
		}
		r, err := s.k.store.Get(ctx, id)
		switch {
		case errors.Is(err, ErrNotFound) || err == nil && !mutNamespace && r.Namespace != s.k.namespace:
			return newErr("write", "", CodeInvalidReference, ErrInvalidReference,
				fmt.Sprintf("%s %q does not exist", what, id))
		case err != nil:
			return err
		case !s.k.sharedAcross(&r):
			return newErr("write", "", CodeInvalidReference, ErrInvalidReference,
				fmt.Sprintf("%s %q belongs to another trace", what, id))
		}
	}
	return nil
}

// sharedAcross reports whether r, a record of another trace, is shared
// with every trace of the namespace: a committed persistent constraint, or
// a committed persistent record of a kind the owner shares.
func (k *Kernel) sharedAcross(r *Record) bool {
	if r.Scope != ScopePersistent || r.Mode != ModeCommit || !mutNamespace && r.Namespace != k.namespace {
		return false
	}
	if r.Slot == Constraints {
		return true
	}
	for _, sk := range k.shared {
		if sk.slot == r.Slot && sk.kind == r.Kind {
			return true
		}
	}
	return false
}

// looksLikeID reports whether s has the shape of a record id, so that a
// belief dependency written as an id is checked as a reference rather than
// read as a percept kind.
func looksLikeID(s string) bool {
	slot, rest, ok := strings.Cut(s, ":")
	if !ok {
		return false
	}
	if _, err := ParseSlot(slot); err != nil {
		return false
	}
	i := strings.LastIndexByte(rest, ':')
	if i <= 0 || i == len(rest)-1 {
		return false
	}
	for _, c := range rest[i+1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// constraint is an active constraint as the gate reads it.
type constraint struct {
	rec     *Record
	name    string
	field   string
	bind    string
	enabled bool
	types   []any // the action types it guards; nil: every type but the safe fallbacks
}

// appliesTo reports whether the constraint guards an action type. A
// constraint that names no types guards every type except safe fallbacks,
// which have no effect for it to guard; one that names types guards exactly
// those.
func (c *constraint) appliesTo(action string, fallback bool) bool {
	if c.types == nil {
		return !fallback
	}
	return slices.Contains(c.types, any(action))
}

func asConstraint(r *Record) constraint {
	c := constraint{rec: r, name: r.Kind, enabled: true}
	if n, ok := r.Payload.String(KeyName); ok && n != "" {
		c.name = n
	}
	if e, ok := r.Payload[KeyEnabled].(bool); ok {
		c.enabled = e
	}
	c.field, _ = r.Payload.String(KeyBlocksField)
	c.bind, _ = r.Payload.String(KeyBindPercept)
	c.types = r.Payload.list(KeyAppliesTo)
	return c
}

// constraints returns the enabled constraints in force for the trace: the
// latest of each kind among the trace's own episode-scope constraints, and
// the latest of each kind among persistent ones. A trace cannot switch off a
// persistent constraint: the two sets are enforced side by side.
func (s *snapshot) constraints() []constraint {
	own := func(r *Record) bool {
		return r.Slot == Constraints && committedActive(r) && r.Scope != ScopePersistent
	}
	persistent := func(r *Record) bool { return !r.expired(s.nowMS) }
	s.cons = latestConstraints(latestConstraints(s.cons[:0], s.recs, own), s.persistent, persistent)
	return s.cons
}

// latestConstraints appends, in append order, the enabled constraints among
// recs that are the latest record of their kind that in accepts. Traces hold
// few constraints, so a quadratic scan beats building a set.
func latestConstraints(out []constraint, recs []Record, in func(*Record) bool) []constraint {
next:
	for i := range recs {
		r := &recs[i]
		if !in(r) {
			continue
		}
		for j := i + 1; j < len(recs); j++ {
			if recs[j].Kind == r.Kind && in(&recs[j]) {
				continue next // superseded by a later one
			}
		}
		if c := asConstraint(r); c.enabled && c.field != "" {
			out = append(out, c)
		}
	}
	return out
}

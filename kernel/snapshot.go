package kernel

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/internal/kernelhook"
	"github.com/blackboardkernel/bk/internal/vouch"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// snapshot is one read of a trace's decision state ([traceState]), plus
// the active persistent constraints when a decision needs them and the
// records a decision reads by id. Decisions are computed from a snapshot
// and applied with a store batch that fails if the snapshot went stale (a
// taken id, a changed status), in which case the kernel reads again.
type snapshot struct {
	k          *Kernel
	links      []chain.Hash // where the store writes a batch's links, for a call's receipts (kept with the snapshot, which is recycled)
	ctx        context.Context
	traceID    string
	nowMS      int64
	span       string // the span the decision runs under, for the records it writes
	read       int    // records the trace held when read
	n          int    // read plus the records this decision appends ahead (a submitted proposal)
	version    uint64 // the trace's Version when read (StateStore)
	stateful   bool   // the store keeps trace states
	st         *traceState
	extra      []*blackboard.Record // records read by id, and the pending proposal
	err        error                // the first store error met reading a record by id
	late       []store.Invalidation // expiries of records read by id, written with the decision's batch
	pending    blackboard.Record    // the proposal a Submit decides, as if written (see pend)
	decides    bool                 // the snapshot decides a proposal: its batch writes expiries
	persistent []blackboard.Record  // active persistent constraints of every trace (the kernel's cache: read only)
	shared     uint64               // TraceState.Shared as read
	sharedOK   bool                 // shared was read from a StateStore
	gated      bool                 // the decision enforces constraints: its batch is conditional on shared
	viewing    bool                 // read for a view: it decides nothing and writes nothing
	// scratch for the batch a commit applies, reused with the snapshot
	appends [3]blackboard.Record
	invs    [1]store.Invalidation
	claims  [1]store.Claim
	cons    []constraint // reused by constraints()
	// collect is collectRecord bound to the snapshot once, when the pool
	// makes it; listed and listErr are what it gathered.
	collect func(blackboard.Record, error) bool
	listed  []blackboard.Record
	listErr error
	// ids holds the ids a decision gives and its decision id, built in
	// one allocation by reserveIDs; idAt places them in it.
	ids        string
	decisionID string
	idAt       [3]idSpan
	nids       int
}

// idSpan is where the id of the n-th record (from 1) of slot lies in
// snapshot.ids.
type idSpan struct {
	slot     blackboard.Slot
	n        int
	off, end int
}

// apply writes a batch the kernel built for this snapshot's trace: it is
// conditional on the trace as read and carries the trace's next state.
// Its claims are the kernel's, in the kernel's key space (see [store.Store]).
func (s *snapshot) apply(ctx context.Context, b store.Batch) error {
	k := s.k
	for i := range b.Claims {
		b.Claims[i].Namespace = k.keySpace()
	}
	b.Trace, b.TraceNamespace, b.TraceLen = s.traceID, k.namespace, s.read
	if s.gated && s.sharedOK {
		b.SharedNamespace, b.Shared = k.namespace, s.shared
	}
	for _, inv := range s.late {
		if s.decides && !slices.ContainsFunc(b.Invalidations, func(o store.Invalidation) bool { return o.ID == inv.ID }) {
			b.Invalidations = append(b.Invalidations, inv)
		}
	}
	if s.stateful {
		b.State, b.Version = s.st.next(s.read, b.Appends, b.Invalidations, s), s.version
	}
	// Every record in the batch was checked on the way in or built here
	// from checked parts: the store need not scan it again.
	vouch.Set(&b.Vouch)
	rc := kernelhook.ReceiptsOf(ctx)
	if rc != nil && len(b.Appends) > 0 {
		if cap(s.links) < len(b.Appends) {
			s.links = make([]chain.Hash, len(b.Appends))
		}
		b.Links = s.links[:len(b.Appends)]
		clear(b.Links)
	}
	err := k.store.Apply(ctx, b)
	if err == nil && k.signing != nil {
		k.signing.touch(s.traceID)
	}
	if err == nil && rc != nil {
		for i, l := range b.Links {
			if l != (chain.Hash{}) {
				rc.Add(b.Appends[i].Kind, l)
			}
		}
	}
	if s.stateful {
		if err == nil {
			// Every batch the kernel applies touches its trace: the store
			// counted one change.
			k.written.put(s.traceID, writtenState{len: s.read + len(b.Appends), version: s.version + 1, st: b.State.(*traceState)})
		} else {
			// The state said a record was active that the store has not:
			// the next read builds the state from the trace rather than
			// trust the stored one again.
			k.written.drop(s.traceID, errors.Is(err, store.ErrNotActive))
			if s.gated {
				k.persistent.reset()
			}
		}
	}
	return err
}

// snapshots recycles snapshot buffers.
var snapshots = sync.Pool{New: func() any {
	s := new(snapshot)
	s.collect = s.collectRecord
	return s
}}

// collectRecord gathers a listing into s.listed, stopping at the first
// error, which it keeps in s.listErr.
func (s *snapshot) collectRecord(r blackboard.Record, err error) bool {
	if err != nil {
		s.listErr = err
		return false
	}
	s.listed = append(s.listed, r)
	return true
}

// load reads a trace's decision state. The caller must release the
// snapshot when done and must not keep pointers into it afterwards.
func (k *Kernel) load(ctx context.Context, traceID string, withConstraints bool) (*snapshot, error) {
	return k.loadAs(ctx, traceID, withConstraints, false, 0)
}

// loadForWrite is load for a snapshot whose batch is conditional on what it
// read: it starts from the state this kernel's last batch on the trace
// left, without reading the store, when it has one. If another writer
// changed the trace since, the store refuses the batch and the caller reads
// again (see [raced]), this time from the store.
func (k *Kernel) loadForWrite(ctx context.Context, traceID string, withConstraints bool) (*snapshot, error) {
	return k.loadAs(ctx, traceID, withConstraints, true, 0)
}

// loadForWriteAt is loadForWrite for a decision at nowMS, the time the
// record it writes was stamped with, so that the two need one clock read
// (0: read the clock).
func (k *Kernel) loadForWriteAt(ctx context.Context, traceID string, withConstraints bool, nowMS int64) (*snapshot, error) {
	return k.loadAs(ctx, traceID, withConstraints, true, nowMS)
}

func (k *Kernel) loadAs(ctx context.Context, traceID string, withConstraints, writes bool, nowMS int64) (*snapshot, error) {
	if nowMS == 0 {
		nowMS = k.nowMS()
	}
	s := snapshots.Get().(*snapshot)
	s.k, s.ctx, s.traceID, s.nowMS, s.span = k, ctx, traceID, nowMS, spanRef(ctx)
	s.gated = withConstraints
	err := ctx.Err()
	if !writes || !s.startFromWritten() {
		err = s.readState(ctx)
		if err == nil && s.gated {
			err = s.readConstraints(ctx)
		}
	}
	if err != nil {
		s.release()
		return nil, err
	}
	return s, nil
}

// startFromWritten starts a snapshot whose batch is conditional on what it
// read from the state this kernel's last batch on the trace left, and, for
// a gated decision, from the persistent constraints as last listed (its
// batch is conditional on their counter). A trace this kernel has not
// written is taken for a new one: if it is not, the store refuses the
// batch (its length is not 0) and the next attempt reads it. It reports
// false when the snapshot must be read from the store.
func (s *snapshot) startFromWritten() bool {
	k := s.k
	if _, ok := k.store.(store.StateStore); !ok {
		return false
	}
	w, ok := k.written.get(s.traceID)
	if !ok {
		w = writtenState{st: emptyState}
	}
	if w.st == nil {
		return false // known to exist, state unknown: read it (see [writtenCache.drop])
	}
	if s.gated {
		recs, shared, ok := k.persistent.latest()
		if !ok {
			return false
		}
		s.persistent, s.shared, s.sharedOK = recs, shared, true
	}
	s.stateful, s.read, s.n, s.version, s.st = true, w.len, w.len, w.version, w.st
	return true
}

// readState reads the trace's state from a [store.StateStore] when it is
// current, and otherwise builds it from the whole trace.
func (s *snapshot) readState(ctx context.Context) error {
	k := s.k
	ns := ""
	ss, ok := k.store.(store.StateStore)
	s.stateful = ok
	if ok {
		ts, err := ss.ReadState(ctx, k.namespace, s.traceID)
		if err != nil {
			return err
		}
		s.read, s.version, ns = ts.Len, ts.Version, ts.Namespace
		s.shared, s.sharedOK = ts.Shared, true
		s.st = nil
		if ts.Len == 0 {
			s.st = emptyState
		} else if !s.distrusted() && (ts.StateVersion == ts.Version || mutStateFold) {
			s.st = k.states.decode(s.traceID, &ts)
		}
	}
	if s.st == nil && s.viewing {
		return errNoState // a view reads the records themselves, once
	}
	if s.st == nil {
		recs, err := k.readTrace(ctx, s.traceID)
		if err != nil {
			return err
		}
		s.st = foldState(recs)
		s.read = len(recs)
		if len(recs) > 0 {
			ns = recs[0].Namespace
		}
	}
	s.n = s.read
	return k.checkNamespace(s.traceID, ns)
}

// errNoState is readState's answer to a view when the store holds no state
// of the trace it may trust.
var errNoState = errors.New("no trace state")

// distrusted reports whether the state stored with the trace must not be
// trusted (see [writtenCache.drop]); a view leaves the flag to the next
// decision.
func (s *snapshot) distrusted() bool {
	if s.viewing {
		return s.k.written.refolds(s.traceID)
	}
	return s.k.written.distrusted(s.traceID)
}

// checkNamespace refuses a trace of another namespace than the kernel's:
// two applications sharing a store must not decide on each other's state.
// A trace belongs to the namespace of its records.
func (k *Kernel) checkNamespace(traceID, ns string) error {
	if ns != "" && !mutNamespace && ns != k.namespace {
		return newErr("read", "", reason.PermissionDenied, blackboard.ErrPermission,
			fmt.Sprintf("trace %q belongs to namespace %q, not %q", traceID, ns, k.namespace))
	}
	return nil
}

// readTrace reads every record of a trace: the slow path, for a store that
// keeps no states or a state some other writer left behind.
func (k *Kernel) readTrace(ctx context.Context, traceID string) ([]blackboard.Record, error) {
	var recs []blackboard.Record
	for r, err := range k.store.ListTrace(ctx, k.namespace, traceID) {
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// readConstraints reads the namespace's active persistent constraints, or
// takes them from the kernel's cache when the store says they have not
// changed since ([store.TraceState.Shared]).
func (s *snapshot) readConstraints(ctx context.Context) error {
	k := s.k
	if s.sharedOK {
		if recs, ok := k.persistent.get(s.shared); ok {
			s.persistent = recs
			return nil
		}
	}
	ns := k.namespace
	if mutNamespace {
		ns = "" // every namespace's
	}
	// Called directly with the snapshot's own collector rather than
	// ranged over: a range's body, its variables and results were four
	// allocations a listing, usually of nothing.
	k.store.ListSlot(ctx, blackboard.Constraints, store.Filter{Status: blackboard.StatusActive, Scope: blackboard.ScopePersistent, Namespace: ns})(s.collect)
	recs, err := s.listed, s.listErr
	s.listed, s.listErr = nil, nil
	if err != nil {
		return err
	}
	s.persistent = recs
	if s.sharedOK {
		// Keyed by the counter read before the listing: a change between
		// the two shows as a counter the next read does not match.
		k.persistent.put(s.shared, recs)
	}
	return nil
}

// release returns the snapshot's buffers to the pool.
func (s *snapshot) release() {
	s.persistent, s.sharedOK, s.gated, s.viewing = nil, false, false, false
	clear(s.extra)
	s.extra, s.late, s.pending = s.extra[:0], s.late[:0], blackboard.Record{}
	s.appends, s.invs, s.claims = [3]blackboard.Record{}, [1]store.Invalidation{}, [1]store.Claim{}
	clear(s.cons)
	s.k, s.ctx, s.st, s.err, s.decides = nil, nil, nil, nil, false
	s.ids, s.decisionID, s.nids = "", "", 0
	snapshots.Put(s)
}

// nextID returns the i-th fresh id for this snapshot (i from 0).
func (s *snapshot) nextID(slot blackboard.Slot, i int) string {
	n := s.n + 1 + i
	for _, sp := range s.idAt[:s.nids] {
		if sp.slot == slot && sp.n == n {
			return s.ids[sp.off:sp.end]
		}
	}
	return store.RecordID(slot, s.k.namespace, s.traceID, n)
}

// reserveIDs builds, in one string, the ids deciding a proposal of slot
// gives (see [snapshot.nextID]) and the decision's id, "decision:" and
// the proposal's: proposalID, or, when it is "", the next id of slot,
// which the proposal a Submit decides takes. A belief's commit takes an
// artifact's id and its own, any other commit its own. Each id was one
// allocation of its own.
func (s *snapshot) reserveIDs(slot blackboard.Slot, proposalID string) {
	var buf [160]byte
	b := append(buf[:0], decisionPrefix...)
	n := s.n
	s.nids = 0
	add := func(slot blackboard.Slot) {
		n++
		off := len(b)
		b = appendRecordID(b, slot, s.k.namespace, s.traceID, n)
		s.idAt[s.nids] = idSpan{slot: slot, n: n, off: off, end: len(b)}
		s.nids++
	}
	if proposalID == "" {
		add(slot)
	} else {
		b = append(b, proposalID...)
	}
	end := len(b)
	if slot == blackboard.Beliefs {
		add(blackboard.Evidence)
	}
	add(slot)
	s.ids = string(b)
	s.decisionID = s.ids[:end]
}

// appendRecordID appends [store.RecordID] of slot (a valid one),
// namespace, traceID and n to b.
func appendRecordID(b []byte, slot blackboard.Slot, namespace, traceID string, n int) []byte {
	if cmp.Or(namespace, blackboard.DefaultNamespace) != blackboard.DefaultNamespace {
		return append(b, store.RecordID(slot, namespace, traceID, n)...)
	}
	b = append(append(append(b, string(slot)...), ':'), traceID...)
	return strconv.AppendInt(append(b, ':'), int64(n), 10)
}

// decisionPrefix starts the id of a decision: "decision:" and its
// proposal's id.
const decisionPrefix = "decision:"

// pend makes rec, which the decision appends ahead of the others, part of
// the snapshot, and returns the snapshot's copy.
func (s *snapshot) pend(rec *blackboard.Record) *blackboard.Record {
	p := &s.pending // the snapshot's own: no state keeps a pointer to it
	*p = *rec
	s.extra = append(s.extra, p)
	s.n++
	return p
}

// byID returns the record of this trace with that id, from the state or
// the store, or nil. A store error other than not-found is kept in s.err,
// which the decision reports.
func (s *snapshot) byID(id string) *blackboard.Record {
	if r := s.st.byID(id); r != nil {
		return r
	}
	for _, r := range s.extra {
		if r.ID == id {
			return r
		}
	}
	rec, err := s.k.store.Get(s.ctx, id)
	if err != nil {
		if !errors.Is(err, blackboard.ErrNotFound) && s.err == nil {
			s.err = err
		}
		return nil
	}
	if rec.Provenance.TraceID != s.traceID {
		return nil
	}
	if inv, ok := s.expireRecord(&rec); ok {
		s.late = append(s.late, inv)
	}
	p := &rec
	s.extra = append(s.extra, p)
	return p
}

// current returns the current observation of a percept kind: the latest
// committed percept of that kind that is not invalidated, or nil.
func (s *snapshot) current(kind string) *blackboard.Record {
	return s.latest(blackboard.Percepts, kind, isObservation)
}

// latest returns the latest committed record of kind in slot that keep
// accepts, among those the state keeps (see [traceState]), or nil.
func (s *snapshot) latest(slot blackboard.Slot, kind string, keep func(*blackboard.Record) bool) *blackboard.Record {
	var best *head
	for i := range s.st.heads {
		h := &s.st.heads[i]
		if h.rec.Slot == slot && h.rec.Kind == kind && keep(h.rec) && (best == nil || h.seq > best.seq) {
			best = h
		}
	}
	if best == nil {
		return nil
	}
	return best.rec
}

func committedActive(r *blackboard.Record) bool {
	return r.Mode == blackboard.ModeCommit && r.Status == blackboard.StatusActive
}

// isObservation reports whether r is a percept observation that counts: a
// committed percept not invalidated (an expired one still counts, as stale
// evidence rather than no evidence).
func isObservation(r *blackboard.Record) bool {
	return r.Slot == blackboard.Percepts && r.Mode == blackboard.ModeCommit && r.Status != blackboard.StatusInvalidated
}

// perceptFor resolves a belief dependency: a percept record id of this
// trace, or a percept kind (its current observation, expired or not — an
// expired percept is stale evidence, not missing evidence). An id may name
// a superseded observation; the caller checks that against [snapshot.current].
func (s *snapshot) perceptFor(dep string) *blackboard.Record {
	r := s.st.byID(dep)
	if r == nil && looksLikeID(dep) {
		r = s.byID(dep) // a kind is never asked of the store
	}
	if r != nil && isObservation(r) {
		return r
	}
	return s.current(dep)
}

// belief returns the committed, active belief of kind.
func (s *snapshot) belief(kind string) *blackboard.Record {
	return s.latest(blackboard.Beliefs, kind, committedActive)
}

// stale reports whether a percept may not be used as evidence now: flagged
// stale by its source, already expired, or past its TTL.
func (s *snapshot) stale(r *blackboard.Record) bool {
	return !mutStale && (r.Payload.Bool(keyStale) || r.Status == blackboard.StatusExpired || r.ExpiredAt(s.nowMS))
}

// markExpired marks, in the snapshot only, the active records of the
// state whose TTL has run out as EXPIRED, and returns the invalidations
// that record it (nil when none). Decisions write them with their batch;
// reads never do.
func (s *snapshot) markExpired() []store.Invalidation {
	var out []store.Invalidation
	mark := func(r *blackboard.Record) {
		if r.ID != "" && r.Status == blackboard.StatusActive && r.ExpiredAt(s.nowMS) &&
			!slices.ContainsFunc(out, func(inv store.Invalidation) bool { return inv.ID == r.ID }) {
			out = append(out, store.Invalidation{ID: r.ID, Status: blackboard.StatusExpired, Reason: reason.TTLExpired})
		}
	}
	for i := range s.st.heads {
		h := &s.st.heads[i]
		mark(h.rec)
		if h.headExt == nil {
			continue
		}
		if h.artifact != nil {
			mark(h.artifact)
		}
		for j := range h.percepts {
			mark(&h.percepts[j])
		}
	}
	for i := range s.st.cons {
		mark(&s.st.cons[i])
	}
	for _, hs := range [...][]head{s.st.preds, s.st.since, s.st.pending} {
		for i := range hs {
			mark(hs[i].rec)
		}
	}
	if out != nil {
		s.st = s.st.next(s.read, nil, out, s)
	}
	return out
}

// expireRecord marks r, a record read by id, EXPIRED in the snapshot when
// its TTL has run out, and returns the invalidation (ok false when not).
func (s *snapshot) expireRecord(r *blackboard.Record) (inv store.Invalidation, ok bool) {
	if r.Status != blackboard.StatusActive || !r.ExpiredAt(s.nowMS) {
		return store.Invalidation{}, false
	}
	r.Status, r.Reason = blackboard.StatusExpired, reason.TTLExpired
	return store.Invalidation{ID: r.ID, Status: blackboard.StatusExpired, Reason: reason.TTLExpired}, true
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
		case errors.Is(err, blackboard.ErrNotFound) || err == nil && !mutNamespace && r.Namespace != s.k.namespace:
			return newErr("write", "", reason.InvalidReference, ErrInvalidReference,
				fmt.Sprintf("%s %q does not exist", what, id))
		case err != nil:
			return err
		case !s.k.sharedAcross(&r):
			return newErr("write", "", reason.InvalidReference, ErrInvalidReference,
				fmt.Sprintf("%s %q belongs to another trace", what, id))
		}
	}
	return nil
}

// sharedAcross reports whether r, a record of another trace, is shared
// with every trace of the namespace: a committed persistent constraint, or
// a committed persistent record of a kind the owner shares.
func (k *Kernel) sharedAcross(r *blackboard.Record) bool {
	if r.Scope != blackboard.ScopePersistent || r.Mode != blackboard.ModeCommit || !mutNamespace && r.Namespace != k.namespace {
		return false
	}
	if r.Slot == blackboard.Constraints {
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
	// A slot's name, then ":" or, in a namespace other than the default,
	// "@" and the namespace up to its ":" ([store.RecordID]).
	at := strings.IndexAny(s, ":@")
	if at < 0 {
		return false
	}
	if !blackboard.Slot(s[:at]).Valid() {
		return false
	}
	rest := s[at+1:]
	if s[at] == '@' {
		j := strings.IndexByte(rest, ':')
		if j < 0 {
			return false
		}
		rest = rest[j+1:]
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
	rec     *blackboard.Record
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

func asConstraint(r *blackboard.Record) constraint {
	c := constraint{rec: r, name: r.Kind, enabled: true}
	if n, ok := r.Payload[keyName].(string); ok && n != "" {
		c.name = n
	}
	if e, ok := r.Payload[keyEnabled].(bool); ok {
		c.enabled = e
	}
	c.field, _ = r.Payload[keyBlocksField].(string)
	c.bind, _ = r.Payload[keyBindPercept].(string)
	c.types = list(r.Payload, keyAppliesTo)
	return c
}

// constraints returns the enabled constraints in force for the trace: the
// latest of each kind among the trace's own episode-scope constraints, and
// the latest of each kind among persistent ones. A trace cannot switch off a
// persistent constraint: the two sets are enforced side by side.
func (s *snapshot) constraints() []constraint {
	own := func(r *blackboard.Record) bool {
		return r.Slot == blackboard.Constraints && committedActive(r) && r.Scope != blackboard.ScopePersistent
	}
	persistent := func(r *blackboard.Record) bool { return !r.ExpiredAt(s.nowMS) }
	s.cons = latestConstraints(latestConstraints(s.cons[:0], s.st.cons, own), s.persistent, persistent)
	return s.cons
}

// latestConstraints appends, in append order, the enabled constraints among
// recs that are the latest record of their kind that in accepts. Traces hold
// few constraints, so a quadratic scan beats building a set.
func latestConstraints(out []constraint, recs []blackboard.Record, in func(*blackboard.Record) bool) []constraint {
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

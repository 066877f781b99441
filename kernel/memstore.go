package kernel

import (
	"context"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// MemStore is the in-memory [Store] that [New] uses when no store is given.
// It lives in this package, as raft's InmemStore does, so that the kernel
// works with zero configuration without importing store/.
//
// Records are kept by value in one block per trace, and every index points
// at them by position rather than by pointer: listing or searching one trace
// costs the same however many other traces the store holds, and a store of
// millions of records gives the garbage collector few pointers to chase.
// MemStore holds at most 2^31 records and 2^31 traces. It is safe for
// concurrent use.
type MemStore struct {
	mu         sync.RWMutex
	closed     bool
	n          int               // records held
	others     map[string]memLoc // records whose id does not give their position
	traceIdx   map[string]int32
	traces     []memTrace
	slab       []Record // carved into trace blocks, so few large allocations serve many traces
	locs       []memLoc // carved into the first blocks of the slot indexes
	slots      [Actions + 1][]memLoc
	persistent [Actions + 1][]memLoc
	claims     map[claimKey]string  // once-key in its namespace → record id
	shared     map[string]memShared // namespace → change counter of its persistent constraints
	batch      uint64               // batches applied, to count one change per trace per batch
}

// memShared counts the changes of one namespace's persistent constraints
// (see [StateStore]).
type memShared struct {
	version uint64
	bumped  uint64 // the batch that last counted a change
}

// claimKey is a once-key in its key space.
type claimKey struct{ namespace, key string }

// memTrace holds one trace's records in append order, its change counter
// and the decision state last stored with a batch (see [StateStore]).
type memTrace struct {
	recs         []Record
	version      uint64
	bumped       uint64 // the batch that last counted a change
	stateVersion uint64
	state        StateValue
}

// memLoc is a record's position: trace block and index within it.
type memLoc struct{ trace, idx int32 }

// A trace block starts with room for blockCap records (a governed episode
// fits); blocks are carved from slabs of up to slabTraces blocks. A longer
// trace grows its block with append as usual.
const (
	blockCap   = 12
	slabTraces = 256
	indexBlock = 8
)

// find locates a record. Kernel ids, "{slot}:{trace}:{n}" with n the
// record's position in its trace, are found through the trace block, so the
// store needs no map over every id; any other id is in s.others.
func (s *MemStore) find(id string) (memLoc, bool) {
	if trace, n, ok := splitID(id); ok {
		if t, ok := s.traceIdx[trace]; ok && n < len(s.traces[t].recs) && s.traces[t].recs[n].ID == id {
			return memLoc{trace: t, idx: int32(n)}, true
		}
	}
	l, ok := s.others[id]
	return l, ok
}

// splitID parses "{slot}:{trace}:{n}" into the trace and n-1 (the index in
// the trace block).
func splitID(id string) (trace string, idx int, ok bool) {
	first, last := strings.IndexByte(id, ':'), strings.LastIndexByte(id, ':')
	if first < 0 || last <= first+1 || last == len(id)-1 {
		return "", 0, false
	}
	n, err := strconv.Atoi(id[last+1:])
	if err != nil || n < 1 || id[last+1] == '+' || id[last+1] == '0' {
		return "", 0, false
	}
	return id[first+1 : last], n - 1, true
}

// NewMemStore returns an empty in-memory store.
func NewMemStore() *MemStore {
	// Its maps are made on first use: most stores never need them.
	return &MemStore{}
}

var _ StateStore = (*MemStore)(nil)

// ClaimedBy implements [Store].
func (s *MemStore) ClaimedBy(ctx context.Context, namespace, key string) (string, error) {
	if err := s.lock(ctx, false); err != nil {
		return "", err
	}
	defer s.unlock(false)
	if id, ok := s.claims[claimKey{nsOf(namespace), key}]; ok {
		return id, nil
	}
	return "", fmt.Errorf("%w: once-key %q is not claimed in namespace %q", ErrNotFound, key, nsOf(namespace))
}

func (s *MemStore) at(l memLoc) *Record { return &s.traces[l.trace].recs[l.idx] }

// Len returns the number of records held.
func (s *MemStore) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.n
}

// Append implements [Store].
func (s *MemStore) Append(ctx context.Context, rec Record) error {
	return s.Apply(ctx, Batch{Appends: []Record{rec}})
}

// lock takes the read (or write) lock after checking ctx and that the
// store is open; on success the caller must call unlock with the same write.
func (s *MemStore) lock(ctx context.Context, write bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if write {
		s.mu.Lock()
	} else {
		s.mu.RLock()
	}
	if s.closed {
		s.unlock(write)
		return ErrClosed
	}
	return nil
}

func (s *MemStore) unlock(write bool) {
	if write {
		s.mu.Unlock()
	} else {
		s.mu.RUnlock()
	}
}

// Get implements [Store].
func (s *MemStore) Get(ctx context.Context, id string) (Record, error) {
	if err := s.lock(ctx, false); err != nil {
		return Record{}, err
	}
	defer s.unlock(false)
	l, ok := s.find(id)
	if !ok {
		return Record{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return *s.at(l), nil
}

// ListSlot implements [Store].
func (s *MemStore) ListSlot(ctx context.Context, slot Slot, f Filter) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		if err := checkFilter(slot, f); err != nil {
			yield(Record{}, err)
			return
		}
		if err := s.lock(ctx, false); err != nil {
			yield(Record{}, err)
			return
		}
		out := s.appendSlot(nil, slot, f)
		s.unlock(false)
		// Yield outside the lock: the caller may call back into the store.
		for _, r := range out {
			if !yield(r, nil) {
				return
			}
		}
	}
}

func (s *MemStore) appendSlot(dst []Record, slot Slot, f Filter) []Record {
	src := s.slots[slot]
	if f.Scope == ScopePersistent {
		src = s.persistent[slot]
	}
	for _, l := range src {
		if r := s.at(l); f.Match(r) {
			dst = append(dst, *r)
		}
	}
	return dst
}

// FindActive implements [Store].
func (s *MemStore) FindActive(ctx context.Context, traceID string, slot Slot, kind string) (Record, error) {
	if err := s.lock(ctx, false); err != nil {
		return Record{}, err
	}
	defer s.unlock(false)
	if t, ok := s.traceIdx[traceID]; ok {
		recs := s.traces[t].recs
		for i := len(recs) - 1; i >= 0; i-- {
			r := &recs[i]
			if r.Slot == slot && r.Kind == kind && r.Status == StatusActive {
				return *r, nil
			}
		}
	}
	return Record{}, fmt.Errorf("%w: no active %s %q in trace %q", ErrNotFound, slot, kind, traceID)
}

// Invalidate implements [Store].
func (s *MemStore) Invalidate(ctx context.Context, id string, status Status, reason Code) error {
	return s.Apply(ctx, Batch{Invalidations: []Invalidation{{ID: id, Status: status, Reason: reason}}})
}

// Apply implements [Store]. Every part of the batch is checked before any of
// it is applied, under one lock, so the batch is atomic.
func (s *MemStore) Apply(ctx context.Context, b Batch) error { return s.apply(ctx, b, true) }

// applyNormalized implements [normalizedApplier].
func (s *MemStore) applyNormalized(ctx context.Context, b Batch) error {
	return s.apply(ctx, b, false)
}

// apply applies b; checkPayloads says whether the payloads' strings still
// need checking.
func (s *MemStore) apply(ctx context.Context, b Batch, checkPayloads bool) error {
	if err := s.lock(ctx, true); err != nil {
		return err
	}
	defer s.unlock(true)
	if err := s.check(b, checkPayloads); err != nil {
		return err
	}
	// Each trace the batch touches counts one change, however many
	// records of it the batch touches.
	s.batch++
	for _, inv := range b.Invalidations {
		l, _ := s.find(inv.ID)
		r := s.at(l)
		r.Status, r.Reason = inv.Status, inv.Reason
		s.bump(l.trace)
		s.bumpShared(r)
	}
	for i := range b.Appends {
		rec := b.Appends[i]
		rec.Namespace = nsOf(rec.Namespace)
		s.bump(s.add(rec))
		s.bumpShared(&rec)
	}
	if b.State != nil && b.Trace != "" {
		if t, ok := s.traceIdx[b.Trace]; ok {
			tr := &s.traces[t]
			tr.state, tr.stateVersion = b.State, tr.version
		}
	}
	for _, c := range b.Claims {
		if s.claims == nil {
			s.claims = make(map[claimKey]string)
		}
		s.claims[claimKey{nsOf(c.Namespace), c.Key}] = c.RecordID
	}
	return nil
}

// bump counts the current batch's change to trace t (once per batch).
func (s *MemStore) bump(t int32) {
	if tr := &s.traces[t]; tr.bumped != s.batch {
		tr.version++
		tr.bumped = s.batch
	}
}

// bumpShared counts the current batch's change to the persistent
// constraints of r's namespace (once per batch) if r is one of them; r's
// namespace is as stored.
func (s *MemStore) bumpShared(r *Record) {
	if r.Slot != Constraints || r.Scope != ScopePersistent {
		return
	}
	if s.shared == nil {
		s.shared = make(map[string]memShared)
	}
	if c := s.shared[r.Namespace]; c.bumped != s.batch {
		s.shared[r.Namespace] = memShared{version: c.version + 1, bumped: s.batch}
	}
}

// ReadState implements [StateStore]. Shared starts at 0 for a namespace.
func (s *MemStore) ReadState(ctx context.Context, namespace, traceID string) (TraceState, error) {
	if err := s.lock(ctx, false); err != nil {
		return TraceState{}, err
	}
	defer s.unlock(false)
	shared := s.shared[nsOf(namespace)].version
	t, ok := s.traceIdx[traceID]
	if !ok {
		return TraceState{Shared: shared}, nil
	}
	tr := &s.traces[t]
	st := TraceState{Len: len(tr.recs), Version: tr.version, Shared: shared, StateVersion: tr.stateVersion, Value: tr.state}
	if len(tr.recs) > 0 {
		st.Namespace = tr.recs[0].Namespace
	}
	return st, nil
}

// add appends a checked record, indexes it and returns its trace's index.
// The caller holds the lock.
func (s *MemStore) add(rec Record) int32 {
	t, ok := s.traceIdx[rec.Provenance.TraceID]
	if !ok {
		t = int32(len(s.traces))
		s.traces = append(s.traces, memTrace{})
		if s.traceIdx == nil {
			s.traceIdx = make(map[string]int32)
		}
		s.traceIdx[rec.Provenance.TraceID] = t
	}
	tr := &s.traces[t]
	if tr.recs == nil {
		if len(s.slab) < blockCap {
			// Slabs grow with the store, so a store of one trace stays small.
			s.slab = make([]Record, min(len(s.traces), slabTraces)*blockCap)
		}
		tr.recs, s.slab = s.slab[:0:blockCap], s.slab[blockCap:]
	}
	l := memLoc{trace: t, idx: int32(len(tr.recs))}
	tr.recs = append(tr.recs, rec)
	if trace, n, ok := splitID(rec.ID); !ok || trace != rec.Provenance.TraceID || n != int(l.idx) {
		if s.others == nil {
			s.others = make(map[string]memLoc)
		}
		s.others[rec.ID] = l
	}
	s.n++
	s.slots[rec.Slot] = s.index(s.slots[rec.Slot], l)
	if rec.Scope == ScopePersistent {
		s.persistent[rec.Slot] = s.index(s.persistent[rec.Slot], l)
	}
	return t
}

// index appends l to a slot index. An index's first indexBlock entries
// come from one shared allocation, so that a small store (a kernel per
// episode) does not allocate each of its indexes as it grows.
func (s *MemStore) index(dst []memLoc, l memLoc) []memLoc {
	if cap(dst) == 0 {
		if len(s.locs) < indexBlock {
			s.locs = make([]memLoc, (Actions+1)*indexBlock)
		}
		dst, s.locs = s.locs[:0:indexBlock], s.locs[indexBlock:]
	}
	return append(dst, l)
}

func (s *MemStore) check(b Batch, checkPayloads bool) error {
	if b.SharedNamespace != "" && !mutSharedCache {
		if v := s.shared[nsOf(b.SharedNamespace)].version; v != b.Shared {
			return fmt.Errorf("%w: the persistent constraints of namespace %q changed (%d, not %d)", ErrConflict, nsOf(b.SharedNamespace), v, b.Shared)
		}
	}
	if b.Trace != "" {
		n := 0
		if t, ok := s.traceIdx[b.Trace]; ok {
			n = len(s.traces[t].recs)
		}
		if n != b.TraceLen {
			return fmt.Errorf("%w: trace %q holds %d records, not %d", ErrConflict, b.Trace, n, b.TraceLen)
		}
		if b.State != nil {
			var v uint64
			if t, ok := s.traceIdx[b.Trace]; ok {
				v = s.traces[t].version
			}
			if v != b.Version && !mutStateVersion {
				return fmt.Errorf("%w: trace %q is at version %d, not %d", ErrConflict, b.Trace, v, b.Version)
			}
		}
	}
	// Batches are small: a quadratic scan for duplicates inside the batch
	// beats allocating a set.
	for i := range b.Appends {
		r := &b.Appends[i]
		if err := checkStorable(r, checkPayloads); err != nil {
			return err
		}
		if err := s.checkTraceNamespace(b.Appends[:i], r); err != nil {
			return err
		}
		if _, dup := s.find(r.ID); dup {
			return fmt.Errorf("%w: %s", ErrDuplicateID, r.ID)
		}
		for j := range i {
			if b.Appends[j].ID == r.ID {
				return fmt.Errorf("%w: %s twice in one batch", ErrDuplicateID, r.ID)
			}
		}
	}
	for i, c := range b.Claims {
		if err := checkClaim(c); err != nil {
			return err
		}
		if _, taken := s.claims[claimKey{nsOf(c.Namespace), c.Key}]; taken {
			return fmt.Errorf("%w: %q", ErrDuplicateKey, c.Key)
		}
		for j := range i {
			if b.Claims[j].Key == c.Key && nsOf(b.Claims[j].Namespace) == nsOf(c.Namespace) {
				return fmt.Errorf("%w: %q twice in one batch", ErrDuplicateKey, c.Key)
			}
		}
	}
	for i, inv := range b.Invalidations {
		if err := checkTransition(inv); err != nil {
			return err
		}
		l, ok := s.find(inv.ID)
		if !ok {
			return fmt.Errorf("%w: %s", ErrNotFound, inv.ID)
		}
		if st := s.at(l).Status; st != StatusActive {
			return fmt.Errorf("%w: %s is %s", ErrNotActive, inv.ID, st)
		}
		for j := range i {
			if b.Invalidations[j].ID == inv.ID {
				return fmt.Errorf("%w: %s changed twice in one batch", ErrNotActive, inv.ID)
			}
		}
	}
	return nil
}

// checkTraceNamespace refuses a record whose namespace differs from its
// trace's (the trace as stored, or as earlier appends of the batch start
// it): a trace belongs to one namespace.
func (s *MemStore) checkTraceNamespace(earlier []Record, r *Record) error {
	ns, have := nsOf(r.Namespace), ""
	if t, ok := s.traceIdx[r.Provenance.TraceID]; ok && len(s.traces[t].recs) > 0 {
		have = s.traces[t].recs[0].Namespace
	} else {
		for j := range earlier {
			if earlier[j].Provenance.TraceID == r.Provenance.TraceID {
				have = nsOf(earlier[j].Namespace)
				break
			}
		}
	}
	if have != "" && have != ns {
		return fmt.Errorf("%w: trace %q belongs to namespace %q, not %q", ErrPermission, r.Provenance.TraceID, have, ns)
	}
	return nil
}

// maxSpanLen bounds Provenance.Span: a W3C traceparent is 55 bytes.
const maxSpanLen = 128

// nsOf is the namespace a store keeps for ns.
func nsOf(ns string) string {
	if ns == "" {
		return DefaultNamespace
	}
	return ns
}

// CountTrace returns how many records a trace holds.
func (s *MemStore) CountTrace(ctx context.Context, traceID string) (int, error) {
	if err := s.lock(ctx, false); err != nil {
		return 0, err
	}
	defer s.unlock(false)
	if t, ok := s.traceIdx[traceID]; ok {
		return len(s.traces[t].recs), nil
	}
	return 0, nil
}

// ListTrace implements [Store].
func (s *MemStore) ListTrace(ctx context.Context, traceID string) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		if err := s.lock(ctx, false); err != nil {
			yield(Record{}, err)
			return
		}
		out := s.appendTrace(nil, traceID)
		s.unlock(false)
		for _, r := range out {
			if !yield(r, nil) {
				return
			}
		}
	}
}

// AppendTrace appends the records of one trace, in append order, to dst
// and returns the extended slice: [MemStore.ListTrace] into memory the
// caller reuses. As with every store read, the records share memory with
// the store and must not be modified.
func (s *MemStore) AppendTrace(ctx context.Context, dst []Record, traceID string) ([]Record, error) {
	if err := s.lock(ctx, false); err != nil {
		return dst, err
	}
	defer s.unlock(false)
	return s.appendTrace(dst, traceID), nil
}

func (s *MemStore) appendTrace(dst []Record, traceID string) []Record {
	if t, ok := s.traceIdx[traceID]; ok {
		dst = append(dst, s.traces[t].recs...)
	}
	return dst
}

// Close implements [Store]. It drops every record.
func (s *MemStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	s.others, s.traceIdx, s.traces, s.slab, s.locs, s.claims, s.shared = nil, nil, nil, nil, nil, nil, nil
	s.slots, s.persistent = [Actions + 1][]memLoc{}, [Actions + 1][]memLoc{}
	return nil
}

// checkStorable is the minimum any store demands of a record it appends.
// Stores call it through [CheckRecord].
func checkStorable(r *Record, checkPayload bool) error {
	switch {
	case r.ID == "":
		return fmt.Errorf("%w: empty record id", ErrInvalidInput)
	case !r.Slot.Valid():
		return fmt.Errorf("%w: record %s: bad slot", ErrInvalidInput, r.ID)
	case !r.Mode.Valid():
		return fmt.Errorf("%w: record %s: bad mode", ErrInvalidInput, r.ID)
	case !r.Status.Valid():
		return fmt.Errorf("%w: record %s: bad status", ErrInvalidInput, r.ID)
	case !r.Scope.Valid():
		return fmt.Errorf("%w: record %s: bad scope", ErrInvalidInput, r.ID)
	case !r.Provenance.Role.Valid():
		return fmt.Errorf("%w: record %s: bad role", ErrInvalidInput, r.ID)
	case r.Kind == "":
		return fmt.Errorf("%w: record %s: empty kind", ErrInvalidInput, r.ID)
	case r.Provenance.TraceID == "":
		return fmt.Errorf("%w: record %s: empty trace id", ErrInvalidInput, r.ID)
	case r.Provenance.TTLMS < 0 || r.Provenance.TTLMS > maxTTLMS:
		return fmt.Errorf("%w: record %s: ttl_ms %d outside [0, %d]", ErrInvalidInput, r.ID, r.Provenance.TTLMS, maxTTLMS)
	case len(r.Provenance.Span) > maxSpanLen:
		return fmt.Errorf("%w: record %s: span longer than %d bytes", ErrInvalidInput, r.ID, maxSpanLen)
	}
	if !validUTF8(r.ID, r.Kind, r.Provenance.TraceID, r.Provenance.Writer, string(r.Reason), r.Namespace, r.Provenance.Span) ||
		!validUTF8(r.Provenance.InputRefs...) || !validUTF8(r.EvidenceRefs...) {
		return fmt.Errorf("%w: record %s: a string is not valid UTF-8", ErrInvalidInput, r.ID)
	}
	if checkPayload && !utf8Value(map[string]any(r.Payload)) {
		return fmt.Errorf("%w: record %s: a payload string is not valid UTF-8", ErrInvalidPayload, r.ID)
	}
	return nil
}

func validUTF8(ss ...string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// utf8Value reports whether every string in a payload value (keys
// included) is valid UTF-8.
func utf8Value(v any) bool {
	switch x := v.(type) {
	case string:
		return utf8.ValidString(x)
	case map[string]any:
		for k, e := range x {
			if !utf8.ValidString(k) || !utf8Value(e) {
				return false
			}
		}
	case Payload:
		return utf8Value(map[string]any(x))
	case []any:
		for _, e := range x {
			if !utf8Value(e) {
				return false
			}
		}
	case []string:
		return validUTF8(x...)
	}
	return true
}

// CheckClaim validates a once-key claim before a store applies it.
func CheckClaim(c Claim) error { return checkClaim(c) }

func checkClaim(c Claim) error {
	if c.Key == "" || c.RecordID == "" || !validUTF8(c.Key, c.RecordID, c.Namespace) {
		return fmt.Errorf("%w: claim needs a valid key and record id", ErrInvalidInput)
	}
	return nil
}

// CheckFilter validates the arguments of [Store.ListSlot].
func CheckFilter(slot Slot, f Filter) error { return checkFilter(slot, f) }

func checkFilter(slot Slot, f Filter) error {
	switch {
	case !slot.Valid():
		return fmt.Errorf("%w: slot %d", ErrInvalidInput, slot)
	case f.Status != 0 && !f.Status.Valid():
		return fmt.Errorf("%w: filter status %d", ErrInvalidInput, f.Status)
	case f.Scope != 0 && !f.Scope.Valid():
		return fmt.Errorf("%w: filter scope %d", ErrInvalidInput, f.Scope)
	}
	return nil
}

func checkTransition(inv Invalidation) error {
	if inv.Status != StatusInvalidated && inv.Status != StatusExpired {
		return fmt.Errorf("%w: %s: a record can only become INVALIDATED or EXPIRED, not %s", ErrInvalidInput, inv.ID, inv.Status)
	}
	if inv.Reason == "" {
		return fmt.Errorf("%w: %s: invalidation without a reason code", ErrInvalidInput, inv.ID)
	}
	return nil
}

// CheckRecord validates the fields every store requires of a record before
// appending it. Store implementations call it so that all stores refuse the
// same malformed input with the same error.
func CheckRecord(r Record) error { return checkStorable(&r, true) }

// CheckInvalidation validates a status change before a store applies it.
func CheckInvalidation(inv Invalidation) error { return checkTransition(inv) }

package memstore

import (
	"context"
	"fmt"
	"iter"
	"sync"

	"github.com/blackboardkernel/bk/blackboard"
)

var _ blackboard.TraceLister = (*Store)(nil)

// Store is the in-memory [blackboard.Store], the one a kernel uses when it
// is given none.
//
// Records are kept by value in one block per trace, and every index points
// at them by position rather than by pointer: listing or searching one trace
// costs the same however many other traces the store holds, and a store of
// millions of records gives the garbage collector few pointers to chase.
// A Store holds at most 2^31 records and 2^31 traces. It is safe for
// concurrent use.
type Store struct {
	mu         sync.RWMutex
	closed     bool
	n          int               // records held
	others     map[string]memLoc // records whose id does not give their position
	traceIdx   map[string]int32
	traces     []memTrace
	slab       []blackboard.Record // carved into trace blocks, so few large allocations serve many traces
	locs       []memLoc            // carved into the first blocks of the slot indexes
	slots      [blackboard.Actions + 1][]memLoc
	persistent [blackboard.Actions + 1][]memLoc
	claims     map[claimKey]string  // once-key in its namespace → record id
	shared     map[string]memShared // namespace → change counter of its persistent constraints
	batch      uint64               // batches applied, to count one change per trace per batch
}

// memShared counts the changes of one namespace's persistent constraints
// (see [blackboard.StateStore]).
type memShared struct {
	version uint64
	bumped  uint64 // the batch that last counted a change
}

// claimKey is a once-key in its key space.
type claimKey struct{ namespace, key string }

// memTrace holds one trace's records in append order, its change counter
// and the decision state last stored with a batch (see [blackboard.StateStore]).
type memTrace struct {
	recs         []blackboard.Record
	version      uint64
	bumped       uint64 // the batch that last counted a change
	stateVersion uint64
	state        blackboard.StateValue
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
func (s *Store) find(id string) (memLoc, bool) {
	if trace, n, ok := blackboard.SplitRecordID(id); ok {
		if t, ok := s.traceIdx[trace]; ok && n < len(s.traces[t].recs) && s.traces[t].recs[n].ID == id {
			return memLoc{trace: t, idx: int32(n)}, true
		}
	}
	l, ok := s.others[id]
	return l, ok
}

// New returns an empty in-memory store.
func New() *Store {
	// Its maps are made on first use: most stores never need them.
	return &Store{}
}

var _ blackboard.StateStore = (*Store)(nil)

// ClaimedBy implements [blackboard.Store].
func (s *Store) ClaimedBy(ctx context.Context, namespace, key string) (string, error) {
	if err := s.lock(ctx, false); err != nil {
		return "", err
	}
	defer s.unlock(false)
	if id, ok := s.claims[claimKey{blackboard.NamespaceOf(namespace), key}]; ok {
		return id, nil
	}
	return "", fmt.Errorf("%w: once-key %q is not claimed in namespace %q", blackboard.ErrNotFound, key, blackboard.NamespaceOf(namespace))
}

func (s *Store) at(l memLoc) *blackboard.Record { return &s.traces[l.trace].recs[l.idx] }

// Len returns the number of records held.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.n
}

// Append implements [blackboard.Store].
func (s *Store) Append(ctx context.Context, rec blackboard.Record) error {
	return s.Apply(ctx, blackboard.Batch{Appends: []blackboard.Record{rec}})
}

// lock takes the read (or write) lock after checking ctx and that the
// store is open; on success the caller must call unlock with the same write.
func (s *Store) lock(ctx context.Context, write bool) error {
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
		return blackboard.ErrClosed
	}
	return nil
}

func (s *Store) unlock(write bool) {
	if write {
		s.mu.Unlock()
	} else {
		s.mu.RUnlock()
	}
}

// Get implements [blackboard.Store].
func (s *Store) Get(ctx context.Context, id string) (blackboard.Record, error) {
	if err := s.lock(ctx, false); err != nil {
		return blackboard.Record{}, err
	}
	defer s.unlock(false)
	l, ok := s.find(id)
	if !ok {
		return blackboard.Record{}, fmt.Errorf("%w: %s", blackboard.ErrNotFound, id)
	}
	return *s.at(l), nil
}

// ListSlot implements [blackboard.Store].
func (s *Store) ListSlot(ctx context.Context, slot blackboard.Slot, f blackboard.Filter) iter.Seq2[blackboard.Record, error] {
	return func(yield func(blackboard.Record, error) bool) {
		if err := blackboard.CheckFilter(slot, f); err != nil {
			yield(blackboard.Record{}, err)
			return
		}
		if err := s.lock(ctx, false); err != nil {
			yield(blackboard.Record{}, err)
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

func (s *Store) appendSlot(dst []blackboard.Record, slot blackboard.Slot, f blackboard.Filter) []blackboard.Record {
	src := s.slots[slot]
	if f.Scope == blackboard.ScopePersistent {
		src = s.persistent[slot]
	}
	for _, l := range src {
		if r := s.at(l); f.Match(r) {
			dst = append(dst, *r)
		}
	}
	return dst
}

// FindActive implements [blackboard.Store].
func (s *Store) FindActive(ctx context.Context, traceID string, slot blackboard.Slot, kind string) (blackboard.Record, error) {
	if err := s.lock(ctx, false); err != nil {
		return blackboard.Record{}, err
	}
	defer s.unlock(false)
	if t, ok := s.traceIdx[traceID]; ok {
		recs := s.traces[t].recs
		for i := len(recs) - 1; i >= 0; i-- {
			r := &recs[i]
			if r.Slot == slot && r.Kind == kind && r.Status == blackboard.StatusActive {
				return *r, nil
			}
		}
	}
	return blackboard.Record{}, fmt.Errorf("%w: no active %s %q in trace %q", blackboard.ErrNotFound, slot, kind, traceID)
}

// Invalidate implements [blackboard.Store].
func (s *Store) Invalidate(ctx context.Context, id string, status blackboard.Status, reason blackboard.Code) error {
	return s.Apply(ctx, blackboard.Batch{Invalidations: []blackboard.Invalidation{{ID: id, Status: status, Reason: reason}}})
}

// Apply implements [blackboard.Store]. Every part of the batch is checked
// before any of it is applied, under one lock, so the batch is atomic.
func (s *Store) Apply(ctx context.Context, b blackboard.Batch) error {
	if err := s.lock(ctx, true); err != nil {
		return err
	}
	defer s.unlock(true)
	if err := s.check(&b); err != nil {
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
		rec.Namespace = blackboard.NamespaceOf(rec.Namespace)
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
		s.claims[claimKey{blackboard.NamespaceOf(c.Namespace), c.Key}] = c.RecordID
	}
	return nil
}

// bump counts the current batch's change to trace t (once per batch).
func (s *Store) bump(t int32) {
	if tr := &s.traces[t]; tr.bumped != s.batch {
		tr.version++
		tr.bumped = s.batch
	}
}

// bumpShared counts the current batch's change to the persistent
// constraints of r's namespace (once per batch) if r is one of them; r's
// namespace is as stored.
func (s *Store) bumpShared(r *blackboard.Record) {
	if r.Slot != blackboard.Constraints || r.Scope != blackboard.ScopePersistent {
		return
	}
	if s.shared == nil {
		s.shared = make(map[string]memShared)
	}
	if c := s.shared[r.Namespace]; c.bumped != s.batch {
		s.shared[r.Namespace] = memShared{version: c.version + 1, bumped: s.batch}
	}
}

// ReadState implements [blackboard.StateStore]. Shared starts at 0 for a namespace.
func (s *Store) ReadState(ctx context.Context, namespace, traceID string) (blackboard.TraceState, error) {
	if err := s.lock(ctx, false); err != nil {
		return blackboard.TraceState{}, err
	}
	defer s.unlock(false)
	shared := s.shared[blackboard.NamespaceOf(namespace)].version
	t, ok := s.traceIdx[traceID]
	if !ok {
		return blackboard.TraceState{Shared: shared}, nil
	}
	tr := &s.traces[t]
	st := blackboard.TraceState{Len: len(tr.recs), Version: tr.version, Shared: shared, StateVersion: tr.stateVersion, Value: tr.state}
	if len(tr.recs) > 0 {
		st.Namespace = tr.recs[0].Namespace
	}
	return st, nil
}

// add appends a checked record, indexes it and returns its trace's index.
// The caller holds the lock.
func (s *Store) add(rec blackboard.Record) int32 {
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
			s.slab = make([]blackboard.Record, min(len(s.traces), slabTraces)*blockCap)
		}
		tr.recs, s.slab = s.slab[:0:blockCap], s.slab[blockCap:]
	}
	l := memLoc{trace: t, idx: int32(len(tr.recs))}
	tr.recs = append(tr.recs, rec)
	if trace, n, ok := blackboard.SplitRecordID(rec.ID); !ok || trace != rec.Provenance.TraceID || n != int(l.idx) {
		if s.others == nil {
			s.others = make(map[string]memLoc)
		}
		s.others[rec.ID] = l
	}
	s.n++
	s.slots[rec.Slot] = s.index(s.slots[rec.Slot], l)
	if rec.Scope == blackboard.ScopePersistent {
		s.persistent[rec.Slot] = s.index(s.persistent[rec.Slot], l)
	}
	return t
}

// index appends l to a slot index. An index's first indexBlock entries
// come from one shared allocation, so that a small store (a kernel per
// episode) does not allocate each of its indexes as it grows.
func (s *Store) index(dst []memLoc, l memLoc) []memLoc {
	if cap(dst) == 0 {
		if len(s.locs) < indexBlock {
			s.locs = make([]memLoc, (blackboard.Actions+1)*indexBlock)
		}
		dst, s.locs = s.locs[:0:indexBlock], s.locs[indexBlock:]
	}
	return append(dst, l)
}

func (s *Store) check(b *blackboard.Batch) error {
	if b.SharedNamespace != "" && !mutSharedCache() {
		if v := s.shared[blackboard.NamespaceOf(b.SharedNamespace)].version; v != b.Shared {
			return fmt.Errorf("%w: the persistent constraints of namespace %q changed (%d, not %d)", blackboard.ErrConflict, blackboard.NamespaceOf(b.SharedNamespace), v, b.Shared)
		}
	}
	if b.Trace != "" {
		n := 0
		if t, ok := s.traceIdx[b.Trace]; ok {
			n = len(s.traces[t].recs)
		}
		if n != b.TraceLen {
			return fmt.Errorf("%w: trace %q holds %d records, not %d", blackboard.ErrConflict, b.Trace, n, b.TraceLen)
		}
		if b.State != nil {
			var v uint64
			if t, ok := s.traceIdx[b.Trace]; ok {
				v = s.traces[t].version
			}
			if v != b.Version && !mutStateVersion() {
				return fmt.Errorf("%w: trace %q is at version %d, not %d", blackboard.ErrConflict, b.Trace, v, b.Version)
			}
		}
	}
	if err := b.CheckRecords(); err != nil {
		return err
	}
	// Batches are small: a quadratic scan for duplicates inside the batch
	// beats allocating a set.
	for i := range b.Appends {
		r := &b.Appends[i]
		if err := s.checkTraceNamespace(b.Appends[:i], r); err != nil {
			return err
		}
		if _, dup := s.find(r.ID); dup {
			return fmt.Errorf("%w: %s", blackboard.ErrDuplicateID, r.ID)
		}
		for j := range i {
			if b.Appends[j].ID == r.ID {
				return fmt.Errorf("%w: %s twice in one batch", blackboard.ErrDuplicateID, r.ID)
			}
		}
	}
	for i, c := range b.Claims {
		if err := blackboard.CheckClaim(c); err != nil {
			return err
		}
		if _, taken := s.claims[claimKey{blackboard.NamespaceOf(c.Namespace), c.Key}]; taken {
			return fmt.Errorf("%w: %q", blackboard.ErrDuplicateKey, c.Key)
		}
		for j := range i {
			if b.Claims[j].Key == c.Key && blackboard.NamespaceOf(b.Claims[j].Namespace) == blackboard.NamespaceOf(c.Namespace) {
				return fmt.Errorf("%w: %q twice in one batch", blackboard.ErrDuplicateKey, c.Key)
			}
		}
	}
	for i, inv := range b.Invalidations {
		if err := blackboard.CheckInvalidation(inv); err != nil {
			return err
		}
		l, ok := s.find(inv.ID)
		if !ok {
			return fmt.Errorf("%w: %s", blackboard.ErrNotFound, inv.ID)
		}
		if st := s.at(l).Status; st != blackboard.StatusActive {
			return fmt.Errorf("%w: %s is %s", blackboard.ErrNotActive, inv.ID, st)
		}
		for j := range i {
			if b.Invalidations[j].ID == inv.ID {
				return fmt.Errorf("%w: %s changed twice in one batch", blackboard.ErrNotActive, inv.ID)
			}
		}
	}
	return nil
}

// checkTraceNamespace refuses a record whose namespace differs from its
// trace's (the trace as stored, or as earlier appends of the batch start
// it): a trace belongs to one namespace.
func (s *Store) checkTraceNamespace(earlier []blackboard.Record, r *blackboard.Record) error {
	ns, have := blackboard.NamespaceOf(r.Namespace), ""
	if t, ok := s.traceIdx[r.Provenance.TraceID]; ok && len(s.traces[t].recs) > 0 {
		have = s.traces[t].recs[0].Namespace
	} else {
		for j := range earlier {
			if earlier[j].Provenance.TraceID == r.Provenance.TraceID {
				have = blackboard.NamespaceOf(earlier[j].Namespace)
				break
			}
		}
	}
	if have != "" && have != ns {
		return fmt.Errorf("%w: trace %q belongs to namespace %q, not %q", blackboard.ErrPermission, r.Provenance.TraceID, have, ns)
	}
	return nil
}

// CountTrace returns how many records a trace holds.
func (s *Store) CountTrace(ctx context.Context, traceID string) (int, error) {
	if err := s.lock(ctx, false); err != nil {
		return 0, err
	}
	defer s.unlock(false)
	if t, ok := s.traceIdx[traceID]; ok {
		return len(s.traces[t].recs), nil
	}
	return 0, nil
}

// ListTrace implements [blackboard.Store].
func (s *Store) ListTrace(ctx context.Context, traceID string) iter.Seq2[blackboard.Record, error] {
	return func(yield func(blackboard.Record, error) bool) {
		if err := s.lock(ctx, false); err != nil {
			yield(blackboard.Record{}, err)
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

func (s *Store) appendTrace(dst []blackboard.Record, traceID string) []blackboard.Record {
	if t, ok := s.traceIdx[traceID]; ok {
		dst = append(dst, s.traces[t].recs...)
	}
	return dst
}

// Close implements [blackboard.Store]. It drops every record.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return blackboard.ErrClosed
	}
	s.closed = true
	s.others, s.traceIdx, s.traces, s.slab, s.locs, s.claims, s.shared = nil, nil, nil, nil, nil, nil, nil
	s.slots, s.persistent = [blackboard.Actions + 1][]memLoc{}, [blackboard.Actions + 1][]memLoc{}
	return nil
}

// ListTraces implements [blackboard.TraceLister].
func (s *Store) ListTraces(ctx context.Context, namespace string) iter.Seq2[blackboard.TraceSummary, error] {
	return func(yield func(blackboard.TraceSummary, error) bool) {
		if err := s.lock(ctx, false); err != nil {
			yield(blackboard.TraceSummary{}, err)
			return
		}
		var out []blackboard.TraceSummary
		for i := range s.traces {
			recs := s.traces[i].recs
			if len(recs) == 0 || namespace != "" && blackboard.NamespaceOf(recs[0].Namespace) != namespace {
				continue
			}
			t := blackboard.TraceSummary{TraceID: recs[0].TraceID(), Namespace: blackboard.NamespaceOf(recs[0].Namespace), Records: len(recs),
				FirstMS: recs[0].Provenance.TimestampMS, LastMS: recs[0].Provenance.TimestampMS}
			for j := range recs {
				t.FirstMS = min(t.FirstMS, recs[j].Provenance.TimestampMS)
				t.LastMS = max(t.LastMS, recs[j].Provenance.TimestampMS)
			}
			out = append(out, t)
		}
		s.unlock(false)
		for _, t := range out {
			if !yield(t, nil) {
				return
			}
		}
	}
}

// AppendTrace appends the records of one trace, in append order, to dst
// and returns the extended slice: [Store.ListTrace] into memory the
// caller reuses. As with every store read, the records share memory with
// the store and must not be modified.
func (s *Store) AppendTrace(ctx context.Context, dst []blackboard.Record, traceID string) ([]blackboard.Record, error) {
	if err := s.lock(ctx, false); err != nil {
		return dst, err
	}
	defer s.unlock(false)
	return s.appendTrace(dst, traceID), nil
}

package memstore

import (
	"cmp"
	"context"
	"encoding"
	"fmt"
	"iter"
	"slices"
	"sync"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

var _ store.TraceLister = (*Store)(nil)

// Store is the in-memory [store.Store], the one a kernel uses when it
// is given none.
//
// Records are kept by value in one block per trace, and every index points
// at them by position rather than by pointer: listing or searching one trace
// costs the same however many other traces the store holds, and a store of
// millions of records gives the garbage collector few pointers to chase.
// A record is kept in a compact form ([memRec]): its trace id and namespace
// once per trace, its rarely set fields apart, its five enumerations in
// 16 bits, and, once recentRecords
// newer records of its slot have been appended, its payload packed into
// shared arrays of key/value pairs instead of a map (a map of a few keys
// costs about twice as much). Reading a packed record builds a new map for
// it; the records written last, which a kernel's decisions read, keep
// theirs.
//
// A store of one short trace (a kernel per episode) keeps it in one
// allocation sized for an episode and builds no index: the slot indexes,
// the slabs of trace blocks and the packs are made together ([memIndex])
// when a second trace begins or the first outgrows its block, and a
// listing until then reads the few records of that trace.
// A Store holds at most 2^31 records and 2^31 traces; payloads are packed
// into at most 2^32 pairs, past which they keep their maps. It is safe for
// concurrent use.
type Store struct {
	mu       sync.RWMutex
	closed   bool
	window   int32                // records of a slot that keep their payload maps: recentRecords (0 in a test)
	n        int                  // records held
	batch    uint64               // batches applied, to count one change per trace per batch
	one      [1]memTrace          // the first trace's entry, so that a store of one trace allocates no list of traces
	traces   []memTrace           // in order of their first append
	traceIdx map[traceKey]int32   // made with the second trace (see traceOf)
	others   map[string]memLoc    // records whose id does not give their position
	claims   map[claimKey]string  // once-key in its namespace → record id
	shared   map[string]memShared // namespace → change counter of its persistent constraints
	mores    []memMore            // carved one at a time for the records that need one
	ix       *memIndex            // nil while the store holds one trace of at most firstCap records
	first    *firstBlock          // the first trace's block, which Close recycles
	lslab    []memLink            // carved into the traces' first chain blocks
	changes  []memChange          // the status changes of every trace (see memLink)
}

// memIndex is what a store past one short trace needs: the slot indexes
// (every record of a slot, and its persistent ones, in append order),
// where their first blocks and the trace blocks are carved from, and the
// packed payloads.
type memIndex struct {
	slots      [numSlots][]memLoc // indexed by the slot's code (memRec.slotCode)
	persistent [numSlots][]memLoc
	locs       []memLoc    // carved into the first blocks of the slot indexes
	slab       []memRec    // carved into trace blocks, so few large allocations serve many traces
	packs      [][]memPair // arrays of packed payloads; the last one is filled next
}

// memShared counts the changes of one namespace's persistent constraints
// (see [store.StateStore]).
type memShared struct {
	version uint64
	bumped  uint64 // the batch that last counted a change
}

// traceKey names a trace: its namespace (as stored) and id. One trace id
// in two namespaces is two traces.
type traceKey struct{ namespace, id string }

// keyOf is the key of trace id of namespace ns (as given).
func keyOf(ns, id string) traceKey {
	if mutTraceNamespace() {
		return traceKey{id: id} // every namespace's traces in one space
	}
	return namespacedKey(ns, id)
}

// namespacedKey is keyOf's work: one trace id in two namespaces is two
// keys.
func namespacedKey(ns, id string) traceKey {
	return traceKey{cmp.Or(ns, blackboard.DefaultNamespace), id}
}

// key is the trace's own key.
func (tr *memTrace) key() traceKey { return keyOf(tr.namespace, tr.id) }

// claimKey is a once-key in its key space.
type claimKey struct{ namespace, key string }

// memTrace holds one trace's records in append order, the id and namespace
// they share, its change counter and the decision state last stored with a
// batch (see [store.StateStore]).
type memTrace struct {
	id, namespace string
	recs          []memRec
	version       uint64
	bumped        uint64 // the batch that last counted a change
	stateVersion  uint64
	state         encoding.BinaryMarshaler
	// links is the trace's hash chain, one entry per event (see
	// [store.Chainer]).
	links []memLink
}

// memLink is one event of a trace's chain and its link: an append
// (change 0), whose record is the next of the trace in append order, or
// the status change Store.changes[change-1]. A status change's new status
// and reason are its record's (a record changes status once).
type memLink struct {
	link   chain.Hash
	change int32
}

// memChange is a status change: the record's index in its trace and the
// reason it was appended with (its record now holds the new one).
type memChange struct {
	idx  int32
	born reason.Code
}

// linkBlock is the room a trace's chain starts with, carved from a slab
// shared by many traces, sized for an episode: its chain costs no
// allocation of its own.
const linkBlock = 12

// New returns an empty in-memory store.
func New() *Store {
	// Its maps are made on first use: most stores never need them.
	return &Store{window: recentRecords}
}

var _ store.StateStore = (*Store)(nil)

// ClaimedBy implements [store.Store].
func (s *Store) ClaimedBy(ctx context.Context, namespace, key string) (string, error) {
	if err := s.lock(ctx, false); err != nil {
		return "", err
	}
	defer s.unlock(false)
	if id, ok := s.claims[claimKey{cmp.Or(namespace, blackboard.DefaultNamespace), key}]; ok {
		return id, nil
	}
	// The bare sentinel: the kernel asks about keys that are usually free
	// on every once-keyed decision, and a message would be an allocation.
	return "", blackboard.ErrNotFound
}

func (s *Store) at(l memLoc) *memRec { return &s.traces[l.trace].recs[l.idx] }

// Len returns the number of records held.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.n
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

// Get implements [store.Store].
func (s *Store) Get(ctx context.Context, id string) (blackboard.Record, error) {
	if err := s.lock(ctx, false); err != nil {
		return blackboard.Record{}, err
	}
	defer s.unlock(false)
	l, ok := s.find(id)
	if !ok {
		return blackboard.Record{}, fmt.Errorf("%w: %s", blackboard.ErrNotFound, id)
	}
	var r blackboard.Record
	tr := &s.traces[l.trace]
	m := &tr.recs[l.idx]
	fill(&r, tr, m)
	r.Payload = s.payload(m)
	return r, nil
}

// ListSlot implements [store.Store].
func (s *Store) ListSlot(ctx context.Context, slot blackboard.Slot, f store.Filter) iter.Seq2[blackboard.Record, error] {
	if s.nothingIn(ctx, slot, f) {
		return noRecords
	}
	return func(yield func(blackboard.Record, error) bool) {
		if err := store.CheckFilter(slot, f); err != nil {
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

// nothingIn reports whether a listing of slot with f, asked for now,
// holds nothing: its index is empty. Such a listing is [noRecords], which
// costs no allocation (a kernel made for one episode lists the persistent
// constraints of a store that has none). It answers false whenever the
// listing would yield an error, which the listing itself then reports.
func (s *Store) nothingIn(ctx context.Context, slot blackboard.Slot, f store.Filter) bool {
	if store.CheckFilter(slot, f) != nil || s.lock(ctx, false) != nil {
		return false
	}
	defer s.unlock(false)
	if s.ix == nil {
		if len(s.traces) == 1 {
			for i := range s.traces[0].recs {
				m := &s.traces[0].recs[i]
				if m.slot() == slot && (f.Scope != blackboard.ScopePersistent || m.scope() == blackboard.ScopePersistent) {
					return false
				}
			}
		}
		return true
	}
	if f.Scope == blackboard.ScopePersistent {
		return len(s.ix.persistent[code(slotOf[:], slot)]) == 0
	}
	return len(s.ix.slots[code(slotOf[:], slot)]) == 0
}

// noRecords is the listing of nothing.
func noRecords(func(blackboard.Record, error) bool) {}

// appendSlot appends the records of slot that match f, in append order:
// those of its index or, in a store without indexes, of its one trace.
func (s *Store) appendSlot(dst []blackboard.Record, slot blackboard.Slot, f store.Filter) []blackboard.Record {
	if s.ix == nil {
		if len(s.traces) == 1 {
			tr := &s.traces[0]
			for i := range tr.recs {
				if m := &tr.recs[i]; m.slot() == slot {
					dst = s.appendMatch(dst, f, tr, m)
				}
			}
		}
		return dst
	}
	c := code(slotOf[:], slot)
	src := s.ix.slots[c]
	if f.Scope == blackboard.ScopePersistent {
		src = s.ix.persistent[c]
	}
	for _, l := range src {
		tr := &s.traces[l.trace]
		dst = s.appendMatch(dst, f, tr, &tr.recs[l.idx])
	}
	return dst
}

// appendMatch appends the record m of trace tr to dst if it matches f.
func (s *Store) appendMatch(dst []blackboard.Record, f store.Filter, tr *memTrace, m *memRec) []blackboard.Record {
	var r blackboard.Record
	if fill(&r, tr, m); match(f, &r) {
		r.Payload = s.payload(m)
		dst = append(dst, r)
	}
	return dst
}

// FindActive implements [store.Store].
func (s *Store) FindActive(ctx context.Context, namespace, traceID string, slot blackboard.Slot, kind string) (blackboard.Record, error) {
	if err := s.lock(ctx, false); err != nil {
		return blackboard.Record{}, err
	}
	defer s.unlock(false)
	if t, ok := s.traceOf(namespace, traceID); ok {
		tr := &s.traces[t]
		for i := len(tr.recs) - 1; i >= 0; i-- {
			m := &tr.recs[i]
			if m.slot() == slot && m.kind == kind && m.status() == blackboard.StatusActive {
				var r blackboard.Record
				fill(&r, tr, m)
				r.Payload = s.payload(m)
				return r, nil
			}
		}
	}
	return blackboard.Record{}, fmt.Errorf("%w: no active %s %q in trace %q of namespace %q", blackboard.ErrNotFound, slot, kind, traceID, cmp.Or(namespace, blackboard.DefaultNamespace))
}

// ListTrace implements [store.Store].
func (s *Store) ListTrace(ctx context.Context, namespace, traceID string) iter.Seq2[blackboard.Record, error] {
	return func(yield func(blackboard.Record, error) bool) {
		if err := s.lock(ctx, false); err != nil {
			yield(blackboard.Record{}, err)
			return
		}
		out := s.appendTrace(nil, namespace, traceID)
		s.unlock(false)
		for _, r := range out {
			if !yield(r, nil) {
				return
			}
		}
	}
}

func (s *Store) appendTrace(dst []blackboard.Record, namespace, traceID string) []blackboard.Record {
	if t, ok := s.traceOf(namespace, traceID); ok {
		tr := &s.traces[t]
		dst = slices.Grow(dst, len(tr.recs))
		for i := range tr.recs {
			dst = s.appendRecord(dst, tr, &tr.recs[i])
		}
	}
	return dst
}

// Close implements [store.Store]. It drops every record.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return blackboard.ErrClosed
	}
	s.closed = true
	s.others, s.traceIdx, s.traces, s.claims, s.shared, s.mores, s.ix = nil, nil, nil, nil, nil, nil, nil
	s.lslab, s.changes = nil, nil
	s.one = [1]memTrace{}
	if s.first != nil {
		// No method reads the block once the store is closed.
		*s.first = firstBlock{}
		firstBlocks.Put(s.first)
		s.first = nil
	}
	return nil
}

// ListTraces implements [store.TraceLister].
func (s *Store) ListTraces(ctx context.Context, namespace string) iter.Seq2[store.TraceSummary, error] {
	return func(yield func(store.TraceSummary, error) bool) {
		if err := s.lock(ctx, false); err != nil {
			yield(store.TraceSummary{}, err)
			return
		}
		var out []store.TraceSummary
		for i := range s.traces {
			tr := &s.traces[i]
			if len(tr.recs) == 0 || namespace != "" && tr.namespace != namespace {
				continue
			}
			t := store.TraceSummary{TraceID: tr.id, Namespace: tr.namespace, Records: len(tr.recs),
				FirstMS: tr.recs[0].ts, LastMS: tr.recs[0].ts}
			for j := range tr.recs {
				t.FirstMS = min(t.FirstMS, tr.recs[j].ts)
				t.LastMS = max(t.LastMS, tr.recs[j].ts)
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

// AppendTrace appends the records of trace traceID of namespace, in
// append order, to dst and returns the extended slice: [Store.ListTrace]
// into memory the caller reuses. As with every store read, the records
// share memory with the store and must not be modified.
func (s *Store) AppendTrace(ctx context.Context, dst []blackboard.Record, namespace, traceID string) ([]blackboard.Record, error) {
	if err := s.lock(ctx, false); err != nil {
		return dst, err
	}
	defer s.unlock(false)
	return s.appendTrace(dst, namespace, traceID), nil
}

// match reports whether rec passes f (see [store.Filter]).
func match(f store.Filter, rec *blackboard.Record) bool {
	return (f.Status == "" || rec.Status == f.Status) && (f.Scope == "" || rec.Scope == f.Scope) &&
		(f.Namespace == "" || rec.Namespace == f.Namespace)
}

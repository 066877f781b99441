package memstore

import (
	"context"
	"fmt"
	"iter"
	"math"
	"slices"
	"sync"

	"github.com/blackboardkernel/bk/blackboard"
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
}

// memIndex is what a store past one short trace needs: the slot indexes
// (every record of a slot, and its persistent ones, in append order),
// where their first blocks and the trace blocks are carved from, and the
// packed payloads.
type memIndex struct {
	slots      [blackboard.Actions + 1][]memLoc
	persistent [blackboard.Actions + 1][]memLoc
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
	return traceKey{blackboard.NamespaceOf(ns), id}
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
	state         store.StateValue
}

// memRec is a [blackboard.Record] as the store keeps it, in 96 bytes: the
// trace id and namespace are its trace's, the fields most records leave
// empty are in more, the enumerations are bit fields of bits (see
// recBits), and the
// payload is either the map the record was appended with or, once packed
// (bitPacked), pairs packs[pos>>packShift][at:at+keys] with at the low
// packShift bits of pos (keys MaxUint16: the rest of that array, which such
// a payload has to itself).
type memRec struct {
	id, kind string
	writer   string
	reason   blackboard.Code
	payload  blackboard.Payload
	ts       int64
	more     *memMore
	pos      uint32
	keys     uint16
	bits     uint16
}

// The bit fields of memRec.bits. A checked record's slot and role are in
// 1..7 and its mode, status and scope in 1..3.
const (
	bitsSlot   = 0 // 3 bits
	bitsRole   = 3 // 3 bits
	bitsMode   = 6 // 2 bits
	bitsStatus = 8 // 2 bits
	bitsScope  = 10
	bitPacked  = 1 << 12
)

// recBits packs the enumerations of a checked record into memRec.bits.
func recBits(r *blackboard.Record) uint16 {
	return uint16(r.Slot)<<bitsSlot | uint16(r.Provenance.Role)<<bitsRole | uint16(r.Mode)<<bitsMode |
		uint16(r.Status)<<bitsStatus | uint16(r.Scope)<<bitsScope
}

func (m *memRec) slot() blackboard.Slot     { return blackboard.Slot(m.bits >> bitsSlot & 7) }
func (m *memRec) role() blackboard.Role     { return blackboard.Role(m.bits >> bitsRole & 7) }
func (m *memRec) mode() blackboard.Mode     { return blackboard.Mode(m.bits >> bitsMode & 3) }
func (m *memRec) status() blackboard.Status { return blackboard.Status(m.bits >> bitsStatus & 3) }
func (m *memRec) scope() blackboard.Scope   { return blackboard.Scope(m.bits >> bitsScope & 3) }

func (m *memRec) setStatus(st blackboard.Status) {
	m.bits = m.bits&^(3<<bitsStatus) | uint16(st)<<bitsStatus
}

// memMore holds the fields of a record that most records leave empty.
type memMore struct {
	inputRefs, evidenceRefs []string
	confidence              *float64
	ttlMS                   int64
	span                    string
}

// memPair is one key of a packed payload.
type memPair struct {
	key   string
	value any
}

// memLoc is a record's position: trace block and index within it.
type memLoc struct{ trace, idx int32 }

// A store's first trace starts in a block of firstCap records and
// firstMores memMores (a governed episode writes about nine records, two
// thirds of them with input refs: 1,520 bytes, in a 1,536-byte size
// class). Later trace blocks start with room for blockCap records (an
// episode fits) and are carved from slabs of up to slabTraces blocks. A
// longer trace grows its block with append as usual: from eleven records
// of 96 bytes at about the lengths twelve of 104 did before memRec
// shrank (12, 24, 51, 102...), so a long session's cost per call stays
// where it was. Payloads are packed into arrays of packPairs
// pairs, once recentRecords newer records of their slot have been
// appended: the window keeps the maps a kernel's decisions read (the
// records of the trace it is deciding on, just written) and costs a store
// of millions of records nothing worth counting.
const (
	firstCap      = 10
	firstMores    = 7
	blockCap      = 11
	slabTraces    = 256
	indexBlock    = 8
	recentRecords = 4096
	packPairs     = 1 << packShift
	packShift     = 12
)

// firstBlock is the one allocation of a store of one short trace.
type firstBlock struct {
	recs  [firstCap]memRec
	mores [firstMores]memMore
}

// firstBlocks recycles the first blocks of closed stores: a kernel made
// for one episode or request makes a store and closes it, and nothing
// outside a store points into its block (every read copies the fields of
// a record out), so once the store is closed its block can serve the next
// store's first trace.
var firstBlocks = sync.Pool{New: func() any { return new(firstBlock) }}

// find locates a record. Kernel ids ([blackboard.RecordID]), which name the
// record's namespace, trace and position in it, are found through the
// trace block, so the store needs no map over every id; any other id is in
// s.others.
func (s *Store) find(id string) (memLoc, bool) {
	if ns, trace, n, ok := splitID(id); ok {
		if t, ok := s.traceOf(ns, trace); ok && n < len(s.traces[t].recs) && s.traces[t].recs[n].id == id {
			return memLoc{trace: t, idx: int32(n)}, true
		}
	}
	l, ok := s.others[id]
	return l, ok
}

// splitID is [blackboard.SplitRecordID], with the usual kernel id of the
// default namespace (a position of a few digits, no leading zero, after
// the last colon) read here: the general parser's two scans and strconv
// call were a cost every append paid twice, in the duplicate check and in
// add.
func splitID(id string) (namespace, trace string, idx int, ok bool) {
	n, mul, i := 0, 1, len(id)-1
	for ; i >= 0 && id[i] >= '0' && id[i] <= '9'; i-- {
		n += int(id[i]-'0') * mul
		mul *= 10
	}
	if d := len(id) - 1 - i; d == 0 || d > 18 || i < 0 || id[i] != ':' || id[i+1] == '0' {
		return blackboard.SplitRecordID(id)
	}
	// The first colon ends a slot's name, a few bytes in: a loop finds it
	// sooner than a call to strings.IndexByte.
	first := 0
	for first < i && id[first] != ':' && id[first] != '@' {
		first++
	}
	if first < i && id[first] == '@' {
		return blackboard.SplitRecordID(id) // another namespace's id
	}
	if first+1 >= i {
		return "", "", 0, false
	}
	return blackboard.DefaultNamespace, id[first+1 : i], n - 1, true
}

// fill sets *r to the record m of trace tr as callers see it, but for its
// payload: enough for a filter. It writes in place, since a record is
// large to copy.
func fill(r *blackboard.Record, tr *memTrace, m *memRec) {
	*r = blackboard.Record{ID: m.id, Slot: m.slot(), Mode: m.mode(), Kind: m.kind, Status: m.status(), Reason: m.reason, Scope: m.scope(), Namespace: tr.namespace,
		Provenance: blackboard.Provenance{Role: m.role(), Writer: m.writer, TraceID: tr.id, TimestampMS: m.ts}}
	if x := m.more; x != nil {
		r.Provenance.InputRefs, r.Provenance.Confidence, r.Provenance.TTLMS, r.Provenance.Span = x.inputRefs, x.confidence, x.ttlMS, x.span
		r.EvidenceRefs = x.evidenceRefs
	}
}

// appendRecord appends the record m of trace tr to dst, its payload (a new
// map if m's is packed) shared with the store.
func (s *Store) appendRecord(dst []blackboard.Record, tr *memTrace, m *memRec) []blackboard.Record {
	dst = append(dst, blackboard.Record{})
	r := &dst[len(dst)-1]
	fill(r, tr, m)
	r.Payload = s.payload(m)
	return dst
}

// payload returns m's payload: the map it was appended with, or a new one
// built from its packed pairs.
func (s *Store) payload(m *memRec) blackboard.Payload {
	if m.bits&bitPacked == 0 {
		return m.payload
	}
	pairs := s.ix.packs[m.pos>>packShift][m.pos&(packPairs-1):]
	if m.keys != math.MaxUint16 {
		pairs = pairs[:m.keys]
	}
	p := make(blackboard.Payload, len(pairs))
	for _, kv := range pairs {
		p[kv.key] = kv.value
	}
	return p
}

// pack moves the payload of the record at l from its map into the packs.
// Values are shared, not copied: they are as immutable as the map was.
func (s *Store) pack(l memLoc) {
	m := &s.traces[l.trace].recs[l.idx]
	if m.payload == nil {
		return // nil stays nil; an empty map is packed as no pairs
	}
	n := len(m.payload)
	ix := s.ix
	last := len(ix.packs) - 1
	if last < 0 || cap(ix.packs[last])-len(ix.packs[last]) < n || len(ix.packs[last]) >= packPairs {
		if last+1 >= 1<<(32-packShift) {
			return // pos cannot name another array: the payload keeps its map
		}
		// A payload larger than an array gets one of its own (at 0),
		// whose length keys may not hold: MaxUint16 then means "all of
		// it".
		ix.packs = append(ix.packs, make([]memPair, 0, max(packPairs, n)))
		last++
	}
	at := len(ix.packs[last])
	for k, v := range m.payload {
		ix.packs[last] = append(ix.packs[last], memPair{k, v})
	}
	m.pos, m.keys, m.payload = uint32(last)<<packShift|uint32(at), uint16(min(n, math.MaxUint16)), nil
	m.bits |= bitPacked
}

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
	if id, ok := s.claims[claimKey{blackboard.NamespaceOf(namespace), key}]; ok {
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
		return len(s.ix.persistent[slot]) == 0
	}
	return len(s.ix.slots[slot]) == 0
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
	src := s.ix.slots[slot]
	if f.Scope == blackboard.ScopePersistent {
		src = s.ix.persistent[slot]
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
	if fill(&r, tr, m); f.Match(&r) {
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
	return blackboard.Record{}, fmt.Errorf("%w: no active %s %q in trace %q of namespace %q", blackboard.ErrNotFound, slot, kind, traceID, blackboard.NamespaceOf(namespace))
}

// Apply implements [store.Store]. Every part of the batch is checked
// before any of it is applied, under one lock, so the batch is atomic.
func (s *Store) Apply(ctx context.Context, b store.Batch) error {
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
		m := s.at(l)
		m.setStatus(inv.Status)
		m.reason = inv.Reason
		s.bump(l.trace)
		s.bumpShared(m.slot(), m.scope(), s.traces[l.trace].namespace)
	}
	for i := range b.Appends {
		rec := &b.Appends[i]
		t := s.add(rec)
		s.bump(t)
		s.bumpShared(rec.Slot, rec.Scope, s.traces[t].namespace)
	}
	if b.State != nil && b.Trace != "" {
		if t, ok := s.traceOf(b.TraceNamespace, b.Trace); ok {
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
// constraints of namespace ns (as stored, once per batch) if a record of
// that slot and scope is one of them.
func (s *Store) bumpShared(slot blackboard.Slot, scope blackboard.Scope, ns string) {
	if slot != blackboard.Constraints || scope != blackboard.ScopePersistent {
		return
	}
	if s.shared == nil {
		s.shared = make(map[string]memShared)
	}
	if c := s.shared[ns]; c.bumped != s.batch {
		s.shared[ns] = memShared{version: c.version + 1, bumped: s.batch}
	}
}

// ReadState implements [store.StateStore]. Shared starts at 0 for a namespace.
func (s *Store) ReadState(ctx context.Context, namespace, traceID string) (store.TraceState, error) {
	if err := s.lock(ctx, false); err != nil {
		return store.TraceState{}, err
	}
	defer s.unlock(false)
	shared := s.shared[blackboard.NamespaceOf(namespace)].version
	t, ok := s.traceOf(namespace, traceID)
	if !ok {
		return store.TraceState{Shared: shared}, nil
	}
	tr := &s.traces[t]
	st := store.TraceState{Len: len(tr.recs), Version: tr.version, Shared: shared, StateVersion: tr.stateVersion, Value: tr.state}
	if len(tr.recs) > 0 {
		st.Namespace = tr.namespace
	}
	return st, nil
}

// add appends a checked record, indexes it and returns its trace's index.
// The caller holds the lock.
func (s *Store) add(rec *blackboard.Record) int32 {
	p := &rec.Provenance
	t, ok := s.traceOf(rec.Namespace, p.TraceID)
	if !ok {
		t = int32(len(s.traces))
		if t == 0 {
			s.traces = s.one[:0]
		} else if s.ix == nil {
			s.indexAll()
		}
		s.traces = append(s.traces, memTrace{id: p.TraceID, namespace: blackboard.NamespaceOf(rec.Namespace)})
		if t == 1 {
			s.traceIdx = map[traceKey]int32{s.traces[0].key(): 0}
		}
		if t > 0 {
			s.traceIdx[s.traces[t].key()] = t
		}
	}
	tr := &s.traces[t]
	switch {
	case t == 0 && tr.recs == nil:
		// Many stores hold one trace: its block comes with room for the
		// rare fields of its records, in one allocation (zero, as a
		// closed store leaves it).
		s.first = firstBlocks.Get().(*firstBlock)
		tr.recs, s.mores = s.first.recs[:0], s.first.mores[:]
	case tr.recs == nil:
		ix := s.ix
		if len(ix.slab) < blockCap {
			// Slabs grow with the store, so a store of few traces stays small.
			ix.slab = make([]memRec, min(len(s.traces), slabTraces)*blockCap)
		}
		tr.recs, ix.slab = ix.slab[:0:blockCap], ix.slab[blockCap:]
	}
	if s.ix == nil && (len(tr.recs) == firstCap || s.window < firstCap) {
		s.indexAll()
	}
	l := memLoc{trace: t, idx: int32(len(tr.recs))}
	// The record is written where it is kept, not built aside and copied
	// there; so is its memMore. The room past a block's length is zero
	// (blocks are only appended to), so it is taken as it is rather than
	// zeroed again, which costs a record's size in write barriers while
	// the collector runs.
	if len(tr.recs) < cap(tr.recs) {
		tr.recs = tr.recs[:l.idx+1]
	} else {
		tr.recs = append(tr.recs, memRec{})
	}
	m := &tr.recs[l.idx]
	m.id, m.kind, m.writer, m.reason, m.payload, m.ts = rec.ID, rec.Kind, p.Writer, rec.Reason, rec.Payload, p.TimestampMS
	m.bits = recBits(rec)
	if p.InputRefs != nil || rec.EvidenceRefs != nil || p.Confidence != nil || p.TTLMS != 0 || p.Span != "" {
		if len(s.mores) == 0 {
			s.mores = make([]memMore, max(1, min(s.n, slabTraces*blockCap/4)))
		}
		x := &s.mores[0]
		s.mores = s.mores[1:]
		x.inputRefs, x.evidenceRefs, x.confidence, x.ttlMS, x.span = p.InputRefs, rec.EvidenceRefs, p.Confidence, p.TTLMS, p.Span
		m.more = x
	}
	if ns, trace, n, ok := splitID(rec.ID); !ok || trace != p.TraceID || ns != tr.namespace || n != int(l.idx) {
		if s.others == nil {
			s.others = make(map[string]memLoc)
		}
		s.others[rec.ID] = l
	}
	s.n++
	if s.ix != nil {
		s.indexRec(l, m)
	}
	return t
}

// indexAll makes the store's indexes and indexes the records of its one
// trace: the store is about to outgrow what a listing may read without
// them.
func (s *Store) indexAll() {
	s.ix = new(memIndex)
	if len(s.traces) == 1 {
		for i := range s.traces[0].recs {
			s.indexRec(memLoc{trace: 0, idx: int32(i)}, &s.traces[0].recs[i])
		}
	}
}

// indexRec appends the record m at l to its slot's indexes, and packs the
// payload of the record of that slot that leaves the window.
func (s *Store) indexRec(l memLoc, m *memRec) {
	ix, slot := s.ix, m.slot()
	idx := s.index(ix.slots[slot], l)
	ix.slots[slot] = idx
	if m.scope() == blackboard.ScopePersistent {
		ix.persistent[slot] = s.index(ix.persistent[slot], l)
	}
	// The record of the slot s.window appends ago leaves the window.
	if w := int(s.window); len(idx) > w {
		s.pack(idx[len(idx)-1-w])
	}
}

// traceOf returns the position of trace id of namespace ns (as given) in
// s.traces. A store of one trace (a kernel per episode, say) keeps no map:
// it is made with the second trace.
func (s *Store) traceOf(ns, id string) (int32, bool) {
	k := keyOf(ns, id)
	if s.traceIdx == nil {
		return 0, len(s.traces) == 1 && s.traces[0].key() == k
	}
	t, ok := s.traceIdx[k]
	return t, ok
}

// index appends l to a slot index. An index's first indexBlock entries
// come from one shared allocation, so that a small store (a kernel per
// episode) does not allocate each of its indexes as it grows.
func (s *Store) index(dst []memLoc, l memLoc) []memLoc {
	if cap(dst) == 0 {
		ix := s.ix
		if len(ix.locs) < indexBlock {
			ix.locs = make([]memLoc, (blackboard.Actions+1)*indexBlock)
		}
		dst, ix.locs = ix.locs[:0:indexBlock], ix.locs[indexBlock:]
	}
	return append(dst, l)
}

func (s *Store) check(b *store.Batch) error {
	if b.SharedNamespace != "" && !mutSharedCache() {
		if v := s.shared[blackboard.NamespaceOf(b.SharedNamespace)].version; v != b.Shared {
			return fmt.Errorf("%w: the persistent constraints of namespace %q changed (%d, not %d)", blackboard.ErrConflict, blackboard.NamespaceOf(b.SharedNamespace), v, b.Shared)
		}
	}
	// held is the trace the batch is about (Trace, else its first
	// append's) when the store holds it: its id and namespace are strings
	// the store checked when it stored them, so the batch's records need
	// not be scanned for them again.
	var held *memTrace
	if b.Trace != "" {
		n, v := 0, uint64(0)
		if t, ok := s.traceOf(b.TraceNamespace, b.Trace); ok {
			held = &s.traces[t]
			n, v = len(held.recs), held.version
		}
		if n != b.TraceLen {
			return fmt.Errorf("%w: trace %q holds %d records, not %d", blackboard.ErrConflict, b.Trace, n, b.TraceLen)
		}
		if b.State != nil && v != b.Version && !mutStateVersion() {
			return fmt.Errorf("%w: trace %q is at version %d, not %d", blackboard.ErrConflict, b.Trace, v, b.Version)
		}
	} else if len(b.Appends) > 0 {
		if t, ok := s.traceOf(b.Appends[0].Namespace, b.Appends[0].Provenance.TraceID); ok {
			held = &s.traces[t]
		}
	}
	heldID, heldNS := "", ""
	if held != nil {
		heldID, heldNS = held.id, held.namespace
	}
	if err := b.CheckRecordsHeld(heldID, heldNS); err != nil {
		return err
	}
	// Batches are small: a quadratic scan for duplicates inside the batch
	// beats allocating a set.
	for i := range b.Appends {
		r := &b.Appends[i]
		tr := held
		if tr == nil || tr.key() != keyOf(r.Namespace, r.Provenance.TraceID) {
			tr = nil
			if t, ok := s.traceOf(r.Namespace, r.Provenance.TraceID); ok {
				tr = &s.traces[t]
			}
		}
		if s.holds(r.ID, tr) {
			return fmt.Errorf("%w: %s", store.ErrDuplicateID, r.ID)
		}
		for j := range i {
			if b.Appends[j].ID == r.ID {
				return fmt.Errorf("%w: %s twice in one batch", store.ErrDuplicateID, r.ID)
			}
		}
	}
	for i, c := range b.Claims {
		if err := store.CheckClaim(c); err != nil {
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
		if err := store.CheckInvalidation(inv); err != nil {
			return err
		}
		l, ok := s.find(inv.ID)
		if !ok {
			return fmt.Errorf("%w: %s", blackboard.ErrNotFound, inv.ID)
		}
		if st := s.at(l).status(); st != blackboard.StatusActive {
			return fmt.Errorf("%w: %s is %s", store.ErrNotActive, inv.ID, st)
		}
		for j := range i {
			if b.Invalidations[j].ID == inv.ID {
				return fmt.Errorf("%w: %s changed twice in one batch", store.ErrNotActive, inv.ID)
			}
		}
	}
	return nil
}

// holds reports whether the store holds a record with that id, given tr,
// the trace of the record that would have it (nil: one the store does not
// hold): an id of the kernel's form of that trace is where its position
// says, or among the others, and tr saves finding the trace again.
func (s *Store) holds(id string, tr *memTrace) bool {
	if ns, trace, n, ok := splitID(id); ok && tr != nil && trace == tr.id && ns == tr.namespace {
		if n < len(tr.recs) && tr.recs[n].id == id {
			return true
		}
		_, ok := s.others[id]
		return ok
	}
	_, ok := s.find(id)
	return ok
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

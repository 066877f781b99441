package memstore

import (
	"cmp"
	"context"
	"fmt"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/store"
)

// Apply implements [store.Store]. Every part of the batch is checked
// before any of it is applied, under one lock, so the batch is atomic.
func (s *Store) Apply(ctx context.Context, b store.Batch) error {
	// The appends' content digests need nothing the store holds: they are
	// computed before the lock, so that writers hash side by side. A
	// record without one changes nothing, once the checks that come
	// first have passed.
	var small [8]chain.Hash
	digests := small[:0]
	var digestErr error
	for i := range b.Appends {
		d, err := chain.AppendDigest(&b.Appends[i])
		if err != nil && digestErr == nil {
			digestErr = fmt.Errorf("memstore: %w: %w", blackboard.ErrInvalidPayload, err)
		}
		digests = append(digests, d)
	}
	if err := s.lock(ctx, true); err != nil {
		return err
	}
	defer s.unlock(true)
	if err := s.check(&b); err != nil {
		return err
	}
	if digestErr != nil {
		return digestErr
	}
	// Each trace the batch touches counts one change, however many
	// records of it the batch touches.
	s.batch++
	for _, inv := range b.Invalidations {
		l, _ := s.find(inv.ID)
		m := s.at(l)
		tr := &s.traces[l.trace]
		s.changes = append(s.changes, memChange{idx: l.idx, born: m.reason})
		m.setStatus(inv.Status)
		m.reason = inv.Reason
		s.extend(tr, int32(len(s.changes)), chain.TransitionDigest(m.id, inv.Status, inv.Reason))
		s.bump(l.trace)
		s.bumpShared(m.slot(), m.scope(), tr.namespace)
	}
	for i := range b.Appends {
		rec := &b.Appends[i]
		t := s.add(rec)
		tr := &s.traces[t]
		link := s.extend(tr, 0, digests[i])
		if i < len(b.Links) {
			b.Links[i] = link
		}
		s.bump(t)
		s.bumpShared(rec.Slot, rec.Scope, tr.namespace)
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
		s.claims[claimKey{cmp.Or(c.Namespace, blackboard.DefaultNamespace), c.Key}] = c.RecordID
	}
	return nil
}

// extend adds an event to trace tr's chain (an append, or status change
// number change, see memLink) and returns its link.
func (s *Store) extend(tr *memTrace, change int32, digest chain.Hash) chain.Hash {
	var prev chain.Hash
	if n := len(tr.links); n > 0 {
		prev = tr.links[n-1].link
	} else if tr.links == nil {
		if len(s.lslab) < linkBlock {
			s.lslab = make([]memLink, min(len(s.traces), slabTraces)*linkBlock)
		}
		tr.links, s.lslab = s.lslab[:0:linkBlock], s.lslab[linkBlock:]
	}
	link := chain.Next(prev, uint64(len(tr.links)), digest)
	tr.links = append(tr.links, memLink{link: link, change: change})
	return link
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
	shared := s.shared[cmp.Or(namespace, blackboard.DefaultNamespace)].version
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
		s.traces = append(s.traces, memTrace{id: p.TraceID, namespace: cmp.Or(rec.Namespace, blackboard.DefaultNamespace)})
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
	ix, slot := s.ix, m.slotCode()
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
			ix.locs = make([]memLoc, numSlots*indexBlock)
		}
		dst, ix.locs = ix.locs[:0:indexBlock], ix.locs[indexBlock:]
	}
	return append(dst, l)
}

func (s *Store) check(b *store.Batch) error {
	if b.SharedNamespace != "" && !mutSharedCache() {
		if v := s.shared[cmp.Or(b.SharedNamespace, blackboard.DefaultNamespace)].version; v != b.Shared {
			return fmt.Errorf("%w: the persistent constraints of namespace %q changed (%d, not %d)", blackboard.ErrConflict, cmp.Or(b.SharedNamespace, blackboard.DefaultNamespace), v, b.Shared)
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
	if err := b.Check(heldID, heldNS); err != nil {
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
		if _, taken := s.claims[claimKey{cmp.Or(c.Namespace, blackboard.DefaultNamespace), c.Key}]; taken {
			return fmt.Errorf("%w: %q", blackboard.ErrDuplicateKey, c.Key)
		}
		for j := range i {
			if b.Claims[j].Key == c.Key && cmp.Or(b.Claims[j].Namespace, blackboard.DefaultNamespace) == cmp.Or(c.Namespace, blackboard.DefaultNamespace) {
				return fmt.Errorf("%w: %q twice in one batch", blackboard.ErrDuplicateKey, c.Key)
			}
		}
	}
	for i, inv := range b.Invalidations {
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

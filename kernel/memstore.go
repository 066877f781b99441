package kernel

import (
	"context"
	"fmt"
	"iter"
	"sync"
)

// MemStore is the in-memory [Store] that [New] uses when no store is given.
// It lives in this package, as raft's InmemStore does, so that the kernel
// works with zero configuration without importing store/.
//
// Records are kept per trace, so listing or searching one trace costs the
// same however many other traces the store holds. MemStore is safe for
// concurrent use.
type MemStore struct {
	mu         sync.RWMutex
	closed     bool
	byID       map[string]*memRecord
	traces     map[string][]*memRecord
	slots      [Actions + 1][]*memRecord
	persistent [Actions + 1][]*memRecord
}

type memRecord struct{ rec Record }

// NewMemStore returns an empty in-memory store.
func NewMemStore() *MemStore {
	return &MemStore{
		byID:   make(map[string]*memRecord),
		traces: make(map[string][]*memRecord),
	}
}

var _ Store = (*MemStore)(nil)

// Len returns the number of records held.
func (s *MemStore) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.byID)
}

// Append implements [Store].
func (s *MemStore) Append(ctx context.Context, rec Record) error {
	return s.Apply(ctx, Batch{Appends: []Record{rec}})
}

// Get implements [Store].
func (s *MemStore) Get(ctx context.Context, id string) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return Record{}, ErrClosed
	}
	m, ok := s.byID[id]
	if !ok {
		return Record{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return m.rec, nil
}

// ListSlot implements [Store].
func (s *MemStore) ListSlot(ctx context.Context, slot Slot, f Filter) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(Record{}, err)
			return
		}
		if err := checkFilter(slot, f); err != nil {
			yield(Record{}, err)
			return
		}
		s.mu.RLock()
		if s.closed {
			s.mu.RUnlock()
			yield(Record{}, ErrClosed)
			return
		}
		src := s.slots[slot]
		if f.Scope == ScopePersistent {
			src = s.persistent[slot]
		}
		var out []Record
		for _, m := range src {
			if f.Match(&m.rec) {
				out = append(out, m.rec)
			}
		}
		s.mu.RUnlock()
		// Yield outside the lock: the caller may call back into the store.
		for _, r := range out {
			if !yield(r, nil) {
				return
			}
		}
	}
}

// FindActive implements [Store].
func (s *MemStore) FindActive(ctx context.Context, traceID string, slot Slot, kind string) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return Record{}, ErrClosed
	}
	recs := s.traces[traceID]
	for i := len(recs) - 1; i >= 0; i-- {
		r := &recs[i].rec
		if r.Slot == slot && r.Kind == kind && r.Status == StatusActive {
			return *r, nil
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
func (s *MemStore) Apply(ctx context.Context, b Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if err := s.check(b); err != nil {
		return err
	}
	for i := range b.Appends {
		m := &memRecord{rec: b.Appends[i]}
		s.byID[m.rec.ID] = m
		t := m.rec.Provenance.TraceID
		s.traces[t] = append(s.traces[t], m)
		s.slots[m.rec.Slot] = append(s.slots[m.rec.Slot], m)
		if m.rec.Scope == ScopePersistent {
			s.persistent[m.rec.Slot] = append(s.persistent[m.rec.Slot], m)
		}
	}
	for _, inv := range b.Invalidations {
		m := s.byID[inv.ID]
		m.rec.Status = inv.Status
		m.rec.Reason = inv.Reason
	}
	return nil
}

func (s *MemStore) check(b Batch) error {
	if b.Trace != "" && len(s.traces[b.Trace]) != b.TraceLen {
		return fmt.Errorf("%w: trace %q holds %d records, not %d", ErrConflict, b.Trace, len(s.traces[b.Trace]), b.TraceLen)
	}
	var seen map[string]bool
	if len(b.Appends)+len(b.Invalidations) > 1 {
		seen = make(map[string]bool, len(b.Appends)+len(b.Invalidations))
	}
	for i := range b.Appends {
		r := &b.Appends[i]
		if err := checkStorable(r); err != nil {
			return err
		}
		if _, dup := s.byID[r.ID]; dup || seen[r.ID] {
			return fmt.Errorf("%w: %s", ErrDuplicateID, r.ID)
		}
		if seen != nil {
			seen[r.ID] = true
		}
	}
	for _, inv := range b.Invalidations {
		if err := checkTransition(inv); err != nil {
			return err
		}
		m, ok := s.byID[inv.ID]
		if !ok {
			return fmt.Errorf("%w: %s", ErrNotFound, inv.ID)
		}
		if m.rec.Status != StatusActive || seen[inv.ID] {
			return fmt.Errorf("%w: %s is %s", ErrNotActive, inv.ID, m.rec.Status)
		}
		if seen != nil {
			seen[inv.ID] = true
		}
	}
	return nil
}

// ListTrace implements [Store].
func (s *MemStore) ListTrace(ctx context.Context, traceID string) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(Record{}, err)
			return
		}
		s.mu.RLock()
		if s.closed {
			s.mu.RUnlock()
			yield(Record{}, ErrClosed)
			return
		}
		src := s.traces[traceID]
		out := make([]Record, len(src))
		for i, m := range src {
			out[i] = m.rec
		}
		s.mu.RUnlock()
		for _, r := range out {
			if !yield(r, nil) {
				return
			}
		}
	}
}

// Close implements [Store]. It drops every record.
func (s *MemStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	s.byID, s.traces = nil, nil
	s.slots, s.persistent = [Actions + 1][]*memRecord{}, [Actions + 1][]*memRecord{}
	return nil
}

// checkStorable is the minimum any store demands of a record it appends.
// Stores call it through [CheckRecord].
func checkStorable(r *Record) error {
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
func CheckRecord(r Record) error { return checkStorable(&r) }

// CheckInvalidation validates a status change before a store applies it.
func CheckInvalidation(inv Invalidation) error { return checkTransition(inv) }

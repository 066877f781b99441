package memstore

import (
	"context"
	"iter"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

var _ store.Chainer = (*Store)(nil)

// Chain implements [store.Chainer]. The events are read under the lock
// and yielded outside it.
func (s *Store) Chain(ctx context.Context, namespace, traceID string) iter.Seq2[chain.Event, error] {
	return func(yield func(chain.Event, error) bool) {
		if err := s.lock(ctx, false); err != nil {
			yield(chain.Event{}, err)
			return
		}
		var out []chain.Event
		if t, ok := s.traceOf(namespace, traceID); ok {
			tr := &s.traces[t]
			out = make([]chain.Event, len(tr.links))
			// The reason each record whose status changed was appended with.
			born := map[int32]reason.Code{}
			for _, l := range tr.links {
				if l.change > 0 {
					c := s.changes[l.change-1]
					born[c.idx] = c.born
				}
			}
			var next int32 // the record the next append event appended
			for i, l := range tr.links {
				e := &out[i]
				e.Seq, e.Link = uint64(i), l.link
				if l.change > 0 {
					m := &tr.recs[s.changes[l.change-1].idx]
					e.Op = chain.OpStatus
					e.Record = blackboard.Record{ID: m.id, Namespace: tr.namespace, Status: m.status(), Reason: m.reason,
						Provenance: blackboard.Provenance{TraceID: tr.id}}
					continue
				}
				m := &tr.recs[next]
				e.Op = chain.OpAppend
				fill(&e.Record, tr, m)
				e.Record.Payload = s.payload(m)
				if b, ok := born[next]; ok {
					e.Record.Status, e.Record.Reason = blackboard.StatusActive, b
				}
				next++
			}
		}
		s.unlock(false)
		for _, e := range out {
			if !yield(e, nil) {
				return
			}
		}
	}
}

// Head implements [store.Chainer].
func (s *Store) Head(ctx context.Context, namespace, traceID string) (chain.Head, error) {
	if err := s.lock(ctx, false); err != nil {
		return chain.Head{}, err
	}
	defer s.unlock(false)
	h := chain.Head{Namespace: namespace, Trace: traceID}
	if h.Namespace == "" {
		h.Namespace = blackboard.DefaultNamespace
	}
	if t, ok := s.traceOf(namespace, traceID); ok {
		tr := &s.traces[t]
		if n := len(tr.links); n > 0 {
			h.Len, h.Link = uint64(n), tr.links[n-1].link
		}
	}
	return h, nil
}

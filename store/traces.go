package store

import (
	"cmp"
	"context"
	"iter"
	"slices"

	"github.com/blackboardkernel/bk/blackboard"
)

// TraceSummary describes one trace of a store: its namespace and id (one
// trace id in two namespaces is two traces), how many records it holds and
// the time span its records cover.
type TraceSummary struct {
	TraceID   string `json:"trace_id"`
	Namespace string `json:"namespace"`
	Records   int    `json:"records"`
	FirstMS   int64  `json:"first_ts_ms"` // the earliest record's timestamp
	LastMS    int64  `json:"last_ts_ms"`  // the latest record's timestamp
}

// TraceLister is an optional interface of a [Store] that lists its traces
// without reading every record into the caller: inspectors and analysis
// tools use it (through [ListTraces]); the kernel's hot path never does.
//
// ListTraces streams one summary per trace, in the order of each trace's
// first append, keeping only the traces of namespace when it is not empty.
// The usual listing rules of the [Store] contract apply (a cancelled
// context, a closed store). The conformance suite in store/storetest checks
// an implementation against [ListTraces]'s fallback.
type TraceLister interface {
	ListTraces(ctx context.Context, namespace string) iter.Seq2[TraceSummary, error]
}

// ListTraces lists the traces of s (of namespace, when not empty): through
// [TraceLister] when s implements it, else by reading every slot with
// ListSlot, which costs a pass over the whole store and orders the traces
// by their first timestamp (then id, then namespace) rather than by first
// append. It only
// reads.
func ListTraces(ctx context.Context, s Store, namespace string) iter.Seq2[TraceSummary, error] {
	if tl, ok := s.(TraceLister); ok {
		return tl.ListTraces(ctx, namespace)
	}
	return func(yield func(TraceSummary, error) bool) {
		type key struct{ namespace, trace string }
		byID := map[key]*TraceSummary{}
		for _, slot := range blackboard.AllSlots() {
			for r, err := range s.ListSlot(ctx, slot, Filter{Namespace: namespace}) {
				if err != nil {
					yield(TraceSummary{}, err)
					return
				}
				k := key{cmp.Or(r.Namespace, blackboard.DefaultNamespace), r.Provenance.TraceID}
				t := byID[k]
				if t == nil {
					t = &TraceSummary{TraceID: r.Provenance.TraceID, Namespace: k.namespace, FirstMS: r.Provenance.TimestampMS, LastMS: r.Provenance.TimestampMS}
					byID[k] = t
				}
				t.Records++
				t.FirstMS = min(t.FirstMS, r.Provenance.TimestampMS)
				t.LastMS = max(t.LastMS, r.Provenance.TimestampMS)
			}
		}
		out := make([]TraceSummary, 0, len(byID))
		for _, t := range byID {
			out = append(out, *t)
		}
		slices.SortFunc(out, func(a, b TraceSummary) int {
			return cmp.Or(cmp.Compare(a.FirstMS, b.FirstMS), cmp.Compare(a.TraceID, b.TraceID), cmp.Compare(a.Namespace, b.Namespace))
		})
		for _, t := range out {
			if !yield(t, nil) {
				return
			}
		}
	}
}

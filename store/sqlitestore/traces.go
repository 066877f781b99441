package sqlitestore

import (
	"context"
	"fmt"
	"iter"

	"github.com/blackboardkernel/bk/store"
)

var _ store.TraceLister = (*Store)(nil)

// queryTraces summarises every trace (of one namespace, when ?1 is not
// ”), in the order of each trace's first append: a trace is a namespace
// and an id. It walks the trace index once.
const queryTraces = "SELECT trace_id, namespace, COUNT(*), MIN(ts_ms), MAX(ts_ms) FROM records INDEXED BY records_trace " +
	"WHERE (?1 = '' OR namespace = ?1) GROUP BY trace_id, namespace ORDER BY MIN(seq)"

// ListTraces implements [store.TraceLister]. It reads the summaries in one
// query (a pass over the trace index, so its cost grows with the store: it
// is meant for inspection, not for the hot path) and holds no connection
// while it yields.
func (s *Store) ListTraces(ctx context.Context, namespace string) iter.Seq2[store.TraceSummary, error] {
	return func(yield func(store.TraceSummary, error) bool) {
		out, err := s.traces(ctx, namespace)
		if err != nil {
			yield(store.TraceSummary{}, ctxErr(ctx, err))
			return
		}
		for _, t := range out {
			if !yield(t, nil) {
				return
			}
		}
	}
}

func (s *Store) traces(ctx context.Context, namespace string) ([]store.TraceSummary, error) {
	leave, err := s.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer leave()
	rows, err := s.db.QueryContext(ctx, queryTraces, namespace)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: list traces: %w", err)
	}
	defer rows.Close()
	var out []store.TraceSummary
	for rows.Next() {
		var t store.TraceSummary
		if err := rows.Scan(&t.TraceID, &t.Namespace, &t.Records, &t.FirstMS, &t.LastMS); err != nil {
			return nil, fmt.Errorf("sqlitestore: list traces: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlitestore: list traces: %w", err)
	}
	return out, nil
}

package pgstore_test

import (
	"context"
	"fmt"
	"iter"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/pgtest"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/pgstore"
)

// newStore returns a store in a schema of its own on the shared test pool,
// closed when t ends.
func newStore(tb testing.TB, opts ...pgstore.Option) *pgstore.Store {
	tb.Helper()
	return storeIn(tb, pgtest.Pool(tb), pgtest.Schema(tb), opts...)
}

// storeIn returns a store on pool in schema, closed when tb ends.
func storeIn(tb testing.TB, pool *pgxpool.Pool, schema string, opts ...pgstore.Option) *pgstore.Store {
	tb.Helper()
	s, err := pgstore.New(context.Background(), pool, append([]pgstore.Option{pgstore.WithSchema(schema)}, opts...)...)
	if err != nil {
		tb.Fatalf("pgstore.New in schema %s: %v", schema, err)
	}
	tb.Cleanup(func() { _ = s.Close() }) // a test that closed it gets ErrClosed here
	return s
}

// record returns a well-formed ACTIVE record, in the namespace it reads
// back in.
func record(traceID string, n int) blackboard.Record {
	return blackboard.Record{
		ID: fmt.Sprintf("percepts:%s:%d", traceID, n), Slot: blackboard.Percepts, Mode: blackboard.ModeCommit, Kind: "door",
		Payload:    blackboard.Payload{"n": float64(n)},
		Provenance: blackboard.Provenance{Role: blackboard.RoleTool, Writer: "test", TraceID: traceID, TimestampMS: 1},
		Status:     blackboard.StatusActive, Reason: reason.Committed, Scope: blackboard.ScopeEpisode,
		Namespace: blackboard.DefaultNamespace,
	}
}

func records(tb testing.TB, seq iter.Seq2[blackboard.Record, error]) []blackboard.Record {
	tb.Helper()
	var out []blackboard.Record
	for r, err := range seq {
		if err != nil {
			tb.Fatalf("listing: %v", err)
		}
		out = append(out, r)
	}
	return out
}

// all returns every record of the store, slot by slot.
func all(tb testing.TB, s store.Store) []blackboard.Record {
	tb.Helper()
	var out []blackboard.Record
	for _, slot := range blackboard.AllSlots() {
		out = append(out, records(tb, s.ListSlot(context.Background(), slot, store.Filter{}))...)
	}
	return out
}

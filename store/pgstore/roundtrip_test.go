package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/pgtest"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// TestRoundTrips counts the store's round trips to PostgreSQL for a batch
// and a read of a trace's state, with a pgx tracer on a pool of one
// connection (the round trips of a tool call and of a governed episode are
// counted by toolgate's and kernel's tests, TestPostgresRoundTrips).
func TestRoundTrips(t *testing.T) {
	counter := &pgtest.RoundTrips{}
	pool := pgtest.PoolWith(t, func(cfg *pgxpool.Config) {
		cfg.MaxConns, cfg.MinConns = 1, 0
		cfg.ConnConfig.Tracer = counter
	})
	s := storeIn(t, pool, pgtest.Schema(t))
	ctx := context.Background()

	// A batch that stores a trace's state, with a status change of a
	// persistent constraint in another trace and the append of one, is one
	// round trip, and reading the state back with the namespace's
	// constraint counter is one more (counted, as above, after a first
	// round has prepared the statements).
	persistent := func(r blackboard.Record) blackboard.Record {
		r.Slot, r.ID, r.Scope = blackboard.Constraints, strings.Replace(r.ID, "percepts:", "constraints:", 1), blackboard.ScopePersistent
		return r
	}
	for _, counted := range []bool{false, true} {
		trace, other := fmt.Sprintf("rt-state-%v", counted), fmt.Sprintf("rt-other-%v", counted)
		if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{persistent(record(other, 1))}}); err != nil {
			t.Fatal(err)
		}
		before, err := s.ReadState(ctx, "", other)
		if err != nil {
			t.Fatal(err)
		}
		counter.Take()
		err = s.Apply(ctx, store.Batch{
			Appends:       []blackboard.Record{record(trace, 1), persistent(record(trace, 2))},
			Invalidations: []store.Invalidation{{ID: persistent(record(other, 1)).ID, Status: blackboard.StatusExpired, Reason: reason.TTLExpired}},
			Trace:         trace, TraceLen: 0, State: state("s"),
		})
		if err != nil {
			t.Fatal(err)
		}
		if trips := counter.Take(); counted && len(trips) != 1 {
			t.Errorf("Apply of a batch with a state and a status change: %d round trips, want 1: %q", len(trips), trips)
		}
		st, err := s.ReadState(ctx, "", trace)
		if err != nil || st.StateVersion != 1 || string(st.Data) != "s" || st.Shared != before.Shared+1 {
			t.Fatalf("ReadState = %+v, %v; want the state stored at version 1 and Shared %d", st, err, before.Shared+1)
		}
		if trips := counter.Take(); counted && len(trips) != 1 {
			t.Errorf("ReadState: %d round trips, want 1: %q", len(trips), trips)
		}
	}
}

// state is a decision state whose encoding is its text.
type state string

func (s state) MarshalBinary() ([]byte, error) { return []byte(s), nil }

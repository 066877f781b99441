package sqlitestore_test

import (
	"database/sql"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

// chained returns an ACTIVE record of the kernel's id form (so that a
// walker can tell which trace it came from), n from 1.
func chained(ns, traceID string, slot blackboard.Slot, kind string, n int, payload blackboard.Payload) blackboard.Record {
	return blackboard.Record{
		ID: store.RecordID(slot, ns, traceID, n), Slot: slot, Mode: blackboard.ModeCommit, Kind: kind, Payload: payload,
		Provenance: blackboard.Provenance{Role: blackboard.RoleTool, Writer: "test", TraceID: traceID, TimestampMS: int64(1000 + n)},
		Status:     blackboard.StatusActive, Reason: reason.Committed, Scope: blackboard.ScopeEpisode, Namespace: ns,
	}
}

// rawDB opens a second handle on the store's file, for the attacks.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func mustExec(t *testing.T, db *sql.DB, query string, args ...any) {
	t.Helper()
	if _, err := db.ExecContext(t.Context(), query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func mustApply(t *testing.T, s store.Store, b store.Batch) {
	t.Helper()
	if err := s.Apply(t.Context(), b); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

// wantBreak checks that err is a *chain.Break with fault f at event seq.
func wantBreak(t *testing.T, what string, err error, f chain.Fault, seq uint64) {
	t.Helper()
	var brk *chain.Break
	switch {
	case !errors.As(err, &brk):
		t.Fatalf("%s: VerifyTrace = %v, want a *chain.Break with fault %s", what, err, f)
	case brk.Fault != f || brk.Seq != seq:
		t.Fatalf("%s: VerifyTrace = %v, want fault %s at event %d", what, err, f, seq)
	case !errors.Is(err, chain.ErrBroken):
		t.Fatalf("%s: a break that does not wrap chain.ErrBroken: %v", what, err)
	}
}

// TestChainClean writes several traces through two stores on one file,
// in batches that mix traces, appends and status changes: every trace
// verifies, each store reports the head the walk reaches, and Chain
// yields each record as it was appended and each status change.
func TestChainClean(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "bk.db")
	s1, s2 := mustOpen(t, path), mustOpen(t, path)
	a1 := chained("", "a", blackboard.Percepts, "door", 1, blackboard.Payload{"open": true, "n": 3, "big": int64(1) << 60})
	a2 := chained("", "a", blackboard.Actions, "issue_refund", 2, blackboard.Payload{"amount": 100.5, "to": "acct\u2028é", "items": []any{1, "two", nil, map[string]any{"k": []string{"x"}}}})
	a2.Provenance.Confidence = new(math.Inf(1))
	a2.Provenance.InputRefs = []string{a1.ID}
	a2.EvidenceRefs = []string{}
	b1 := chained("", "b", blackboard.Beliefs, "door_open", 1, nil)
	x1 := chained("acme", "a", blackboard.Evidence, "approval", 1, blackboard.Payload{"approver": "alice"}) // trace a of another namespace
	x1.Provenance.Span = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	mustApply(t, s1, store.Batch{Appends: []blackboard.Record{a1, b1, a2, x1}})

	a3 := chained("", "a", blackboard.Beliefs, "door_open", 3, blackboard.Payload{"v": 1})
	b2 := chained("", "b", blackboard.Beliefs, "door_open", 2, blackboard.Payload{"v": 2})
	mustApply(t, s2, store.Batch{
		Invalidations: []store.Invalidation{
			{ID: b1.ID, Status: blackboard.StatusInvalidated, Reason: reason.SupersededByCommit},
			{ID: a1.ID, Status: blackboard.StatusExpired, Reason: "TTL_EXPIRED"},
		},
		Appends: []blackboard.Record{a3, b2},
	})
	x2 := chained("acme", "a", blackboard.Evidence, "approval", 2, blackboard.Payload{"approver": "bob"})
	mustApply(t, s1, store.Batch{Invalidations: []store.Invalidation{{ID: x1.ID, Status: blackboard.StatusInvalidated, Reason: "REVOKED"}}})
	mustApply(t, s2, store.Batch{Appends: []blackboard.Record{x2}})
	mustApply(t, s1, store.Batch{Invalidations: []store.Invalidation{{ID: a3.ID, Status: blackboard.StatusInvalidated, Reason: "WRONG"}}})

	// Two stores append to one trace at once.
	var wg sync.WaitGroup
	for i, s := range []*sqlitestore.Store{s1, s2} {
		wg.Go(func() {
			for j := range 20 {
				r := chained("", "c", blackboard.Percepts, "tick", 1+i*100+j, blackboard.Payload{"i": i, "j": j})
				if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{r}}); err != nil {
					t.Errorf("Apply: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()

	for _, c := range []struct {
		ns, trace string
		len       uint64
	}{{"", "a", 5}, {"", "b", 3}, {"acme", "a", 3}, {"", "c", 40}, {"", "none", 0}} {
		for _, s := range []*sqlitestore.Store{s1, s2} {
			h, err := store.VerifyTrace(ctx, s, c.ns, c.trace)
			if err != nil {
				t.Fatalf("VerifyTrace(%q, %q): %v", c.ns, c.trace, err)
			}
			if h.Len != c.len || h.Migrated != 0 {
				t.Errorf("VerifyTrace(%q, %q) = %+v, want %d events, none migrated", c.ns, c.trace, h, c.len)
			}
			rec, err := s.Head(ctx, c.ns, c.trace)
			if err != nil || rec != h {
				t.Errorf("Head(%q, %q) = %+v, %v; want %+v, the head the walk reached", c.ns, c.trace, rec, err, h)
			}
		}
	}

	// Trace a's events: the appends as appended, then the batch's status
	// change, its append, and the last status change.
	var got []string
	for e, err := range s1.Chain(ctx, "", "a") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d %s %s %s %s", e.Seq, e.Op, e.Record.ID, e.Record.Status, e.Record.Reason))
		if e.Op == chain.OpAppend && e.Record.ID == a2.ID {
			if d1, err := e.Digest(); err != nil || d1 != mustDigest(t, &a2) {
				t.Errorf("the append of %s reads back with digest %v (%v), not the appended record's", a2.ID, d1, err)
			}
		}
	}
	want := []string{
		"0 append percepts:a:1 ACTIVE COMMITTED",
		"1 append actions:a:2 ACTIVE COMMITTED",
		"2 status percepts:a:1 EXPIRED TTL_EXPIRED",
		"3 append beliefs:a:3 ACTIVE COMMITTED",
		"4 status beliefs:a:3 INVALIDATED WRONG",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Chain(a) = %q, want %q", got, want)
	}
	// Sanity: the current records keep their status.
	if r, err := s2.Get(ctx, a1.ID); err != nil || r.Status != blackboard.StatusExpired || r.Reason != "TTL_EXPIRED" {
		t.Errorf("Get(%s) after its status change = %+v, %v", a1.ID, r, err)
	}
}

func mustDigest(t *testing.T, r *blackboard.Record) chain.Hash {
	t.Helper()
	d, err := chain.AppendDigest(r)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

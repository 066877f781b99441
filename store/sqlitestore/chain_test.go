package sqlitestore_test

import (
	"context"
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
			h, err := store.VerifyTrace(ctx, s, c.ns, c.trace, -1)
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
	// A read-only store walks the same chains.
	ro, err := sqlitestore.OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if h, err := store.VerifyTrace(ctx, ro, "acme", "a", -1); err != nil || h.Len != 3 {
		t.Errorf("VerifyTrace through a read-only store: %+v, %v", h, err)
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

// attackFixture is a file whose trace t (default namespace) holds, by
// position: a percept (0), a committed action (1), two approvals (2, 3),
// a refusal (4) invalidated at 5, a belief (6) and two percepts (7, 8);
// and whose trace u holds seven percepts appended before t's belief and
// two after t's last.
type attackFixture struct {
	path string
	s    *sqlitestore.Store
	db   *sql.DB // a second handle on the file, as an attacker with write access has
	t    []blackboard.Record
	head chain.Head // t's head before the attack
}

func newAttackFixture(t *testing.T) *attackFixture {
	t.Helper()
	f := &attackFixture{path: filepath.Join(t.TempDir(), "bk.db")}
	f.s = mustOpen(t, f.path)
	rec := func(slot blackboard.Slot, kind string, n int, p blackboard.Payload) blackboard.Record {
		r := chained("", "t", slot, kind, n, p)
		f.t = append(f.t, r)
		return r
	}
	mustApply(t, f.s, store.Batch{Appends: []blackboard.Record{
		rec(blackboard.Percepts, "ticket", 1, blackboard.Payload{"text": "refund please"}),
		rec(blackboard.Actions, "issue_refund", 2, blackboard.Payload{"amount": 100, "to": "acct-1"}),
	}})
	mustApply(t, f.s, store.Batch{Appends: []blackboard.Record{
		rec(blackboard.Evidence, "approval", 3, blackboard.Payload{"approver": "alice", "amount": 100}),
		rec(blackboard.Evidence, "approval", 4, blackboard.Payload{"approver": "bob", "amount": 100}),
	}})
	mustApply(t, f.s, store.Batch{Appends: []blackboard.Record{rec(blackboard.Actions, "refusal", 5, blackboard.Payload{"why": "over the limit"})}})
	var u []blackboard.Record
	for n := 1; n <= 7; n++ {
		u = append(u, chained("", "u", blackboard.Percepts, "tick", n, blackboard.Payload{"n": n}))
	}
	mustApply(t, f.s, store.Batch{Appends: u})
	mustApply(t, f.s, store.Batch{
		Invalidations: []store.Invalidation{{ID: f.t[4].ID, Status: blackboard.StatusInvalidated, Reason: "OVERRULED"}},
		Appends: []blackboard.Record{
			rec(blackboard.Beliefs, "refund_due", 6, blackboard.Payload{"due": true}),
			rec(blackboard.Percepts, "ticket", 7, blackboard.Payload{"text": "thanks"}),
		},
	})
	mustApply(t, f.s, store.Batch{Appends: []blackboard.Record{rec(blackboard.Percepts, "ticket", 8, blackboard.Payload{"text": "bye"})}})
	mustApply(t, f.s, store.Batch{Appends: []blackboard.Record{
		chained("", "u", blackboard.Percepts, "tick", 8, nil), chained("", "u", blackboard.Percepts, "tick", 9, nil),
	}})
	for _, tr := range []string{"t", "u"} {
		h, err := store.VerifyTrace(t.Context(), f.s, "", tr, -1)
		if err != nil {
			t.Fatalf("the fixture's trace %s before the attack: %v", tr, err)
		}
		if tr == "t" {
			f.head = h
		}
	}
	if f.head.Len != 9 {
		t.Fatalf("the fixture's trace t holds %d events, want 9", f.head.Len)
	}
	f.db = rawDB(t, f.path)
	return f
}

// verify walks trace tr of the default namespace.
func (f *attackFixture) verify(t *testing.T, tr string, expect ...chain.Head) (chain.Head, error) {
	t.Helper()
	return store.VerifyTrace(t.Context(), f.s, "", tr, -1, expect...)
}

// link reads the link the file holds for a record's append.
func (f *attackFixture) link(t *testing.T, id string) chain.Hash {
	t.Helper()
	var b []byte
	if err := f.db.QueryRowContext(t.Context(), "SELECT link FROM records WHERE id = ?", id).Scan(&b); err != nil {
		t.Fatal(err)
	}
	var h chain.Hash
	copy(h[:], b)
	return h
}

// An edited field of a committed action breaks its link.
func TestChainAttackContent(t *testing.T) {
	f := newAttackFixture(t)
	mustExec(t, f.db, `UPDATE records SET payload = '{"amount":100000,"to":"acct-1"}' WHERE id = ?`, f.t[1].ID)
	_, err := f.verify(t, "t")
	wantBreak(t, "an edited refund amount", err, chain.FaultContent, 1)
}

// A refused record set back to ACTIVE: its status change no longer gives
// its link (content); one that also erases the change's columns leaves a
// hole where the change was (gap).
func TestChainAttackReactivate(t *testing.T) {
	f := newAttackFixture(t)
	mustExec(t, f.db, `UPDATE records SET status = 'ACTIVE' WHERE id = ?`, f.t[4].ID)
	_, err := f.verify(t, "t")
	wantBreak(t, "a refusal set back to ACTIVE", err, chain.FaultContent, 5)

	f = newAttackFixture(t)
	mustExec(t, f.db, `UPDATE records SET status = 'ACTIVE', reason = born_reason, born_reason = NULL, end_seq = NULL, end_link = NULL WHERE id = ?`, f.t[4].ID)
	_, err = f.verify(t, "t")
	wantBreak(t, "a refusal set back to ACTIVE with its status change erased", err, chain.FaultGap, 5)
}

// A refusal deleted from the middle of the trace leaves a gap: its append
// and its status change are missing.
func TestChainAttackDeleteRefusal(t *testing.T) {
	f := newAttackFixture(t)
	mustExec(t, f.db, `DELETE FROM records WHERE id = ?`, f.t[4].ID)
	_, err := f.verify(t, "t")
	wantBreak(t, "a deleted refusal", err, chain.FaultGap, 4)
}

// Two approvals swapped: by payload, each row's link no longer matches
// its content; by rowid (the records trade places in the trace's
// order, links and all), the later one comes first and the chain has a
// hole where it should be.
func TestChainAttackSwapApprovals(t *testing.T) {
	f := newAttackFixture(t)
	mustExec(t, f.db, `UPDATE records SET payload = CASE id WHEN ?1 THEN (SELECT payload FROM records WHERE id = ?2) ELSE (SELECT payload FROM records WHERE id = ?1) END WHERE id IN (?1, ?2)`,
		f.t[2].ID, f.t[3].ID)
	_, err := f.verify(t, "t")
	wantBreak(t, "two approvals' payloads swapped", err, chain.FaultContent, 2)

	f = newAttackFixture(t)
	mustExec(t, f.db, `UPDATE records SET seq = -seq WHERE id IN (?1, ?2);
		UPDATE records SET seq = CASE id WHEN ?1 THEN (SELECT -seq FROM records WHERE id = ?2) ELSE (SELECT -seq FROM records WHERE id = ?1) END WHERE id IN (?1, ?2)`,
		f.t[2].ID, f.t[3].ID)
	if got := trace(t, f.s, "t"); got[2].ID != f.t[3].ID {
		t.Fatalf("the swap did not reorder the trace: %s is third", got[2].ID)
	}
	_, err = f.verify(t, "t")
	wantBreak(t, "two approvals swapped in the trace's order", err, chain.FaultGap, 2)
}

// A status change moved before the record it changes was appended (a
// backdated refusal) sits at a position the chain has passed.
func TestChainAttackBackdate(t *testing.T) {
	f := newAttackFixture(t)
	mustExec(t, f.db, `UPDATE records SET end_seq = 3 WHERE id = ?`, f.t[4].ID)
	_, err := f.verify(t, "t")
	wantBreak(t, "a backdated status change", err, chain.FaultOrder, 4)
}

// A record moved to another trace is named there as another trace's
// record, and leaves a gap where it was.
func TestChainAttackMove(t *testing.T) {
	f := newAttackFixture(t)
	moved := f.t[6] // position 7 of t; u holds 7 events before it in append order, and 2 after
	mustExec(t, f.db, `UPDATE records SET trace_id = 'u' WHERE id = ?`, moved.ID)
	_, err := f.verify(t, "u")
	wantBreak(t, "a record moved into trace u", err, chain.FaultMoved, 7)
	_, err = f.verify(t, "t")
	wantBreak(t, "the trace a record was moved from", err, chain.FaultGap, 7)
}

// A cut tail falls short of the head the traces row records.
func TestChainAttackTruncate(t *testing.T) {
	f := newAttackFixture(t)
	mustExec(t, f.db, `DELETE FROM records WHERE id IN (?, ?)`, f.t[6].ID, f.t[7].ID)
	_, err := f.verify(t, "t")
	wantBreak(t, "a cut tail", err, chain.FaultTruncated, 7)
}

// A cut tail whose head is rewritten to match is, to the store alone, a
// shorter trace: it verifies. This is the documented limit of a chain
// without a checkpoint; the head a checkpoint recorded before the cut
// catches it.
func TestChainAttackTruncateRewriteHead(t *testing.T) {
	f := newAttackFixture(t)
	mustExec(t, f.db, `DELETE FROM records WHERE id IN (?, ?)`, f.t[6].ID, f.t[7].ID)
	mustExec(t, f.db, `UPDATE traces SET events = 7, n = n - 2, head = (SELECT link FROM records WHERE id = ?) WHERE trace_id = 't'`, f.t[5].ID)
	h, err := f.verify(t, "t")
	if err != nil || h.Len != 7 {
		t.Fatalf("a cut tail with its head rewritten: VerifyTrace = %+v, %v; want a clean chain of 7 events (a chain alone cannot tell)", h, err)
	}
	_, err = f.verify(t, "t", f.head)
	wantBreak(t, "a cut tail against a checkpoint's head", err, chain.FaultTruncated, 7)
}

// A tail replaced by events chained anew, with the head left alone, does
// not end on the head the store recorded.
func TestChainAttackRechainTail(t *testing.T) {
	f := newAttackFixture(t)
	forged := f.t[7]
	forged.Namespace = blackboard.DefaultNamespace
	forged.Payload = blackboard.Payload{"text": "I withdraw my complaint"}
	link := chain.Next(f.link(t, f.t[6].ID), 8, mustDigest(t, &forged))
	mustExec(t, f.db, `UPDATE records SET payload = '{"text":"I withdraw my complaint"}', link = ? WHERE id = ?`, link[:], forged.ID)
	_, err := f.verify(t, "t")
	wantBreak(t, "a re-chained tail", err, chain.FaultHead, 8)
}

// Chain and Head of a closed store fail with ErrClosed, of a done context
// with the context's error, as every method does.
func TestChainClosed(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "bk.db"))
	mustApply(t, s, store.Batch{Appends: []blackboard.Record{record("t", 1)}})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Head(ctx, "", "t"); !errors.Is(err, context.Canceled) {
		t.Errorf("Head with a done context: %v, want context.Canceled", err)
	}
	for _, err := range s.Chain(ctx, "", "t") {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Chain with a done context: %v, want context.Canceled", err)
		}
	}
	// Chain holds nothing while it yields: the loop body may close the store.
	n := 0
	for _, err := range s.Chain(t.Context(), "", "t") {
		if n++; n == 1 {
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := s.Head(t.Context(), "", "t"); !errors.Is(err, blackboard.ErrClosed) {
		t.Errorf("Head of a closed store: %v, want ErrClosed", err)
	}
	got := 0
	for _, err := range s.Chain(t.Context(), "", "t") {
		if got++; !errors.Is(err, blackboard.ErrClosed) {
			t.Errorf("Chain of a closed store: %v, want ErrClosed", err)
		}
	}
	if got != 1 {
		t.Errorf("Chain of a closed store yielded %d times, want one error", got)
	}
}

// wrapped is a payload value with a JSON form of its own.
type wrapped struct{ V int }

func (w wrapped) MarshalJSON() ([]byte, error) {
	return []byte(fmt.Sprintf(`{"wrapped":%d}`, w.V)), nil
}

// A payload whose Go values read back as other values (a float32, bytes,
// a struct, a nil list or map, a value with a JSON method) is chained as
// the store keeps it: its trace verifies.
func TestChainPayloadAsStored(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "bk.db"))
	type point struct {
		X, Y float32
		Tag  string `json:"tag"`
	}
	var nilMap map[string]any
	var nilList []any
	for i, p := range []blackboard.Payload{
		{"f": float32(0.1)},
		{"b": []byte("bytes")},
		{"s": point{0.5, 0.25, "p"}},
		{"m": nilMap, "l": nilList, "n": []string(nil)},
		{"w": wrapped{7}, "ws": []any{wrapped{8}}},
		{"nested": map[string]any{"f": float32(1.1), "i": []int{1, 2}, "big": uint64(1<<63 + 1)}},
		{"big": int64(1)<<62 + 1, "neg": -0.0},
		{},
		nil,
	} {
		mustApply(t, s, store.Batch{Appends: []blackboard.Record{chained("", "p", blackboard.Percepts, "k", i+1, p)}})
	}
	if h, err := store.VerifyTrace(t.Context(), s, "", "p", -1); err != nil || h.Len != 9 {
		t.Errorf("VerifyTrace of payloads that read back changed: %+v, %v", h, err)
	}
}

// A trace of several pages of appends and of status changes, which
// interleave: Chain merges them in order, and the trace verifies.
func TestChainPages(t *testing.T) {
	ctx := t.Context()
	s := mustOpen(t, filepath.Join(t.TempDir(), "bk.db"))
	var prev []blackboard.Record
	events := 0
	for batch := range 12 {
		var b store.Batch
		for _, r := range prev[:len(prev)/2] {
			b.Invalidations = append(b.Invalidations, store.Invalidation{ID: r.ID, Status: blackboard.StatusInvalidated, Reason: reason.SupersededByCommit})
		}
		prev = prev[:0]
		for j := range 50 {
			r := chained("", "long", blackboard.Beliefs, "k", 1+batch*50+j, blackboard.Payload{"j": j})
			b.Appends = append(b.Appends, r)
			prev = append(prev, r)
		}
		mustApply(t, s, b)
		events += len(b.Appends) + len(b.Invalidations)
	}
	h, err := store.VerifyTrace(ctx, s, "", "long", -1)
	if err != nil || h.Len != uint64(events) {
		t.Fatalf("VerifyTrace of a trace of %d events: %+v, %v", events, h, err)
	}
	var seq uint64
	for e, err := range s.Chain(ctx, "", "long") {
		if err != nil {
			t.Fatal(err)
		}
		if e.Seq != seq {
			t.Fatalf("Chain yields event %d where %d is due", e.Seq, seq)
		}
		seq++
	}
}

// A record inserted by hand, without a link, is one the chain never
// appended.
func TestChainAttackForge(t *testing.T) {
	f := newAttackFixture(t)
	mustExec(t, f.db, `INSERT INTO records (id, trace_id, slot, mode, kind, payload, role, writer, ts_ms, ttl_ms, status, reason, scope)
		VALUES ('evidence:t:9', 't', 'evidence', 'commit', 'approval', '{"approver":"mallory"}', 'approver', 'x', 1, 0, 'ACTIVE', 'COMMITTED', 'episode')`)
	_, err := f.verify(t, "t")
	wantBreak(t, "a forged approval", err, chain.FaultUnchained, 9)
	// Inserted in the middle of the trace's order, it is where an event
	// is due, with no link.
	f = newAttackFixture(t)
	mustExec(t, f.db, `UPDATE records SET seq = seq + 1000 WHERE trace_id = 't' AND id IN (?, ?)`, f.t[6].ID, f.t[7].ID)
	mustExec(t, f.db, `INSERT INTO records (seq, id, trace_id, slot, mode, kind, payload, role, writer, ts_ms, ttl_ms, status, reason, scope)
		VALUES ((SELECT seq + 1 FROM records WHERE id = ?), 'evidence:t:9', 't', 'evidence', 'commit', 'approval', '{"approver":"mallory"}', 'approver', 'x', 1, 0, 'ACTIVE', 'COMMITTED', 'episode')`,
		f.t[5].ID)
	if got := trace(t, f.s, "t"); got[6].ID != "evidence:t:9" {
		t.Fatalf("the forged record is not the trace's seventh: %s is", got[6].ID)
	}
	_, err = f.verify(t, "t")
	wantBreak(t, "a forged approval in the middle", err, chain.FaultContent, 7)
}

package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/internal/pgtest"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/pgstore"
)

// events reads a trace's chain whole.
func events(tb testing.TB, s store.Chainer, namespace, trace string) []chain.Event {
	tb.Helper()
	var out []chain.Event
	for e, err := range s.Chain(context.Background(), namespace, trace) {
		if err != nil {
			tb.Fatalf("Chain(%q, %q): %v", namespace, trace, err)
		}
		out = append(out, e)
	}
	return out
}

// table names one of the store's tables for a statement.
func table(s *pgstore.Store, name string) string { return pgx.Identifier{s.Schema(), name}.Sanitize() }

// TestChainLinks checks that the links the server computes in Apply's
// pipeline are chain.Next of the previous link, the position and the
// digest Go computes of the event as Chain reads it back, for appends
// (payloads of Go types that read back as other types among them) and
// status changes, and that Head is the last of them.
func TestChainLinks(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	const trace = "links"
	odd := record(trace, 3)
	odd.Payload = blackboard.Payload{"i": 3, "f": float32(0.1), "big": int64(1) << 60, "l": []string{"a", "b"},
		"nested": map[string]any{"l": []any{1.5, "x", nil, true}}, "conf": -0.0}
	c := 0.25
	odd.Provenance.Confidence = &c
	odd.Provenance.InputRefs, odd.EvidenceRefs = []string{"percepts:links:1"}, []string{}
	odd.Provenance.TTLMS, odd.Provenance.Span = 5000, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	refusal := record(trace, 4)
	refusal.Status, refusal.Reason = blackboard.StatusInvalidated, reason.ApprovalDenied
	acme := record(trace, 1)
	acme.ID, acme.Namespace = store.RecordID(blackboard.Percepts, "acme", trace, 1), "acme"
	inf := record(trace, 2)
	inf.Provenance.Confidence = new(math.Inf(-1)) // a value stores keep, and digest
	batches := []store.Batch{
		{Appends: []blackboard.Record{record(trace, 1), inf}},
		{Appends: []blackboard.Record{odd, refusal}, Invalidations: []store.Invalidation{{ID: record(trace, 1).ID, Status: blackboard.StatusExpired, Reason: reason.StaleEvidence}}},
		{Invalidations: []store.Invalidation{{ID: record(trace, 2).ID, Status: blackboard.StatusInvalidated, Reason: reason.SupersededEvidence}}},
		{Appends: []blackboard.Record{record(trace, 5), acme}},
	}
	for _, b := range batches {
		if err := s.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	evs := events(t, s, "", trace)
	wantOps := []chain.Op{chain.OpAppend, chain.OpAppend, chain.OpStatus, chain.OpAppend, chain.OpAppend, chain.OpStatus, chain.OpAppend}
	if len(evs) != len(wantOps) {
		t.Fatalf("Chain: %d events, want %d: %+v", len(evs), len(wantOps), evs)
	}
	var link chain.Hash
	for i, e := range evs {
		if e.Seq != uint64(i) || e.Op != wantOps[i] {
			t.Errorf("event %d: seq %d, op %s; want %d, %s", i, e.Seq, e.Op, i, wantOps[i])
		}
		d, err := e.Digest()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		link = chain.Next(link, uint64(i), d)
		if e.Link != link {
			t.Errorf("event %d (%s %s): the server's link %s, chain.Next gives %s", i, e.Op, e.Record.ID, e.Link, link)
		}
	}
	// The events carry the records as appended, and the changes as made.
	if r := evs[0].Record; r.ID != record(trace, 1).ID || r.Status != blackboard.StatusActive || r.Reason != reason.Committed {
		t.Errorf("event 0 = %+v, want record 1 as appended (ACTIVE, COMMITTED)", r)
	}
	if r := evs[2].Record; r.ID != record(trace, 1).ID || r.Status != blackboard.StatusExpired || r.Reason != reason.StaleEvidence ||
		r.Provenance.TraceID != trace || r.Namespace != blackboard.DefaultNamespace || r.Payload != nil {
		t.Errorf("event 2 = %+v, want record 1's change to EXPIRED, STALE_EVIDENCE", r)
	}
	if r := evs[4].Record; r.Status != blackboard.StatusInvalidated || r.Reason != reason.ApprovalDenied {
		t.Errorf("event 4 (a record appended INVALIDATED) = %+v", r)
	}
	if r := evs[3].Record; r.ID != odd.ID || r.Payload["f"] != 0.1 || r.Payload["i"] != 3.0 {
		t.Errorf("event 3 = %+v, want the record as it reads back", r)
	}
	h, err := s.Head(ctx, "", trace)
	if err != nil || h.Len != uint64(len(evs)) || h.Link != link || h.Migrated != 0 || h.Trace != trace || h.Namespace != blackboard.DefaultNamespace {
		t.Errorf("Head = %+v, %v; want %d events ending on %s", h, err, len(evs), link)
	}
	if _, err := store.VerifyTrace(ctx, s, "", trace, -1); err != nil {
		t.Errorf("VerifyTrace: %v", err)
	}
	// The other namespace's trace of the same id is a chain of its own.
	if h, err := s.Head(ctx, "acme", trace); err != nil || h.Len != 1 {
		t.Errorf("Head(acme) = %+v, %v; want 1 event", h, err)
	}
	if _, err := store.VerifyTrace(ctx, s, "acme", trace, -1); err != nil {
		t.Errorf("VerifyTrace(acme): %v", err)
	}
	// An unknown trace, and one no record can name, have the zero head
	// and no events.
	for _, tr := range []string{"nothing", "bad\x00id"} {
		if h, err := s.Head(ctx, "", tr); err != nil || h.Len != 0 || h.Link != (chain.Hash{}) {
			t.Errorf("Head(%q) = %+v, %v; want the zero head", tr, h, err)
		}
		if evs := events(t, s, "", tr); len(evs) != 0 {
			t.Errorf("Chain(%q): %d events, want none", tr, len(evs))
		}
	}
	// A batch that fails extends no chain.
	err = s.Apply(ctx, store.Batch{Appends: []blackboard.Record{record(trace, 6)},
		Invalidations: []store.Invalidation{{ID: record(trace, 1).ID, Status: blackboard.StatusInvalidated, Reason: reason.StaleEvidence}}})
	if !errors.Is(err, store.ErrNotActive) {
		t.Fatalf("invalidating a record twice: %v, want ErrNotActive", err)
	}
	if h2, err := s.Head(ctx, "", trace); err != nil || h2 != h {
		t.Errorf("Head after a refused batch = %+v, %v; want %+v", h2, err, h)
	}
}

// TestChainClosedAndCancelled checks Chain and Head on a closed store and
// with an ended context.
func TestChainClosedAndCancelled(t *testing.T) {
	s := newStore(t)
	if err := s.Apply(t.Context(), store.Batch{Appends: []blackboard.Record{record("c", 1)}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Head(ctx, "", "c"); !errors.Is(err, context.Canceled) {
		t.Errorf("Head with a cancelled context: %v", err)
	}
	for _, err := range s.Chain(ctx, "", "c") {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Chain with a cancelled context: %v", err)
		}
	}
	// Stopping early yields nothing more.
	for range s.Chain(t.Context(), "", "c") {
		break
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Head(t.Context(), "", "c"); !errors.Is(err, blackboard.ErrClosed) {
		t.Errorf("Head after Close: %v", err)
	}
	n := 0
	for _, err := range s.Chain(t.Context(), "", "c") {
		n++
		if !errors.Is(err, blackboard.ErrClosed) {
			t.Errorf("Chain after Close: %v", err)
		}
	}
	if n != 1 {
		t.Errorf("Chain after Close yielded %d times, want once", n)
	}
}

// TestChainConcurrent runs batches from several goroutines, each on a
// trace of its own (invalidating records of the shared trace too), and
// several on one shared trace under its condition, and then verifies
// every trace's chain: concurrent writers leave chains without a fork or
// a gap, whose heads count every append and status change.
func TestChainConcurrent(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	const (
		writers = 4
		rounds  = 12
		shared  = "busy"
	)
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers)
	changes := make(chan string, 2*writers*rounds) // ids of the shared trace's records whose status changed
	for w := range writers {
		ns := []string{"", "acme"}[w%2]
		trace := fmt.Sprintf("own-%d", w)
		wg.Add(2)
		go func() { // a trace of its own
			defer wg.Done()
			for i := 1; i <= rounds; i++ {
				r := record(trace, i)
				r.ID, r.Namespace = store.RecordID(blackboard.Percepts, ns, trace, i), ns
				b := store.Batch{Appends: []blackboard.Record{r}}
				if i > 1 && i%3 == 0 {
					b.Invalidations = append(b.Invalidations, store.Invalidation{ID: store.RecordID(blackboard.Percepts, ns, trace, i-1),
						Status: blackboard.StatusInvalidated, Reason: reason.StaleEvidence})
				}
				// Now and then, a status change in the shared trace.
				if id := store.RecordID(blackboard.Percepts, "", shared, w*rounds+i); i%4 == 0 {
					if _, err := s.Get(ctx, id); err == nil {
						b.Invalidations = append(b.Invalidations, store.Invalidation{ID: id, Status: blackboard.StatusExpired, Reason: reason.StaleEvidence})
					}
				}
				err := s.Apply(ctx, b)
				if errors.Is(err, store.ErrNotActive) && len(b.Invalidations) > 0 {
					// Another writer changed that one first: try without it.
					b.Invalidations = b.Invalidations[:0]
					if i > 1 && i%3 == 0 {
						b.Invalidations = append(b.Invalidations, store.Invalidation{ID: store.RecordID(blackboard.Percepts, ns, trace, i-1),
							Status: blackboard.StatusInvalidated, Reason: reason.StaleEvidence})
					}
					err = s.Apply(ctx, b)
				}
				if err != nil {
					errs <- fmt.Errorf("trace %s: %w", trace, err)
					return
				}
				for _, inv := range b.Invalidations {
					if _, tr, _, _ := store.SplitRecordID(inv.ID); tr == shared {
						changes <- inv.ID
					}
				}
			}
		}()
		go func() { // the shared trace, under its condition
			defer wg.Done()
			skip := false // the last try's status change found its record changed
			for i := 0; i < rounds; {
				st, err := s.ReadState(ctx, "", shared)
				if err != nil {
					errs <- err
					return
				}
				n := st.Len + 1
				b := store.Batch{Appends: []blackboard.Record{record(shared, n)}, Trace: shared, TraceLen: st.Len}
				if n > 2 && n%2 == 0 && !skip {
					b.Invalidations = []store.Invalidation{{ID: record(shared, n-2).ID, Status: blackboard.StatusInvalidated, Reason: reason.SupersededEvidence}}
				}
				err = s.Apply(ctx, b)
				skip = errors.Is(err, store.ErrNotActive)
				switch {
				case errors.Is(err, blackboard.ErrConflict), errors.Is(err, store.ErrNotActive):
					continue // another writer got there first
				case err != nil:
					errs <- fmt.Errorf("trace %s: %w", shared, err)
					return
				}
				for _, inv := range b.Invalidations {
					changes <- inv.ID
				}
				i++
			}
		}()
	}
	wg.Wait()
	close(errs)
	close(changes)
	for err := range errs {
		t.Fatal(err)
	}
	changed := map[string]bool{}
	for id := range changes {
		if changed[id] {
			t.Errorf("record %s changed twice", id)
		}
		changed[id] = true
	}
	check := func(ns, trace string, want uint64) {
		t.Helper()
		h, err := store.VerifyTrace(ctx, s, ns, trace, -1)
		if err != nil {
			t.Errorf("VerifyTrace(%q, %q): %v", ns, trace, err)
			return
		}
		if recorded, err := s.Head(ctx, ns, trace); err != nil || recorded.Len != h.Len || recorded.Link != h.Link {
			t.Errorf("Head(%q, %q) = %+v, %v; the walk ends on %+v", ns, trace, recorded, err, h)
		}
		if h.Len != want {
			t.Errorf("trace %q of %q: %d events, want %d", trace, ns, h.Len, want)
		}
	}
	for w := range writers {
		ns := []string{"", "acme"}[w%2]
		check(ns, fmt.Sprintf("own-%d", w), rounds+rounds/3)
	}
	check("", shared, uint64(writers*rounds+len(changed)))
}

// victim is the trace the attacks edit: its events, in order, are
//
//	0 percepts:victim:1 appended       4 actions:victim:5 appended INVALIDATED (a refusal)
//	1 actions:victim:2 (committed)     5 percepts:victim:6 appended
//	2 evidence:victim:3 (an approval)  6 percepts:victim:1 INVALIDATED
//	3 evidence:victim:4 (an approval)  7 percepts:victim:7 appended (the tail)
//
// and trace other holds nine percepts, one event each.
func victim(t *testing.T) *pgstore.Store {
	t.Helper()
	ctx := t.Context()
	s := newStore(t)
	const trace = "victim"
	action := record(trace, 2)
	action.ID, action.Slot, action.Kind, action.Provenance.Role = "actions:victim:2", blackboard.Actions, "refund", blackboard.RoleKernel
	action.Payload = blackboard.Payload{"tool": "refund", "amount": 40.0}
	approval := func(n int, decision string) blackboard.Record {
		r := record(trace, n)
		r.ID, r.Slot, r.Kind, r.Provenance.Role = store.RecordID(blackboard.Evidence, "", trace, n), blackboard.Evidence, "approval", blackboard.RoleApprover
		r.Payload = blackboard.Payload{"decision": decision, "action": "actions:victim:2"}
		return r
	}
	refusal := record(trace, 5)
	refusal.ID, refusal.Slot, refusal.Kind, refusal.Provenance.Role = "actions:victim:5", blackboard.Actions, "refund", blackboard.RoleKernel
	refusal.Status, refusal.Reason, refusal.Payload = blackboard.StatusInvalidated, reason.ApprovalDenied, blackboard.Payload{"tool": "refund", "amount": 9000.0}
	batches := []store.Batch{
		{Appends: []blackboard.Record{record(trace, 1), action}},
		{Appends: []blackboard.Record{approval(3, "approve"), approval(4, "deny")}},
		{Appends: []blackboard.Record{refusal}},
		{Appends: []blackboard.Record{record(trace, 6)}},
		{Appends: []blackboard.Record{record(trace, 7)},
			Invalidations: []store.Invalidation{{ID: record(trace, 1).ID, Status: blackboard.StatusInvalidated, Reason: reason.StaleEvidence}}},
	}
	for i := 1; i <= 9; i++ {
		batches = append(batches, store.Batch{Appends: []blackboard.Record{record("other", i)}})
	}
	for _, b := range batches {
		if err := s.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	for _, tr := range []string{trace, "other"} {
		if _, err := store.VerifyTrace(ctx, s, "", tr, -1); err != nil {
			t.Fatalf("VerifyTrace(%s) before the attack: %v", tr, err)
		}
	}
	if h, _ := s.Head(ctx, "", trace); h.Len != 8 {
		t.Fatalf("trace victim holds %d events, want 8", h.Len)
	}
	return s
}

// TestChainAttacks edits a committed trace with SQL, as someone with
// write access to the database could, and checks that VerifyTrace names
// each edit's fault.
func TestChainAttacks(t *testing.T) {
	type attack struct {
		name  string
		fault chain.Fault // "" for an edit the chain alone cannot see
		seq   uint64
		trace string
		edit  func(t *testing.T, s *pgstore.Store, exec func(sql string, args ...any))
	}
	attacks := []attack{
		{"a committed action's payload field", chain.FaultContent, 1, "victim", func(t *testing.T, s *pgstore.Store, exec func(string, ...any)) {
			exec("UPDATE " + table(s, "bk_records") + ` SET payload = jsonb_set(payload, '{amount}', '4000') WHERE id = 'actions:victim:2'`)
		}},
		{"an INVALIDATED refusal deleted from the middle", chain.FaultGap, 4, "victim", func(t *testing.T, s *pgstore.Store, exec func(string, ...any)) {
			exec("DELETE FROM " + table(s, "bk_records") + ` WHERE id = 'actions:victim:5'`)
		}},
		{"two approvals' payloads swapped", chain.FaultContent, 2, "victim", func(t *testing.T, s *pgstore.Store, exec func(string, ...any)) {
			exec("UPDATE " + table(s, "bk_records") + ` r SET payload = o.payload FROM ` + table(s, "bk_records") +
				` o WHERE (r.id, o.id) IN (('evidence:victim:3', 'evidence:victim:4'), ('evidence:victim:4', 'evidence:victim:3'))`)
		}},
		{"an event given another's position", chain.FaultOrder, 3, "victim", func(t *testing.T, s *pgstore.Store, exec func(string, ...any)) {
			exec("UPDATE " + table(s, "bk_records") + ` SET link_seq = 2 WHERE id = 'evidence:victim:4'`)
		}},
		{"a record moved from another trace", chain.FaultMoved, 8, "victim", func(t *testing.T, s *pgstore.Store, exec func(string, ...any)) {
			// Its append was event 8 of its trace: it lands right after
			// the victim's last event.
			exec("UPDATE " + table(s, "bk_records") + ` SET trace_id = 'victim' WHERE id = 'percepts:other:9'`)
		}},
		{"the tail deleted", chain.FaultTruncated, 7, "victim", func(t *testing.T, s *pgstore.Store, exec func(string, ...any)) {
			exec("DELETE FROM " + table(s, "bk_records") + ` WHERE id = 'percepts:victim:7'`)
		}},
		{"the tail deleted and the head rewritten to match", "", 7, "victim", func(t *testing.T, s *pgstore.Store, exec func(string, ...any)) {
			// Without a checkpoint nothing tells this trace from one that
			// never held the tail: the documented limit of a chain alone.
			exec("DELETE FROM " + table(s, "bk_records") + ` WHERE id = 'percepts:victim:7'`)
			exec("UPDATE " + table(s, "bk_traces") + ` t SET n = n - 1, events = events - 1, head = r.end_link FROM ` + table(s, "bk_records") +
				` r WHERE r.id = 'percepts:victim:1' AND t.trace_id = 'victim'`)
		}},
		{"the tail replaced and re-chained, the head left", chain.FaultHead, 7, "victim", func(t *testing.T, s *pgstore.Store, exec func(string, ...any)) {
			exec("UPDATE " + table(s, "bk_records") + ` SET payload = '{"n": 99}' WHERE id = 'percepts:victim:7'`)
			evs := events(t, s, "", "victim")
			tail := evs[len(evs)-1]
			d, err := tail.Digest()
			if err != nil {
				t.Fatal(err)
			}
			link := chain.Next(evs[len(evs)-2].Link, tail.Seq, d)
			exec("UPDATE "+table(s, "bk_records")+` SET link = $1 WHERE id = 'percepts:victim:7'`, link[:])
		}},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			ctx := t.Context()
			s := victim(t)
			pool := pgtest.Pool(t)
			a.edit(t, s, func(sql string, args ...any) {
				t.Helper()
				if _, err := pool.Exec(ctx, sql, args...); err != nil {
					t.Fatalf("the attack's SQL: %v", err)
				}
			})
			h, err := store.VerifyTrace(ctx, s, "", a.trace, -1)
			if a.fault == "" {
				if err != nil || h.Len != a.seq {
					t.Errorf("VerifyTrace = %+v, %v; want a clean chain of %d events (no checkpoint to tell)", h, err, a.seq)
				}
				return
			}
			var brk *chain.Break
			if !errors.As(err, &brk) || !errors.Is(err, chain.ErrBroken) {
				t.Fatalf("VerifyTrace after the attack = %+v, %v; want a *chain.Break with fault %s", h, err, a.fault)
			}
			if brk.Fault != a.fault || brk.Seq != a.seq || brk.Trace != a.trace {
				t.Errorf("VerifyTrace: %v; want fault %s at event %d of trace %s", brk, a.fault, a.seq, a.trace)
			}
		})
	}
}

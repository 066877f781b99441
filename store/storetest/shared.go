package storetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// constraint returns an ACTIVE persistent constraint of trace in namespace
// ns ("" keeps the default one); n is part of its id.
func constraint(trace, ns string, n int) blackboard.Record {
	r := record(trace, blackboard.Constraints, "max_refund", n)
	r.Scope, r.Namespace = blackboard.ScopePersistent, ns
	return r
}

// sharedCounters reads the Shared counter of each namespace, through a
// trace no batch touches.
func sharedCounters(t *testing.T, ss store.StateStore, nss ...string) map[string]uint64 {
	t.Helper()
	out := make(map[string]uint64, len(nss))
	for _, ns := range nss {
		out[ns] = readStateIn(t, ss, ns, "shared-unknown").Shared
	}
	return out
}

// wantShared reports unless each namespace's Shared counter moved from
// before by exactly its delta in moves (0 for a namespace moves leaves
// out), and returns the counters now.
func wantShared(t *testing.T, ss store.StateStore, before map[string]uint64, moves map[string]uint64, contract string) map[string]uint64 {
	t.Helper()
	now := make(map[string]uint64, len(before))
	for ns, was := range before {
		now[ns] = readStateIn(t, ss, ns, "shared-unknown").Shared
		if now[ns] != was+moves[ns] {
			t.Errorf("%s: Shared of namespace %q went from %d to %d, want %d", contract, ns, was, now[ns], was+moves[ns])
		}
	}
	return now
}

// testStateShared checks the change counter of a namespace's persistent
// constraints (TraceState.Shared): it grows by exactly one for each batch
// that appends a persistent constraint of the namespace or changes the
// status of one, however many it touches, and for no other write: not for
// another namespace's, not for constraints of episode scope, not for
// persistent records of other slots, not for a refused batch. ReadState
// reads it for any trace, an unknown one included, and for the namespace
// asked about (empty: the default one), not the trace's.
func testStateShared(t *testing.T, s store.Store) {
	ss := stateStore(t, s)
	ctx := t.Context()
	const def, acme, other = blackboard.DefaultNamespace, "acme", "globex"
	c := sharedCounters(t, ss, def, acme, other)

	d1 := constraint("shared-d", "", 1)
	mustAppend(t, s, d1)
	c = wantShared(t, ss, c, map[string]uint64{def: 1}, "a one-record batch of a persistent constraint with an empty namespace counts in the default namespace")

	d2, d3 := constraint("shared-d", def, 2), constraint("shared-d", def, 3)
	a1, a2 := constraint("shared-a", acme, 1), constraint("shared-a", acme, 2)
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{d2, a1, d3, a2}}); err != nil {
		t.Fatal(err)
	}
	c = wantShared(t, ss, c, map[string]uint64{def: 1, acme: 1}, "a batch of persistent constraints of two namespaces counts one change in each")

	episode := record("shared-d", blackboard.Constraints, "max_refund", 4) // scope episode
	belief := record("shared-d", blackboard.Beliefs, "vip", 5)
	belief.Scope = blackboard.ScopePersistent
	percept := record("shared-d", blackboard.Percepts, "door", 6)
	mustAppend(t, s, episode, belief, percept)
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{constraint("shared-o", other, 1)}, Claims: []store.Claim{{Key: "shared-key", RecordID: d1.ID, Namespace: def}}}); err != nil {
		t.Fatal(err)
	}
	c = wantShared(t, ss, c, map[string]uint64{other: 1}, "appends of an episode constraint, of a persistent belief, of a percept, and a claim count nothing; another namespace's constraint counts only there")

	mustInvalidate(t, s, episode.ID, blackboard.StatusExpired, reason.TTLExpired)
	mustInvalidate(t, s, belief.ID, blackboard.StatusInvalidated, reason.StaleEvidence)
	c = wantShared(t, ss, c, nil, "status changes of an episode constraint and of a persistent belief count nothing")
	mustInvalidate(t, s, d1.ID, blackboard.StatusInvalidated, reason.StaleEvidence)
	c = wantShared(t, ss, c, map[string]uint64{def: 1}, "a status change of a persistent constraint counts one change")

	// Status changes of two constraints and an append in one namespace,
	// and a status change in another: one change in each.
	d4 := constraint("shared-d", def, 7)
	err := s.Apply(ctx, store.Batch{
		Appends: []blackboard.Record{d4},
		Invalidations: []store.Invalidation{
			{ID: d2.ID, Status: blackboard.StatusInvalidated, Reason: reason.StaleEvidence},
			{ID: d3.ID, Status: blackboard.StatusExpired, Reason: reason.TTLExpired},
			{ID: a1.ID, Status: blackboard.StatusExpired, Reason: reason.TTLExpired},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	c = wantShared(t, ss, c, map[string]uint64{def: 1, acme: 1}, "a batch of status changes and appends of persistent constraints counts one change per namespace")

	// A trace is its namespace and its id: asked in another namespace,
	// the id names a trace that holds nothing there, and Shared is the
	// namespace asked about.
	st := readStateIn(t, ss, def, "shared-a")
	if st.Namespace != "" || st.Len != 0 || st.Shared != c[def] {
		t.Errorf("ReadState(%q, %q) = Namespace %q, Len %d, Shared %d; want an empty trace, and the default namespace's %d",
			def, "shared-a", st.Namespace, st.Len, st.Shared, c[def])
	}
	if st := readStateIn(t, ss, acme, "shared-a"); st.Namespace != acme || st.Len != 2 || st.Shared != c[acme] {
		t.Errorf("ReadState(%q, %q) = Namespace %q, Len %d, Shared %d; want %q, 2, %d", acme, "shared-a", st.Namespace, st.Len, st.Shared, acme, c[acme])
	}
	wantSame(t, readStateIn(t, ss, "", "shared-d"), readStateIn(t, ss, def, "shared-d"), "ReadState with an empty namespace reads the default one")
	if got := readStateIn(t, ss, "nobody", "shared-d").Shared; got != readStateIn(t, ss, "nobody", "shared-unknown").Shared {
		t.Errorf("a namespace without constraints reads Shared %d through a known trace and %d through an unknown one", got, readStateIn(t, ss, "nobody", "shared-unknown").Shared)
	}

	// Refused batches, each of which would count in both namespaces.
	d5 := constraint("shared-d", def, 8)
	base := func() store.Batch {
		return store.Batch{
			Appends:       []blackboard.Record{d5},
			Invalidations: []store.Invalidation{{ID: a2.ID, Status: blackboard.StatusInvalidated, Reason: reason.StaleEvidence}},
			Trace:         "shared-d", TraceLen: 7,
		}
	}
	conflict := base()
	conflict.TraceLen = 6
	dupID := base()
	dupID.Appends = append(dupID.Appends, d4)
	dupKey := base()
	dupKey.Claims = []store.Claim{{Key: "shared-key", RecordID: d5.ID}}
	notActive := base()
	notActive.Invalidations = append(notActive.Invalidations, store.Invalidation{ID: d1.ID, Status: blackboard.StatusExpired, Reason: reason.TTLExpired})
	notFound := base()
	notFound.Invalidations = append(notFound.Invalidations, store.Invalidation{ID: "constraints:shared-d:99", Status: blackboard.StatusExpired, Reason: reason.TTLExpired})
	stale := base()
	stale.State, stale.Version = testState("s"), readState(t, ss, "shared-d").Version+1
	for _, r := range []struct {
		name  string
		batch store.Batch
		want  error
	}{
		{"a stale trace-length condition", conflict, blackboard.ErrConflict},
		{"a state derived from another version of the trace", stale, blackboard.ErrConflict},
		{"an append of a stored id", dupID, store.ErrDuplicateID},
		{"a claim of a claimed key", dupKey, blackboard.ErrDuplicateKey},
		{"a status change of a record that is not active", notActive, store.ErrNotActive},
		{"a status change of an unknown record", notFound, blackboard.ErrNotFound},
	} {
		wantErr(t, s.Apply(ctx, r.batch), r.want, "Apply refuses a batch with "+r.name)
		wantShared(t, ss, c, nil, "a batch refused for "+r.name+" counts nothing")
	}
	if err := s.Apply(ctx, base()); err != nil {
		t.Fatalf("the batch without the fault: %v", err)
	}
	c = wantShared(t, ss, c, map[string]uint64{def: 1, acme: 1}, "the batch without the fault counts in both namespaces")

	// Writers racing on one namespace's constraints, each in a trace of
	// its own: every batch counts.
	const writers, each = 8, 3
	errs := make([]error, writers)
	race(writers, func(g int) {
		for i := range each {
			if err := appendOne(ctx, s, constraint(fmt.Sprintf("shared-race-%d", g), acme, i+1)); err != nil {
				errs[g] = err
				return
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	wantShared(t, ss, c, map[string]uint64{acme: writers * each}, "concurrent appends of persistent constraints each count one change")
}

// testStateSharedCondition checks Batch.SharedNamespace: a batch that names
// a namespace and a counter lands only while that namespace's Shared is
// still the counter, is refused with ErrConflict (and writes nothing)
// once a persistent constraint of the namespace changed, and does not care
// about another namespace's changes.
func testStateSharedCondition(t *testing.T, s store.Store) {
	ss := stateStore(t, s)
	ctx := t.Context()
	const ns = "cond"
	at := readStateIn(t, ss, ns, "cond-t").Shared
	rec := func(n int) blackboard.Record {
		r := record("cond-t", blackboard.Percepts, "door", n)
		r.Namespace = ns
		return r
	}
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{rec(1)}, SharedNamespace: ns, Shared: at}); err != nil {
		t.Fatalf("a batch on the current counter: %v", err)
	}
	mustAppend(t, s, constraint("cond-other", "elsewhere", 1))
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{rec(2)}, SharedNamespace: ns, Shared: at}); err != nil {
		t.Fatalf("a batch after a change in another namespace: %v", err)
	}
	mustAppend(t, s, constraint("cond-c", ns, 1))
	err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{rec(3)}, SharedNamespace: ns, Shared: at})
	if !errors.Is(err, blackboard.ErrConflict) {
		t.Fatalf("a batch after a persistent constraint of its namespace changed: %v, want ErrConflict", err)
	}
	if _, err := s.Get(ctx, rec(3).ID); !errors.Is(err, blackboard.ErrNotFound) {
		t.Errorf("the refused batch wrote its record: %v", err)
	}
	now := readStateIn(t, ss, ns, "cond-t").Shared
	if now == at {
		t.Fatalf("Shared did not move after a persistent constraint of %q", ns)
	}
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{rec(3)}, SharedNamespace: ns, Shared: now}); err != nil {
		t.Fatalf("a batch on the counter read again: %v", err)
	}
}

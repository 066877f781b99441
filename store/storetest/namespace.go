package storetest

import (
	"fmt"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// testNamespaceRoundTrip checks that a record's namespace is kept, and that
// a record appended without one, alone or in a batch of several, reads back in
// blackboard.DefaultNamespace from every read method, before and after a status
// change.
func testNamespaceRoundTrip(t *testing.T, s store.Store) {
	ctx := t.Context()
	const trace = "ns"
	alone := record(trace, blackboard.Constraints, "rule_a", 1)
	alone.Namespace, alone.Scope = "", blackboard.ScopePersistent
	inBatch := record(trace, blackboard.Beliefs, "door_open", 2)
	inBatch.Namespace = ""
	named := record(trace+"-tenant", blackboard.Constraints, "rule_b", 3) // a trace belongs to one namespace
	named.Namespace, named.Scope = "tenant-ä", blackboard.ScopePersistent
	explicit := record(trace, blackboard.Percepts, "door", 4) // blackboard.DefaultNamespace, spelled out
	mustAppend(t, s, alone)
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{inBatch, named, explicit}}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	want := []blackboard.Record{stored(alone), stored(inBatch), named, explicit}
	if want[0].Namespace != blackboard.DefaultNamespace {
		t.Fatal("suite bug: stored() does not default the namespace")
	}
	const contract = "a record appended with an empty namespace reads back in blackboard.DefaultNamespace, and a namespace is kept"
	for _, w := range want {
		wantSame(t, mustGet(t, s, w.ID), w, contract+" (Get)")
		got, err := s.FindActive(ctx, w.Namespace, w.Provenance.TraceID, w.Slot, w.Kind)
		if err != nil {
			t.Fatalf("FindActive(%s): %v", w.ID, err)
		}
		wantSame(t, got, w, contract+" (FindActive)")
	}
	wantSame(t, collect(t, "ListTrace", s.ListTrace(ctx, "", trace)), []blackboard.Record{want[0], want[1], explicit}, contract+" (ListTrace)")
	wantSame(t, collect(t, "ListSlot", s.ListSlot(ctx, blackboard.Constraints, store.Filter{})), []blackboard.Record{want[0], named},
		contract+" (ListSlot)")
	wantSame(t, collect(t, "ListSlot", s.ListSlot(ctx, blackboard.Constraints, store.Filter{Status: blackboard.StatusActive, Scope: blackboard.ScopePersistent})),
		[]blackboard.Record{want[0], named}, contract+" (ListSlot of active persistent records)")

	mustInvalidate(t, s, alone.ID, blackboard.StatusInvalidated, reason.SupersededByCommit)
	mustInvalidate(t, s, named.ID, blackboard.StatusExpired, reason.TTLExpired)
	wantSame(t, mustGet(t, s, alone.ID), invalidated(want[0], blackboard.StatusInvalidated, reason.SupersededByCommit),
		"a status change keeps the record's namespace (blackboard.DefaultNamespace)")
	wantSame(t, mustGet(t, s, named.ID), invalidated(named, blackboard.StatusExpired, reason.TTLExpired),
		"a status change keeps the record's namespace")
}

// testListSlotNamespace checks Filter.Namespace alone and with Status and
// Scope, above all the listing the kernel runs on every gated decision: the
// active persistent constraints of one namespace.
func testListSlotNamespace(t *testing.T, s store.Store) {
	ctx := t.Context()
	const per, ep = blackboard.ScopePersistent, blackboard.ScopeEpisode
	// Each record in a trace of its own namespace: a trace belongs to one.
	c := func(trace string, n int, ns string, scope blackboard.Scope) blackboard.Record {
		r := record(trace+"/"+ns, blackboard.Constraints, fmt.Sprintf("rule%d", n), n)
		r.Namespace, r.Scope = ns, scope
		return r
	}
	// Namespaces that share a prefix or differ only in case, so that a store
	// cannot get away with prefix or case-folded matches.
	c1 := c("A", 1, "a", per)
	c2 := c("B", 2, "ab", per)
	c3 := c("A", 3, "", per) // blackboard.DefaultNamespace
	c4 := c("B", 4, "a", ep)
	c5 := c("A", 5, "a", per) // invalidated below
	c6 := c("B", 6, blackboard.DefaultNamespace, per)
	c7 := c("A", 7, "b", per)
	c7.Status, c7.Reason = blackboard.StatusExpired, reason.TTLExpired
	c8 := c("B", 8, "A", per)
	p9 := record("A/a", blackboard.Percepts, "door", 9)
	p9.Namespace, p9.Scope = "a", per
	mustAppend(t, s, c1, c2, c3, c4, c5, c6, c7, c8, p9)
	mustInvalidate(t, s, c5.ID, blackboard.StatusInvalidated, reason.SupersededByCommit)
	c3, c5 = stored(c3), invalidated(c5, blackboard.StatusInvalidated, reason.SupersededByCommit)

	active := blackboard.StatusActive
	lists := []struct {
		slot blackboard.Slot
		f    store.Filter
		want []blackboard.Record
	}{
		{blackboard.Constraints, store.Filter{Namespace: "a"}, []blackboard.Record{c1, c4, c5}},
		{blackboard.Constraints, store.Filter{Namespace: "ab"}, []blackboard.Record{c2}},
		{blackboard.Constraints, store.Filter{Namespace: "A"}, []blackboard.Record{c8}},
		{blackboard.Constraints, store.Filter{Namespace: blackboard.DefaultNamespace}, []blackboard.Record{c3, c6}},
		{blackboard.Constraints, store.Filter{Namespace: "nowhere"}, nil},
		{blackboard.Constraints, store.Filter{Status: active, Scope: per, Namespace: "a"}, []blackboard.Record{c1}},
		{blackboard.Constraints, store.Filter{Status: active, Scope: per, Namespace: "ab"}, []blackboard.Record{c2}},
		{blackboard.Constraints, store.Filter{Status: active, Scope: per, Namespace: blackboard.DefaultNamespace}, []blackboard.Record{c3, c6}},
		{blackboard.Constraints, store.Filter{Status: active, Scope: per, Namespace: "b"}, nil},
		{blackboard.Constraints, store.Filter{Status: active, Scope: per}, []blackboard.Record{c1, c2, c3, c6, c8}},
		{blackboard.Constraints, store.Filter{Status: active, Namespace: "a"}, []blackboard.Record{c1, c4}},
		{blackboard.Constraints, store.Filter{Scope: per, Namespace: "a"}, []blackboard.Record{c1, c5}},
		{blackboard.Constraints, store.Filter{Scope: ep, Namespace: "a"}, []blackboard.Record{c4}},
		{blackboard.Constraints, store.Filter{Status: blackboard.StatusInvalidated, Scope: per, Namespace: "a"}, []blackboard.Record{c5}},
		{blackboard.Constraints, store.Filter{Status: blackboard.StatusExpired, Scope: per, Namespace: "b"}, []blackboard.Record{c7}},
		{blackboard.Percepts, store.Filter{Status: active, Scope: per, Namespace: "a"}, []blackboard.Record{p9}},
		{blackboard.Plans, store.Filter{Status: active, Scope: per, Namespace: "a"}, nil},
	}
	for _, l := range lists {
		wantSame(t, collect(t, "ListSlot", s.ListSlot(ctx, l.slot, l.f)), l.want,
			fmt.Sprintf("ListSlot(%s, %s) returns exactly the matching records of that namespace in append order", l.slot, show(l.f)))
	}

	mustInvalidate(t, s, c1.ID, blackboard.StatusExpired, reason.TTLExpired)
	wantSame(t, len(collect(t, "ListSlot", s.ListSlot(ctx, blackboard.Constraints, store.Filter{Status: active, Scope: per, Namespace: "a"}))), 0,
		"a namespace's active persistent listing drops a record once its status changes")

	// A long listing of one namespace's active persistent records, the
	// kernel's per-decision read, interleaved with another namespace's, to
	// catch paging mistakes in that listing.
	const n = 600
	var batch store.Batch
	var want []string
	for i := 1; i <= n; i++ {
		r := c("long", 100+i, "long", per)
		o := c("long-other", 100+i, "long-other", per)
		batch.Appends = append(batch.Appends, r, o)
		want = append(want, r.ID)
	}
	if err := s.Apply(ctx, batch); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	wantSame(t, ids(collect(t, "ListSlot", s.ListSlot(ctx, blackboard.Constraints, store.Filter{Status: active, Scope: per, Namespace: "long"}))), want,
		"a long listing of a namespace's active persistent records returns each of them once, in append order")
}

// testTraceNamespace checks that a trace is named by its namespace and
// its id: one trace id in two namespaces is two traces, which hold, list,
// find, count and condition batches apart, whether they start in separate
// batches or in one; and a record reads back in its own namespace.
func testTraceNamespace(t *testing.T, s store.Store) {
	ctx := t.Context()
	in := func(ns, trace string, n int) blackboard.Record {
		r := record(trace, blackboard.Percepts, "door", n)
		r.ID, r.Namespace = store.RecordID(blackboard.Percepts, ns, trace, n), ns
		return r
	}
	a1, b1, d1 := in("a", "t", 1), in("b", "t", 1), in("", "t", 1)
	const contract = "one trace id in two namespaces is two traces"
	mustAppend(t, s, a1)
	// b's trace t holds nothing, though a's holds a record.
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{b1}, Trace: "t", TraceNamespace: "b", TraceLen: 0}); err != nil {
		t.Fatalf("%s: Apply(%s) conditional on b's empty trace t: %v", contract, b1.ID, err)
	}
	wantErr(t, s.Apply(ctx, store.Batch{Appends: []blackboard.Record{d1}, Trace: "t", TraceLen: 1}), blackboard.ErrConflict,
		contract+": the default namespace's trace t holds no record, whatever a and b hold")
	mustAppend(t, s, d1)
	u := []blackboard.Record{in("a", "u", 1), in("b", "u", 1), in("a", "u", 2)}
	if err := s.Apply(ctx, store.Batch{Appends: u}); err != nil {
		t.Fatalf("%s: one batch starting trace u in two namespaces: %v", contract, err)
	}
	for _, c := range []struct {
		ns, trace string
		want      []blackboard.Record
	}{
		{"a", "t", []blackboard.Record{a1}}, {"b", "t", []blackboard.Record{b1}}, {"", "t", []blackboard.Record{stored(d1)}},
		{blackboard.DefaultNamespace, "t", []blackboard.Record{stored(d1)}},
		{"a", "u", []blackboard.Record{u[0], u[2]}}, {"b", "u", []blackboard.Record{u[1]}}, {"", "u", nil}, {"c", "t", nil},
	} {
		got := collect(t, "ListTrace", s.ListTrace(ctx, c.ns, c.trace))
		if len(c.want) == 0 {
			wantSame(t, len(got), 0, fmt.Sprintf("%s: ListTrace(%q, %q) is empty", contract, c.ns, c.trace))
		} else {
			wantSame(t, got, c.want, fmt.Sprintf("%s: ListTrace(%q, %q)", contract, c.ns, c.trace))
		}
		f, err := s.FindActive(ctx, c.ns, c.trace, blackboard.Percepts, "door")
		switch {
		case len(c.want) == 0:
			wantErr(t, err, blackboard.ErrNotFound, fmt.Sprintf("%s: FindActive(%q, %q)", contract, c.ns, c.trace))
		case err != nil:
			t.Errorf("%s: FindActive(%q, %q): %v", contract, c.ns, c.trace, err)
		default:
			wantSame(t, f, c.want[len(c.want)-1], fmt.Sprintf("%s: FindActive(%q, %q)", contract, c.ns, c.trace))
		}
	}
	for _, r := range append([]blackboard.Record{a1, b1, stored(d1)}, u...) {
		wantSame(t, mustGet(t, s, r.ID), r, contract+": Get reads each record back in its own namespace")
	}
	// The listing of traces names each (namespace, id) once.
	got := map[string]int{}
	for ts, err := range store.ListTraces(ctx, s, "") {
		if err != nil {
			t.Fatal(err)
		}
		got[ts.Namespace+"/"+ts.TraceID] += ts.Records
	}
	wantSame(t, got, map[string]int{"a/t": 1, "b/t": 1, blackboard.DefaultNamespace + "/t": 1, "a/u": 2, "b/u": 1},
		contract+": ListTraces lists each namespace's trace apart")
	ss, ok := s.(store.StateStore)
	if !ok {
		return
	}
	// A status change in a's trace t counts in it alone.
	before := readStateIn(t, ss, "b", "t")
	if err := s.Apply(ctx, store.Batch{Invalidations: []store.Invalidation{{ID: a1.ID, Status: blackboard.StatusInvalidated, Reason: reason.StaleEvidence}}}); err != nil {
		t.Fatal(err)
	}
	wantCounters(t, ss, "t", 1, "a", 2, contract+": a's trace t counted its status change")
	wantSame(t, readStateIn(t, ss, "b", "t"), before, contract+": b's trace t did not count a's status change")
	wantCounters(t, ss, "u", 2, "a", 1, contract+": a's trace u")
	wantCounters(t, ss, "u", 1, "b", 1, contract+": b's trace u")
	// A state is stored in the trace of the batch's namespace only.
	b2 := in("b", "t", 2)
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{b2}, Trace: "t", TraceNamespace: "b", TraceLen: 1, State: testState("b's"), Version: before.Version}); err != nil {
		t.Fatalf("%s: a batch with a state, conditional on b's trace t: %v", contract, err)
	}
	if st := readStateIn(t, ss, "a", "t"); st.StateVersion != 0 || st.Value != nil || st.Data != nil {
		t.Errorf("%s: a's trace t holds a state b's batch stored: %+v", contract, st)
	}
	if st := readStateIn(t, ss, "b", "t"); st.StateVersion == 0 {
		t.Errorf("%s: b's trace t holds no state after b's batch stored one: %+v", contract, st)
	}
}

package storetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
)

// testNamespaceRoundTrip checks that a record's namespace is kept, and that
// a record appended without one, alone or in a batch of several, reads back in
// blackboard.DefaultNamespace from every read method, before and after a status
// change.
func testNamespaceRoundTrip(t *testing.T, s blackboard.Store) {
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
	if err := s.Apply(ctx, blackboard.Batch{Appends: []blackboard.Record{inBatch, named, explicit}}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	want := []blackboard.Record{stored(alone), stored(inBatch), named, explicit}
	if want[0].Namespace != blackboard.DefaultNamespace {
		t.Fatal("suite bug: stored() does not default the namespace")
	}
	const contract = "a record appended with an empty namespace reads back in blackboard.DefaultNamespace, and a namespace is kept"
	for _, w := range want {
		wantSame(t, mustGet(t, s, w.ID), w, contract+" (Get)")
		got, err := s.FindActive(ctx, w.TraceID(), w.Slot, w.Kind)
		if err != nil {
			t.Fatalf("FindActive(%s): %v", w.ID, err)
		}
		wantSame(t, got, w, contract+" (FindActive)")
	}
	wantSame(t, collect(t, "ListTrace", s.ListTrace(ctx, trace)), []blackboard.Record{want[0], want[1], explicit}, contract+" (ListTrace)")
	wantSame(t, collect(t, "ListSlot", s.ListSlot(ctx, blackboard.Constraints, blackboard.Filter{})), []blackboard.Record{want[0], named},
		contract+" (ListSlot)")
	wantSame(t, collect(t, "ListSlot", s.ListSlot(ctx, blackboard.Constraints, blackboard.Filter{Status: blackboard.StatusActive, Scope: blackboard.ScopePersistent})),
		[]blackboard.Record{want[0], named}, contract+" (ListSlot of active persistent records)")

	mustInvalidate(t, s, alone.ID, blackboard.StatusInvalidated, blackboard.CodeSupersededByCommit)
	mustInvalidate(t, s, named.ID, blackboard.StatusExpired, blackboard.CodeTTLExpired)
	wantSame(t, mustGet(t, s, alone.ID), invalidated(want[0], blackboard.StatusInvalidated, blackboard.CodeSupersededByCommit),
		"a status change keeps the record's namespace (blackboard.DefaultNamespace)")
	wantSame(t, mustGet(t, s, named.ID), invalidated(named, blackboard.StatusExpired, blackboard.CodeTTLExpired),
		"a status change keeps the record's namespace")
}

// testListSlotNamespace checks Filter.Namespace alone and with Status and
// Scope, above all the listing the kernel runs on every gated decision: the
// active persistent constraints of one namespace.
func testListSlotNamespace(t *testing.T, s blackboard.Store) {
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
	c7.Status, c7.Reason = blackboard.StatusExpired, blackboard.CodeTTLExpired
	c8 := c("B", 8, "A", per)
	p9 := record("A/a", blackboard.Percepts, "door", 9)
	p9.Namespace, p9.Scope = "a", per
	mustAppend(t, s, c1, c2, c3, c4, c5, c6, c7, c8, p9)
	mustInvalidate(t, s, c5.ID, blackboard.StatusInvalidated, blackboard.CodeSupersededByCommit)
	c3, c5 = stored(c3), invalidated(c5, blackboard.StatusInvalidated, blackboard.CodeSupersededByCommit)

	active := blackboard.StatusActive
	lists := []struct {
		slot blackboard.Slot
		f    blackboard.Filter
		want []blackboard.Record
	}{
		{blackboard.Constraints, blackboard.Filter{Namespace: "a"}, []blackboard.Record{c1, c4, c5}},
		{blackboard.Constraints, blackboard.Filter{Namespace: "ab"}, []blackboard.Record{c2}},
		{blackboard.Constraints, blackboard.Filter{Namespace: "A"}, []blackboard.Record{c8}},
		{blackboard.Constraints, blackboard.Filter{Namespace: blackboard.DefaultNamespace}, []blackboard.Record{c3, c6}},
		{blackboard.Constraints, blackboard.Filter{Namespace: "nowhere"}, nil},
		{blackboard.Constraints, blackboard.Filter{Status: active, Scope: per, Namespace: "a"}, []blackboard.Record{c1}},
		{blackboard.Constraints, blackboard.Filter{Status: active, Scope: per, Namespace: "ab"}, []blackboard.Record{c2}},
		{blackboard.Constraints, blackboard.Filter{Status: active, Scope: per, Namespace: blackboard.DefaultNamespace}, []blackboard.Record{c3, c6}},
		{blackboard.Constraints, blackboard.Filter{Status: active, Scope: per, Namespace: "b"}, nil},
		{blackboard.Constraints, blackboard.Filter{Status: active, Scope: per}, []blackboard.Record{c1, c2, c3, c6, c8}},
		{blackboard.Constraints, blackboard.Filter{Status: active, Namespace: "a"}, []blackboard.Record{c1, c4}},
		{blackboard.Constraints, blackboard.Filter{Scope: per, Namespace: "a"}, []blackboard.Record{c1, c5}},
		{blackboard.Constraints, blackboard.Filter{Scope: ep, Namespace: "a"}, []blackboard.Record{c4}},
		{blackboard.Constraints, blackboard.Filter{Status: blackboard.StatusInvalidated, Scope: per, Namespace: "a"}, []blackboard.Record{c5}},
		{blackboard.Constraints, blackboard.Filter{Status: blackboard.StatusExpired, Scope: per, Namespace: "b"}, []blackboard.Record{c7}},
		{blackboard.Percepts, blackboard.Filter{Status: active, Scope: per, Namespace: "a"}, []blackboard.Record{p9}},
		{blackboard.Plans, blackboard.Filter{Status: active, Scope: per, Namespace: "a"}, nil},
	}
	for _, l := range lists {
		wantSame(t, collect(t, "ListSlot", s.ListSlot(ctx, l.slot, l.f)), l.want,
			fmt.Sprintf("ListSlot(%s, %s) returns exactly the matching records of that namespace in append order", l.slot, show(l.f)))
	}

	mustInvalidate(t, s, c1.ID, blackboard.StatusExpired, blackboard.CodeTTLExpired)
	wantSame(t, len(collect(t, "ListSlot", s.ListSlot(ctx, blackboard.Constraints, blackboard.Filter{Status: active, Scope: per, Namespace: "a"}))), 0,
		"a namespace's active persistent listing drops a record once its status changes")

	// A long listing of one namespace's active persistent records, the
	// kernel's per-decision read, interleaved with another namespace's, to
	// catch paging mistakes in that listing.
	const n = 600
	var batch blackboard.Batch
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
	wantSame(t, ids(collect(t, "ListSlot", s.ListSlot(ctx, blackboard.Constraints, blackboard.Filter{Status: active, Scope: per, Namespace: "long"}))), want,
		"a long listing of a namespace's active persistent records returns each of them once, in append order")
}

// testTraceNamespace checks that a trace belongs to one namespace: a record
// of another namespace is refused with blackboard.ErrPermission, whether the
// trace is stored already or starts in the same batch, and nothing of the
// batch lands.
func testTraceNamespace(t *testing.T, s blackboard.Store) {
	ctx := t.Context()
	a1 := record("t", blackboard.Percepts, "door", 1)
	a1.Namespace = "a"
	mustAppend(t, s, a1)
	b2 := record("t", blackboard.Percepts, "door", 2)
	b2.Namespace = "b"
	d2 := record("t", blackboard.Percepts, "door", 2) // the default namespace, spelled as ""
	d2.Namespace = ""
	fresh1 := record("u", blackboard.Percepts, "door", 1)
	fresh1.Namespace = "a"
	fresh2 := record("u", blackboard.Percepts, "door", 2)
	fresh2.Namespace = "b"
	const contract = "a trace belongs to one namespace: Apply refuses a record of another with blackboard.ErrPermission and stores nothing of the batch"
	for _, b := range []blackboard.Batch{
		{Appends: []blackboard.Record{b2}},
		{Appends: []blackboard.Record{d2}},
		{Appends: []blackboard.Record{b2}, Trace: "t", TraceLen: 1},
		{Appends: []blackboard.Record{fresh1, fresh2}},
	} {
		if err := s.Apply(ctx, b); !errors.Is(err, blackboard.ErrPermission) {
			t.Errorf("%s: Apply(%v) = %v", contract, ids(b.Appends), err)
		}
	}
	wantSame(t, ids(collect(t, "ListTrace", s.ListTrace(ctx, "t"))), []string{a1.ID}, contract)
	wantSame(t, len(collect(t, "ListTrace", s.ListTrace(ctx, "u"))), 0, contract)
	same := record("t", blackboard.Percepts, "door", 2)
	same.Namespace = "a"
	if err := s.Apply(ctx, blackboard.Batch{Appends: []blackboard.Record{same}, Trace: "t", TraceLen: 1}); err != nil {
		t.Errorf("a record of the trace's own namespace: %v", err)
	}
}

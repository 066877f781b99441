package storetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/blackboardkernel/bk/kernel"
)

// testNamespaceRoundTrip checks that a record's namespace is kept, and that
// a record appended without one, by Append or by Apply, reads back in
// kernel.DefaultNamespace from every read method, before and after a status
// change.
func testNamespaceRoundTrip(t *testing.T, s kernel.Store) {
	ctx := t.Context()
	const trace = "ns"
	viaAppend := record(trace, kernel.Constraints, "rule_a", 1)
	viaAppend.Namespace, viaAppend.Scope = "", kernel.ScopePersistent
	viaApply := record(trace, kernel.Beliefs, "door_open", 2)
	viaApply.Namespace = ""
	named := record(trace+"-tenant", kernel.Constraints, "rule_b", 3) // a trace belongs to one namespace
	named.Namespace, named.Scope = "tenant-ä", kernel.ScopePersistent
	explicit := record(trace, kernel.Percepts, "door", 4) // kernel.DefaultNamespace, spelled out
	mustAppend(t, s, viaAppend)
	if err := s.Apply(ctx, kernel.Batch{Appends: []kernel.Record{viaApply, named, explicit}}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	want := []kernel.Record{stored(viaAppend), stored(viaApply), named, explicit}
	if want[0].Namespace != kernel.DefaultNamespace {
		t.Fatal("suite bug: stored() does not default the namespace")
	}
	const contract = "a record appended with an empty namespace reads back in kernel.DefaultNamespace, and a namespace is kept"
	for _, w := range want {
		wantSame(t, mustGet(t, s, w.ID), w, contract+" (Get)")
		got, err := s.FindActive(ctx, w.TraceID(), w.Slot, w.Kind)
		if err != nil {
			t.Fatalf("FindActive(%s): %v", w.ID, err)
		}
		wantSame(t, got, w, contract+" (FindActive)")
	}
	wantSame(t, collect(t, "ListTrace", s.ListTrace(ctx, trace)), []kernel.Record{want[0], want[1], explicit}, contract+" (ListTrace)")
	wantSame(t, collect(t, "ListSlot", s.ListSlot(ctx, kernel.Constraints, kernel.Filter{})), []kernel.Record{want[0], named},
		contract+" (ListSlot)")
	wantSame(t, collect(t, "ListSlot", s.ListSlot(ctx, kernel.Constraints, kernel.Filter{Status: kernel.StatusActive, Scope: kernel.ScopePersistent})),
		[]kernel.Record{want[0], named}, contract+" (ListSlot of active persistent records)")

	mustInvalidate(t, s, viaAppend.ID, kernel.StatusInvalidated, kernel.CodeSupersededByCommit)
	mustInvalidate(t, s, named.ID, kernel.StatusExpired, kernel.CodeTTLExpired)
	wantSame(t, mustGet(t, s, viaAppend.ID), invalidated(want[0], kernel.StatusInvalidated, kernel.CodeSupersededByCommit),
		"a status change keeps the record's namespace (kernel.DefaultNamespace)")
	wantSame(t, mustGet(t, s, named.ID), invalidated(named, kernel.StatusExpired, kernel.CodeTTLExpired),
		"a status change keeps the record's namespace")
}

// testListSlotNamespace checks Filter.Namespace alone and with Status and
// Scope, above all the listing the kernel runs on every gated decision: the
// active persistent constraints of one namespace.
func testListSlotNamespace(t *testing.T, s kernel.Store) {
	ctx := t.Context()
	const per, ep = kernel.ScopePersistent, kernel.ScopeEpisode
	// Each record in a trace of its own namespace: a trace belongs to one.
	c := func(trace string, n int, ns string, scope kernel.Scope) kernel.Record {
		r := record(trace+"/"+ns, kernel.Constraints, fmt.Sprintf("rule%d", n), n)
		r.Namespace, r.Scope = ns, scope
		return r
	}
	// Namespaces that share a prefix or differ only in case, so that a store
	// cannot get away with prefix or case-folded matches.
	c1 := c("A", 1, "a", per)
	c2 := c("B", 2, "ab", per)
	c3 := c("A", 3, "", per) // kernel.DefaultNamespace
	c4 := c("B", 4, "a", ep)
	c5 := c("A", 5, "a", per) // invalidated below
	c6 := c("B", 6, kernel.DefaultNamespace, per)
	c7 := c("A", 7, "b", per)
	c7.Status, c7.Reason = kernel.StatusExpired, kernel.CodeTTLExpired
	c8 := c("B", 8, "A", per)
	p9 := record("A/a", kernel.Percepts, "door", 9)
	p9.Namespace, p9.Scope = "a", per
	mustAppend(t, s, c1, c2, c3, c4, c5, c6, c7, c8, p9)
	mustInvalidate(t, s, c5.ID, kernel.StatusInvalidated, kernel.CodeSupersededByCommit)
	c3, c5 = stored(c3), invalidated(c5, kernel.StatusInvalidated, kernel.CodeSupersededByCommit)

	active := kernel.StatusActive
	lists := []struct {
		slot kernel.Slot
		f    kernel.Filter
		want []kernel.Record
	}{
		{kernel.Constraints, kernel.Filter{Namespace: "a"}, []kernel.Record{c1, c4, c5}},
		{kernel.Constraints, kernel.Filter{Namespace: "ab"}, []kernel.Record{c2}},
		{kernel.Constraints, kernel.Filter{Namespace: "A"}, []kernel.Record{c8}},
		{kernel.Constraints, kernel.Filter{Namespace: kernel.DefaultNamespace}, []kernel.Record{c3, c6}},
		{kernel.Constraints, kernel.Filter{Namespace: "nowhere"}, nil},
		{kernel.Constraints, kernel.Filter{Status: active, Scope: per, Namespace: "a"}, []kernel.Record{c1}},
		{kernel.Constraints, kernel.Filter{Status: active, Scope: per, Namespace: "ab"}, []kernel.Record{c2}},
		{kernel.Constraints, kernel.Filter{Status: active, Scope: per, Namespace: kernel.DefaultNamespace}, []kernel.Record{c3, c6}},
		{kernel.Constraints, kernel.Filter{Status: active, Scope: per, Namespace: "b"}, nil},
		{kernel.Constraints, kernel.Filter{Status: active, Scope: per}, []kernel.Record{c1, c2, c3, c6, c8}},
		{kernel.Constraints, kernel.Filter{Status: active, Namespace: "a"}, []kernel.Record{c1, c4}},
		{kernel.Constraints, kernel.Filter{Scope: per, Namespace: "a"}, []kernel.Record{c1, c5}},
		{kernel.Constraints, kernel.Filter{Scope: ep, Namespace: "a"}, []kernel.Record{c4}},
		{kernel.Constraints, kernel.Filter{Status: kernel.StatusInvalidated, Scope: per, Namespace: "a"}, []kernel.Record{c5}},
		{kernel.Constraints, kernel.Filter{Status: kernel.StatusExpired, Scope: per, Namespace: "b"}, []kernel.Record{c7}},
		{kernel.Percepts, kernel.Filter{Status: active, Scope: per, Namespace: "a"}, []kernel.Record{p9}},
		{kernel.Plans, kernel.Filter{Status: active, Scope: per, Namespace: "a"}, nil},
	}
	for _, l := range lists {
		wantSame(t, collect(t, "ListSlot", s.ListSlot(ctx, l.slot, l.f)), l.want,
			fmt.Sprintf("ListSlot(%s, %s) returns exactly the matching records of that namespace in append order", l.slot, show(l.f)))
	}

	mustInvalidate(t, s, c1.ID, kernel.StatusExpired, kernel.CodeTTLExpired)
	wantSame(t, len(collect(t, "ListSlot", s.ListSlot(ctx, kernel.Constraints, kernel.Filter{Status: active, Scope: per, Namespace: "a"}))), 0,
		"a namespace's active persistent listing drops a record once its status changes")

	// A long listing of one namespace's active persistent records, the
	// kernel's per-decision read, interleaved with another namespace's, to
	// catch paging mistakes in that listing.
	const n = 600
	var batch kernel.Batch
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
	wantSame(t, ids(collect(t, "ListSlot", s.ListSlot(ctx, kernel.Constraints, kernel.Filter{Status: active, Scope: per, Namespace: "long"}))), want,
		"a long listing of a namespace's active persistent records returns each of them once, in append order")
}

// testTraceNamespace checks that a trace belongs to one namespace: a record
// of another namespace is refused with kernel.ErrPermission, whether the
// trace is stored already or starts in the same batch, and nothing of the
// batch lands.
func testTraceNamespace(t *testing.T, s kernel.Store) {
	ctx := t.Context()
	a1 := record("t", kernel.Percepts, "door", 1)
	a1.Namespace = "a"
	mustAppend(t, s, a1)
	b2 := record("t", kernel.Percepts, "door", 2)
	b2.Namespace = "b"
	d2 := record("t", kernel.Percepts, "door", 2) // the default namespace, spelled as ""
	d2.Namespace = ""
	fresh1 := record("u", kernel.Percepts, "door", 1)
	fresh1.Namespace = "a"
	fresh2 := record("u", kernel.Percepts, "door", 2)
	fresh2.Namespace = "b"
	const contract = "a trace belongs to one namespace: Apply refuses a record of another with kernel.ErrPermission and stores nothing of the batch"
	for _, b := range []kernel.Batch{
		{Appends: []kernel.Record{b2}},
		{Appends: []kernel.Record{d2}},
		{Appends: []kernel.Record{b2}, Trace: "t", TraceLen: 1},
		{Appends: []kernel.Record{fresh1, fresh2}},
	} {
		if err := s.Apply(ctx, b); !errors.Is(err, kernel.ErrPermission) {
			t.Errorf("%s: Apply(%v) = %v", contract, ids(b.Appends), err)
		}
	}
	wantSame(t, ids(collect(t, "ListTrace", s.ListTrace(ctx, "t"))), []string{a1.ID}, contract)
	wantSame(t, len(collect(t, "ListTrace", s.ListTrace(ctx, "u"))), 0, contract)
	same := record("t", kernel.Percepts, "door", 2)
	same.Namespace = "a"
	if err := s.Apply(ctx, kernel.Batch{Appends: []kernel.Record{same}, Trace: "t", TraceLen: 1}); err != nil {
		t.Errorf("a record of the trace's own namespace: %v", err)
	}
}

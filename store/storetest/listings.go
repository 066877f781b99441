package storetest

import (
	"fmt"
	"iter"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

func testFindActive(t *testing.T, s store.Store) {
	ctx := t.Context()
	const trace, kind = "find", "door_open"
	r1 := record(trace, blackboard.Beliefs, kind, 1)
	r2 := record(trace, blackboard.Beliefs, kind, 2)
	r3 := record(trace, blackboard.Beliefs, kind, 3) // invalidated below
	r4 := record(trace, blackboard.Beliefs, kind, 4) // expired below
	r5 := record(trace, blackboard.Beliefs, kind, 5)
	r5.Status, r5.Reason = blackboard.StatusInvalidated, reason.LowConfidence // appended already decided
	r6 := record(trace, blackboard.Percepts, kind, 6)
	r7 := record(trace, blackboard.Beliefs, "other_kind", 7)
	other := record("find:2", blackboard.Beliefs, kind, 8) // another trace, appended last
	prefix := record("fin", blackboard.Beliefs, kind, 9)   // a trace id that is a prefix
	mustAppend(t, s, r1, r2, r3, r4, r5, r6, r7, other, prefix)
	mustInvalidate(t, s, r3.ID, blackboard.StatusInvalidated, reason.StaleEvidence)
	mustInvalidate(t, s, r4.ID, blackboard.StatusExpired, reason.TTLExpired)

	find := func(trace string, slot blackboard.Slot, kind string, want blackboard.Record, contract string) {
		t.Helper()
		got, err := s.FindActive(ctx, "", trace, slot, kind)
		if err != nil {
			t.Errorf("%s: FindActive(%q, %s, %q): %v", contract, trace, slot, kind, err)
			return
		}
		wantSame(t, got, want, contract)
	}
	notFound := func(trace string, slot blackboard.Slot, kind string, contract string) {
		t.Helper()
		_, err := s.FindActive(ctx, "", trace, slot, kind)
		wantErr(t, err, blackboard.ErrNotFound, contract)
	}

	find(trace, blackboard.Beliefs, kind, r2,
		"FindActive returns the latest ACTIVE record of the kind, skipping invalidated and expired ones and other traces")
	find(trace, blackboard.Percepts, kind, r6, "FindActive looks only in the slot asked for")
	find(trace, blackboard.Beliefs, "other_kind", r7, "FindActive looks only for the kind asked for")
	find("find:2", blackboard.Beliefs, kind, other, "FindActive looks only in the trace asked for")
	find("fin", blackboard.Beliefs, kind, prefix, "FindActive matches the trace id exactly")

	mustInvalidate(t, s, r2.ID, blackboard.StatusInvalidated, reason.SupersededByCommit)
	find(trace, blackboard.Beliefs, kind, r1, "FindActive falls back to an older ACTIVE record once the latest is invalidated")
	mustInvalidate(t, s, r1.ID, blackboard.StatusExpired, reason.TTLExpired)
	notFound(trace, blackboard.Beliefs, kind, "FindActive when no record of the kind is ACTIVE any more")
	notFound(trace, blackboard.Actions, kind, "FindActive in a slot without the kind")
	notFound(trace, blackboard.Beliefs, "absent", "FindActive of an unknown kind")
	notFound("absent", blackboard.Beliefs, kind, "FindActive in an unknown trace")
	notFound("fi", blackboard.Beliefs, kind, "FindActive does not match a prefix of a trace id")
}

func testListTrace(t *testing.T, s store.Store) {
	ctx := t.Context()
	// Trace ids that share prefixes or contain the id separator, so that a
	// store cannot get away with matching prefixes or parsing ids.
	traces := []string{"iso", "iso2", "iso:x", "ISO"}
	want := map[string][]blackboard.Record{}
	slots := blackboard.AllSlots()
	for n := 1; n <= 28; n++ {
		tr := traces[n%len(traces)]
		r := record(tr, slots[n%len(slots)], fmt.Sprintf("kind%d", n%3), n)
		mustAppend(t, s, r)
		want[tr] = append(want[tr], r)
	}
	for _, tr := range traces {
		wantSame(t, collect(t, "ListTrace", s.ListTrace(ctx, "", tr)), want[tr],
			"ListTrace("+tr+") returns exactly that trace's records in append order")
	}
	changed := want["iso"][2]
	mustInvalidate(t, s, changed.ID, blackboard.StatusInvalidated, reason.UnresolvedConflict)
	want["iso"][2] = invalidated(changed, blackboard.StatusInvalidated, reason.UnresolvedConflict)
	wantSame(t, collect(t, "ListTrace", s.ListTrace(ctx, "", "iso")), want["iso"],
		"ListTrace keeps a record's place after its status changes")
	wantSame(t, len(collect(t, "ListTrace", s.ListTrace(ctx, "", "absent"))), 0,
		"ListTrace of an unknown trace is empty")
	wantSame(t, len(collect(t, "ListTrace", s.ListTrace(ctx, "", "is"))), 0,
		"ListTrace does not match a prefix of a trace id")
}

func testListSlot(t *testing.T, s store.Store) {
	ctx := t.Context()
	c := func(trace string, n int, scope blackboard.Scope) blackboard.Record {
		r := record(trace, blackboard.Constraints, fmt.Sprintf("rule%d", n), n)
		r.Scope = scope
		return r
	}
	const ep, per = blackboard.ScopeEpisode, blackboard.ScopePersistent
	c1, c2, c3, c4 := c("A", 1, ep), c("B", 2, per), c("A", 3, per), c("B", 4, ep)
	p5 := record("A", blackboard.Percepts, "door", 5)
	c6, c7, c8 := c("A", 6, per), c("B", 7, per), c("A", 8, ep)
	p9 := record("B", blackboard.Percepts, "door", 9)
	p9.Scope = per
	mustAppend(t, s, c1, c2, c3, c4, p5, c6, c7, c8, p9)
	mustInvalidate(t, s, c3.ID, blackboard.StatusInvalidated, reason.SupersededByCommit)
	mustInvalidate(t, s, c4.ID, blackboard.StatusExpired, reason.TTLExpired)
	c3 = invalidated(c3, blackboard.StatusInvalidated, reason.SupersededByCommit)
	c4 = invalidated(c4, blackboard.StatusExpired, reason.TTLExpired)

	lists := []struct {
		slot blackboard.Slot
		f    store.Filter
		want []blackboard.Record
	}{
		{blackboard.Constraints, store.Filter{}, []blackboard.Record{c1, c2, c3, c4, c6, c7, c8}},
		{blackboard.Constraints, store.Filter{Status: blackboard.StatusActive}, []blackboard.Record{c1, c2, c6, c7, c8}},
		{blackboard.Constraints, store.Filter{Status: blackboard.StatusInvalidated}, []blackboard.Record{c3}},
		{blackboard.Constraints, store.Filter{Status: blackboard.StatusExpired}, []blackboard.Record{c4}},
		{blackboard.Constraints, store.Filter{Scope: per}, []blackboard.Record{c2, c3, c6, c7}},
		{blackboard.Constraints, store.Filter{Scope: ep}, []blackboard.Record{c1, c4, c8}},
		{blackboard.Constraints, store.Filter{Status: blackboard.StatusActive, Scope: per}, []blackboard.Record{c2, c6, c7}},
		{blackboard.Constraints, store.Filter{Status: blackboard.StatusExpired, Scope: ep}, []blackboard.Record{c4}},
		{blackboard.Constraints, store.Filter{Status: blackboard.StatusExpired, Scope: per}, nil},
		{blackboard.Percepts, store.Filter{}, []blackboard.Record{p5, p9}},
		{blackboard.Percepts, store.Filter{Status: blackboard.StatusActive, Scope: per}, []blackboard.Record{p9}},
		{blackboard.Plans, store.Filter{}, nil},
	}
	for _, l := range lists {
		wantSame(t, collect(t, "ListSlot", s.ListSlot(ctx, l.slot, l.f)), l.want,
			fmt.Sprintf("ListSlot(%s, %s) returns exactly the matching records of every trace in append order", l.slot, show(l.f)))
	}
	for _, slot := range []blackboard.Slot{"", "Actions", "percept"} {
		var err error
		for _, e := range s.ListSlot(ctx, slot, store.Filter{}) {
			if err = e; err != nil {
				break
			}
		}
		wantErr(t, err, blackboard.ErrInvalidInput, fmt.Sprintf("ListSlot of slot %q", slot))
	}
}

// testLongListings lists more records than a store is likely to read in one
// page, interleaved with another trace, to catch paging mistakes.
func testLongListings(t *testing.T, s store.Store) {
	ctx := t.Context()
	const n = 700
	var long, other, active []blackboard.Record
	var batch store.Batch
	for i := 1; i <= n; i++ {
		r := record("long", blackboard.Beliefs, "k", i)
		if i%3 == 0 {
			r.Status, r.Reason = blackboard.StatusInvalidated, reason.MissingEvidence
		} else {
			active = append(active, r)
		}
		o := record("long-other", blackboard.Plans, "p", i)
		long, other = append(long, r), append(other, o)
		batch.Appends = append(batch.Appends, r, o)
		if len(batch.Appends) == 100 || i == n {
			if err := s.Apply(ctx, batch); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			batch = store.Batch{}
		}
	}
	wantSame(t, ids(collect(t, "ListTrace", s.ListTrace(ctx, "", "long"))), ids(long),
		"a long ListTrace returns every record of the trace once, in append order")
	wantSame(t, ids(collect(t, "ListSlot", s.ListSlot(ctx, blackboard.Plans, store.Filter{}))), ids(other),
		"a long ListSlot returns every record of the slot once, in append order")
	wantSame(t, ids(collect(t, "ListSlot", s.ListSlot(ctx, blackboard.Beliefs, store.Filter{Status: blackboard.StatusActive}))), ids(active),
		"a long filtered ListSlot returns every matching record once, in append order")

	var got []string
	for r, err := range s.ListTrace(ctx, "", "long") {
		if err != nil {
			t.Fatalf("ListTrace: %v", err)
		}
		if got = append(got, r.ID); len(got) == 300 {
			break
		}
	}
	wantSame(t, got, ids(long[:300]), "a ListTrace stopped early yields a prefix of the trace")
}

// testListingCallbacks calls back into the store from inside listings: a
// store must not hold a lock, connection or transaction across a yield in a
// way that deadlocks.
func testListingCallbacks(t *testing.T, s store.Store) {
	ctx := t.Context()
	const trace = "callback"
	var recs []blackboard.Record
	for n := 1; n <= 3; n++ {
		r := record(trace, blackboard.Percepts, "door", n)
		r.Scope = blackboard.ScopePersistent
		recs = append(recs, r)
	}
	mustAppend(t, s, recs...)

	listings := []struct {
		name string
		side string
		seq  iter.Seq2[blackboard.Record, error]
	}{
		{"ListTrace", "callback-side-1", s.ListTrace(ctx, "", trace)},
		{"ListSlot", "callback-side-2", s.ListSlot(ctx, blackboard.Percepts, store.Filter{Status: blackboard.StatusActive, Scope: blackboard.ScopePersistent})},
	}
	for i, l := range listings {
		n := 0
		for r, err := range l.seq {
			if err != nil {
				t.Fatalf("%s: %v", l.name, err)
			}
			n++
			mustGet(t, s, r.ID)
			if _, err := s.FindActive(ctx, "", trace, blackboard.Percepts, "door"); err != nil {
				t.Fatalf("FindActive inside %s: %v", l.name, err)
			}
			mustAppend(t, s, record(l.side, blackboard.Beliefs, "b", n))
			collect(t, "ListTrace inside "+l.name, s.ListTrace(ctx, "", l.side))
			if i == 1 { // the second listing retires what it lists
				mustInvalidate(t, s, r.ID, blackboard.StatusInvalidated, reason.StaleEvidence)
			}
		}
		if n != len(recs) {
			t.Errorf("%s with callbacks into the store yielded %d records, want %d", l.name, n, len(recs))
		}
		wantSame(t, len(collect(t, "ListTrace", s.ListTrace(ctx, "", l.side))), len(recs),
			"writes made from inside "+l.name+" land")
	}
	for _, r := range recs {
		if got := mustGet(t, s, r.ID); got.Status != blackboard.StatusInvalidated {
			t.Errorf("a status change from inside ListSlot did not land on %s: status %s", r.ID, got.Status)
		}
	}

	for range s.ListTrace(ctx, "", trace) {
		break
	}
	for range s.ListSlot(ctx, blackboard.Percepts, store.Filter{}) {
		break
	}
	late := record(trace, blackboard.Percepts, "door", 4)
	mustAppend(t, s, late)
	wantSame(t, len(collect(t, "ListTrace", s.ListTrace(ctx, "", trace))), len(recs)+1,
		"the store keeps working after listings are abandoned early")
}

func testListSlotBadFilter(t *testing.T, s store.Store) {
	for _, bad := range []struct {
		slot blackboard.Slot
		f    store.Filter
	}{
		{"", store.Filter{}},
		{"nope", store.Filter{}},
		{blackboard.Beliefs, store.Filter{Status: "active"}},
		{blackboard.Beliefs, store.Filter{Scope: "global"}},
	} {
		wantErr(t, firstErr(s.ListSlot(t.Context(), bad.slot, bad.f)), blackboard.ErrInvalidInput,
			fmt.Sprintf("ListSlot(%q, %+v) refuses an invalid slot or filter", bad.slot, bad.f))
	}
}

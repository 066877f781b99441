package storetest

import (
	"context"
	"errors"
	"iter"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// fallbackOnly hides every optional interface of a store, so that
// [store.ListTraces] takes its fallback.
type fallbackOnly struct{ store.Store }

func collectTraces(t *testing.T, what string, seq iter.Seq2[store.TraceSummary, error]) []store.TraceSummary {
	t.Helper()
	var out []store.TraceSummary
	for ts, err := range seq {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		out = append(out, ts)
	}
	return out
}

// testListTraces checks [store.TraceLister] when the store implements it
// (skipping otherwise), and that it agrees with the fallback of
// [store.ListTraces].
func testListTraces(t *testing.T, s store.Store) {
	tl, ok := s.(store.TraceLister)
	if !ok {
		t.Skip("the store does not implement store.TraceLister (optional)")
	}
	ctx := t.Context()
	if got := collectTraces(t, "ListTraces on an empty store", tl.ListTraces(ctx, "")); len(got) != 0 {
		t.Errorf("ListTraces on an empty store: %v", got)
	}
	b1 := record("b", blackboard.Percepts, "charge", 1)
	a2 := record("a", blackboard.Percepts, "charge", 2)
	b3 := record("b", blackboard.Beliefs, "refund_due", 3)
	b3.Status, b3.Reason = blackboard.StatusInvalidated, reason.StaleEvidence
	ns4 := record("other-ns", blackboard.Percepts, "charge", 4)
	ns4.Namespace = "tenant-2"
	b5 := record("b", blackboard.Actions, "queue_for_review", 5)
	b5.Provenance.TimestampMS = baseTS - 10 // clocks may go back: first/last are min/max
	mustAppend(t, s, b1, a2, b3, ns4, b5)

	want := []store.TraceSummary{
		{TraceID: "b", Namespace: blackboard.DefaultNamespace, Records: 3, FirstMS: baseTS - 10, LastMS: baseTS + 3},
		{TraceID: "a", Namespace: blackboard.DefaultNamespace, Records: 1, FirstMS: baseTS + 2, LastMS: baseTS + 2},
		{TraceID: "other-ns", Namespace: "tenant-2", Records: 1, FirstMS: baseTS + 4, LastMS: baseTS + 4},
	}
	wantSame(t, collectTraces(t, "ListTraces", tl.ListTraces(ctx, "")), want,
		"ListTraces lists every trace once, in the order of its first append, with its namespace, count and time span")
	wantSame(t, collectTraces(t, "ListTraces(tenant-2)", tl.ListTraces(ctx, "tenant-2")), want[2:],
		"ListTraces with a namespace keeps only that namespace's traces")
	wantSame(t, collectTraces(t, "ListTraces(default)", tl.ListTraces(ctx, blackboard.DefaultNamespace)), want[:2],
		"ListTraces of the default namespace")

	// The fallback reads the same traces, ordered by first timestamp.
	fb := collectTraces(t, "store.ListTraces fallback", store.ListTraces(ctx, fallbackOnly{s}, ""))
	wantSame(t, fb, []store.TraceSummary{want[0], want[1], want[2]}, "the ListTraces fallback agrees with the store")

	// Stopping early, and calling back into the store from the loop body.
	for ts, err := range tl.ListTraces(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, "percepts:"+ts.TraceID+":1"); err != nil {
			t.Errorf("a store call from ListTraces' loop body: %v", err)
		}
		break
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, err := range tl.ListTraces(cancelled, "") {
		wantErr(t, err, context.Canceled, "ListTraces with a cancelled context")
		break
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := range tl.ListTraces(ctx, "") {
		n++
		if !errors.Is(err, blackboard.ErrClosed) {
			t.Errorf("ListTraces after Close: %v, want ErrClosed", err)
		}
	}
	if n != 1 {
		t.Errorf("ListTraces after Close yielded %d times, want one error", n)
	}
}

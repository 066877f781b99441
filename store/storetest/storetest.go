package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// Run runs the conformance suite against the stores newStore returns. Every
// case is a subtest that calls newStore once and closes the store with
// t.Cleanup (a Close that reports [blackboard.ErrClosed] is accepted, since some
// cases close the store themselves). newStore must return a new, empty
// store each time; it may register cleanups of its own, which run after the
// store is closed.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) { c.run(t, open(t, newStore)) })
	}
}

type testCase struct {
	name string
	run  func(t *testing.T, s store.Store)
}

func cases() []testCase {
	return []testCase{
		{"RoundTrip", testRoundTrip},
		{"AppendOnly", testAppendOnly},
		{"GetUnknown", testGetUnknown},
		{"MalformedRecord", testMalformed},
		{"Invalidate", testInvalidate},
		{"InvalidateNotActive", testInvalidateNotActive},
		{"InvalidateBadInput", testInvalidateBadInput},
		{"FindActive", testFindActive},
		{"ListTrace", testListTrace},
		{"ListSlot", testListSlot},
		{"LongListings", testLongListings},
		{"ListingCallbacks", testListingCallbacks},
		{"Apply", testApply},
		{"ApplyAtomic", testApplyAtomic},
		{"ApplyConditional", testApplyConditional},
		{"ListSlotBadFilter", testListSlotBadFilter},
		{"ListTraces", testListTraces},
		{"InvalidUTF8", testInvalidUTF8},
		{"TTLBounds", testTTLBounds},
		{"NamespaceRoundTrip", testNamespaceRoundTrip},
		{"ListSlotNamespace", testListSlotNamespace},
		{"TraceNamespace", testTraceNamespace},
		{"Claims", testClaims},
		{"ClaimsNamespace", testClaimsNamespace},
		{"ClaimsAtomic", testClaimsAtomic},
		{"StateCounters", testStateCounters},
		{"StateStored", testStateStored},
		{"StateRefused", testStateRefused},
		{"StateShared", testStateShared},
		{"StateSharedCondition", testStateSharedCondition},
		{"ConcurrentClaims", testConcurrentClaims},
		{"ConcurrentAppends", testConcurrentAppends},
		{"ConcurrentDuplicate", testConcurrentDuplicate},
		{"ConcurrentInvalidate", testConcurrentInvalidate},
		{"Chain", testChain},
		{"CancelledContext", testCancelledContext},
		{"Closed", testClosed},
	}
}

// open calls the factory and registers the store's Close.
func open[TB testing.TB](tb TB, newStore func(TB) store.Store) store.Store {
	tb.Helper()
	s := newStore(tb)
	if s == nil {
		tb.Fatal("newStore returned a nil Store")
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil && !errors.Is(err, blackboard.ErrClosed) {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

// baseTS is the timestamp of the records the suite builds.
const baseTS = 1_736_000_000_000

// record returns an ACTIVE committed record of trace; n is part of its id.
// It is in [blackboard.DefaultNamespace], the namespace a store gives a record
// appended without one, so that it reads back unchanged from every store;
// the namespace cases append records without one.
func record(trace string, slot blackboard.Slot, kind string, n int) blackboard.Record {
	return blackboard.Record{
		ID:      fmt.Sprintf("%s:%s:%d", slot, trace, n),
		Slot:    slot,
		Mode:    blackboard.ModeCommit,
		Kind:    kind,
		Payload: blackboard.Payload{"n": float64(n)},
		Provenance: blackboard.Provenance{
			Role:        blackboard.RoleTool,
			Writer:      "storetest",
			TraceID:     trace,
			TimestampMS: baseTS + int64(n),
		},
		Status:    blackboard.StatusActive,
		Reason:    reason.Committed,
		Scope:     blackboard.ScopeEpisode,
		Namespace: blackboard.DefaultNamespace,
	}
}

// stored returns r as a store reads it back: an empty namespace is kept as
// [blackboard.DefaultNamespace].
func stored(r blackboard.Record) blackboard.Record {
	if r.Namespace == "" {
		r.Namespace = blackboard.DefaultNamespace
	}
	return r
}

// invalidated returns r as it reads after a status change.
func invalidated(r blackboard.Record, st blackboard.Status, why reason.Code) blackboard.Record {
	r.Status, r.Reason = st, why
	return r
}

// appendOne appends r alone: a single record is a one-record batch.
func appendOne(ctx context.Context, s store.Store, r blackboard.Record) error {
	return s.Apply(ctx, store.Batch{Appends: []blackboard.Record{r}})
}

// setStatus changes the status of record id alone: a status change is a
// batch with one invalidation.
func setStatus(ctx context.Context, s store.Store, id string, st blackboard.Status, why reason.Code) error {
	return s.Apply(ctx, store.Batch{Invalidations: []store.Invalidation{{ID: id, Status: st, Reason: why}}})
}

// mustAppend appends each record in a batch of its own.
func mustAppend(t *testing.T, s store.Store, recs ...blackboard.Record) {
	t.Helper()
	for _, r := range recs {
		if err := appendOne(t.Context(), s, r); err != nil {
			t.Fatalf("Apply(%s): %v", r.ID, err)
		}
	}
}

func mustInvalidate(t *testing.T, s store.Store, id string, st blackboard.Status, why reason.Code) {
	t.Helper()
	if err := setStatus(t.Context(), s, id, st, why); err != nil {
		t.Fatalf("status change of %s to %s (%s): %v", id, st, why, err)
	}
}

func mustGet(t *testing.T, s store.Store, id string) blackboard.Record {
	t.Helper()
	r, err := s.Get(t.Context(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return r
}

// collect drains a listing; what names it in a failure.
func collect(t *testing.T, what string, seq iter.Seq2[blackboard.Record, error]) []blackboard.Record {
	t.Helper()
	var out []blackboard.Record
	for r, err := range seq {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		out = append(out, r)
	}
	return out
}

// dump returns every record the store holds, slot by slot.
func dump(t *testing.T, s store.Store) []blackboard.Record {
	t.Helper()
	var out []blackboard.Record
	for _, slot := range blackboard.AllSlots() {
		out = append(out, collect(t, "ListSlot("+string(slot)+")", s.ListSlot(t.Context(), slot, store.Filter{}))...)
	}
	return out
}

func ids(recs []blackboard.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}

// wantErr reports unless err wraps target; contract names the rule.
func wantErr(t *testing.T, err, target error, contract string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got error %v, want one wrapping %q", contract, err, target)
	}
}

// wantSame reports unless got and want are deeply equal.
func wantSame(t *testing.T, got, want any, contract string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got  %s\n want %s", contract, show(got), show(want))
	}
}

// unchanged reports unless the store holds exactly before, naming the
// records added, removed or changed.
func unchanged(t *testing.T, s store.Store, before []blackboard.Record, contract string) {
	t.Helper()
	after := dump(t, s)
	if reflect.DeepEqual(after, before) {
		return
	}
	was := make(map[string]blackboard.Record, len(before))
	for _, r := range before {
		was[r.ID] = r
	}
	var diff []string
	for _, r := range after {
		old, ok := was[r.ID]
		switch {
		case !ok:
			diff = append(diff, "added "+show(r))
		case !reflect.DeepEqual(r, old):
			diff = append(diff, "changed "+show(r)+"\n    was "+show(old))
		}
		delete(was, r.ID)
	}
	for _, r := range before {
		if _, ok := was[r.ID]; ok {
			diff = append(diff, "removed "+show(r))
		}
	}
	if len(diff) == 0 {
		diff = append(diff, "the same records in another order")
	}
	t.Errorf("%s:\n  %s", contract, strings.Join(diff, "\n  "))
}

// show renders a value for a failure message; JSON shows what a pointer
// such as a confidence points to.
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

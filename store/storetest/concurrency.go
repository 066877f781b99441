package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// race runs f(0..n-1) on n goroutines released together and waits for all.
func race(n int, f func(g int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range n {
		wg.Go(func() {
			<-start
			f(g)
		})
	}
	close(start)
	wg.Wait()
}

func testConcurrentAppends(t *testing.T, s store.Store) {
	ctx := t.Context()
	const writers, perWriter, traces = 8, 24, 3
	const readers = 2
	race(writers+readers, func(g int) {
		if g >= writers { // readers list while the writers write
			for i := range perWriter {
				seen := map[string]bool{}
				for r, err := range s.ListTrace(ctx, "", fmt.Sprintf("conc%d", i%traces)) {
					if err != nil {
						t.Errorf("ListTrace during concurrent appends: %v", err)
						return
					}
					if seen[r.ID] {
						t.Errorf("ListTrace during concurrent appends yielded %s twice", r.ID)
					}
					seen[r.ID] = true
				}
			}
			return
		}
		// Each writer alternates a record alone and a batch of two.
		trace := fmt.Sprintf("conc%d", g%traces)
		for i := 0; i < perWriter; i += 3 {
			a := record(trace, blackboard.Percepts, fmt.Sprintf("w%d", g), g*1000+i)
			b := record(trace, blackboard.Beliefs, fmt.Sprintf("w%d", g), g*1000+i+1)
			c := record(trace, blackboard.Actions, fmt.Sprintf("w%d", g), g*1000+i+2)
			if err := appendOne(ctx, s, a); err != nil {
				t.Errorf("concurrent Apply(%s): %v", a.ID, err)
			}
			if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{b, c}}); err != nil {
				t.Errorf("concurrent Apply(%s, %s): %v", b.ID, c.ID, err)
			}
		}
	})

	total := 0
	for tr := range traces {
		recs := collect(t, "ListTrace", s.ListTrace(ctx, "", fmt.Sprintf("conc%d", tr)))
		total += len(recs)
		// Each writer's own records must appear in the order it wrote them.
		last := map[string]float64{}
		for _, r := range recs {
			n, _ := r.Payload.Float("n")
			if prev, ok := last[r.Kind]; ok && n <= prev {
				t.Errorf("ListTrace order: %s (n=%v) listed after n=%v of the same writer", r.ID, n, prev)
			}
			last[r.Kind] = n
		}
	}
	want := writers * perWriter
	if total != want {
		t.Errorf("concurrent appends: ListTrace counts %d records in all, want %d (every append must land)", total, want)
	}
	if got := len(dump(t, s)); got != want {
		t.Errorf("concurrent appends: ListSlot counts %d records in all, want %d", got, want)
	}
	if ss, ok := s.(store.StateStore); ok {
		counted := 0
		for tr := range traces {
			counted += readState(t, ss, fmt.Sprintf("conc%d", tr)).Len
		}
		if counted != want {
			t.Errorf("concurrent appends: ReadState counts %d records in all, want %d", counted, want)
		}
	}
}

// outcome sorts the errors of a race into winners and the expected losers.
func outcome(t *testing.T, errs []error, loser error, contract string) (winner int) {
	t.Helper()
	winner = -1
	for g, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("%s: goroutines %d and %d both succeeded", contract, winner, g)
		case err == nil:
			winner = g
		case !errors.Is(err, loser):
			t.Errorf("%s: goroutine %d got %v, want %q", contract, g, err, loser)
		}
	}
	if winner < 0 {
		t.Fatalf("%s: no goroutine succeeded", contract)
	}
	return winner
}

func testConcurrentDuplicate(t *testing.T, s store.Store) {
	const n = 16
	errs := make([]error, n)
	// Half the goroutines append the id alone, half in a batch with a
	// record of their own, which must land only with the id.
	companion := func(g int) blackboard.Record { return record("same", blackboard.Percepts, "door", 100+g) }
	race(n, func(g int) {
		r := record("same", blackboard.Beliefs, "door_open", 1)
		r.Payload = blackboard.Payload{"writer": float64(g)}
		if g%2 == 0 {
			errs[g] = appendOne(t.Context(), s, r)
		} else {
			errs[g] = s.Apply(t.Context(), store.Batch{Appends: []blackboard.Record{companion(g), r}})
		}
	})
	contract := "many goroutines appending one id: exactly one wins, the others get ErrDuplicateID"
	w := outcome(t, errs, store.ErrDuplicateID, contract)
	got := mustGet(t, s, "beliefs:same:1")
	wantSame(t, got.Payload, blackboard.Payload{"writer": float64(w)}, "the stored record is the winner's")
	want := []string{"beliefs:same:1"}
	if w%2 == 1 {
		want = append(want, companion(w).ID)
	}
	slices.Sort(want)
	kept := ids(dump(t, s))
	slices.Sort(kept)
	wantSame(t, kept, want, "a raced id is stored once, and a losing batch lands nothing")
}

func testConcurrentInvalidate(t *testing.T, s store.Store) {
	const n = 16
	r := record("race", blackboard.Beliefs, "door_open", 1)
	other := record("race", blackboard.Beliefs, "door_open", 2)
	mustAppend(t, s, r, other)
	statuses := []blackboard.Status{blackboard.StatusInvalidated, blackboard.StatusExpired}
	errs := make([]error, n)
	race(n, func(g int) {
		st, why := statuses[g%2], reason.Code(fmt.Sprintf("REASON_%d", g))
		if g%3 == 0 {
			errs[g] = setStatus(t.Context(), s, r.ID, st, why)
			return
		}
		// A batch that also changes another record: it must land whole or
		// not at all.
		errs[g] = s.Apply(t.Context(), store.Batch{Invalidations: []store.Invalidation{
			{ID: r.ID, Status: st, Reason: why},
			{ID: other.ID, Status: st, Reason: why},
		}})
	})
	contract := "many goroutines invalidating one record: exactly one wins, the others get ErrNotActive"
	w := outcome(t, errs, store.ErrNotActive, contract)
	wantR := invalidated(r, statuses[w%2], reason.Code(fmt.Sprintf("REASON_%d", w)))
	wantSame(t, mustGet(t, s, r.ID), wantR, "the stored status and reason are the winner's")
	wantOther := other
	if w%3 != 0 {
		wantOther = invalidated(other, statuses[w%2], reason.Code(fmt.Sprintf("REASON_%d", w)))
	}
	wantSame(t, mustGet(t, s, other.ID), wantOther, "only the winning batch changed the second record")
}

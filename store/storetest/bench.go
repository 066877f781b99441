package storetest

import (
	"fmt"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// benchFill is how many records of other traces Bench puts in a store
// before it measures anything.
const benchFill = 10_000

// Bench runs the shared store benchmarks against the stores newStore
// returns: Append (an Apply of one record), Get, FindActive, ListTrace and
// a commit-shaped Apply (two appends and one status change). Each sub-benchmark gets a fresh store
// that already holds 10,000 records of other traces, so its figures
// show whether a hot-path operation's cost depends on the size of the
// store. newStore must return a new, empty store each time.
func Bench(b *testing.B, newStore func(b *testing.B) store.Store) {
	for _, bc := range []struct {
		name string
		run  func(b *testing.B, s store.Store)
	}{
		{"Append", benchAppend},
		{"Get", benchGet},
		{"FindActive", benchFindActive},
		{"ListTrace", benchListTrace},
		{"Apply", benchApply},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := open(b, newStore)
			fill(b, s)
			b.ReportAllocs()
			bc.run(b, s)
		})
	}
}

// fill appends benchFill records, ten to a trace, through batches.
func fill(b *testing.B, s store.Store) {
	var batch store.Batch
	slots := blackboard.AllSlots()
	for i := range benchFill {
		batch.Appends = append(batch.Appends, record(fmt.Sprintf("fill-%d", i/10), slots[i%len(slots)], fmt.Sprintf("k%d", i%5), i))
		if len(batch.Appends) == 500 || i == benchFill-1 {
			if err := s.Apply(b.Context(), batch); err != nil {
				b.Fatalf("fill: %v", err)
			}
			batch = store.Batch{}
		}
	}
}

// hotTrace appends one trace of ten records (kinds k0..k4) and returns them.
func hotTrace(b *testing.B, s store.Store) []blackboard.Record {
	var recs []blackboard.Record
	for i := range 10 {
		r := record("hot", blackboard.Beliefs, fmt.Sprintf("k%d", i%5), i)
		if err := appendOne(b.Context(), s, r); err != nil {
			b.Fatalf("Apply(%s): %v", r.ID, err)
		}
		recs = append(recs, r)
	}
	return recs
}

func benchAppend(b *testing.B, s store.Store) {
	for i := 0; b.Loop(); i++ {
		if err := appendOne(b.Context(), s, record(fmt.Sprintf("bench-%d", i/10), blackboard.Percepts, "door", i)); err != nil {
			b.Fatal(err)
		}
	}
}

func benchGet(b *testing.B, s store.Store) {
	recs := hotTrace(b, s)
	for i := 0; b.Loop(); i++ {
		if _, err := s.Get(b.Context(), recs[i%len(recs)].ID); err != nil {
			b.Fatal(err)
		}
	}
}

func benchFindActive(b *testing.B, s store.Store) {
	hotTrace(b, s)
	for b.Loop() {
		if _, err := s.FindActive(b.Context(), "", "hot", blackboard.Beliefs, "k3"); err != nil {
			b.Fatal(err)
		}
	}
}

func benchListTrace(b *testing.B, s store.Store) {
	hotTrace(b, s)
	for b.Loop() {
		n := 0
		for _, err := range s.ListTrace(b.Context(), "", "hot") {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 10 {
			b.Fatalf("ListTrace yielded %d records, want 10", n)
		}
	}
}

// benchApply commits evidence and a belief per iteration and supersedes
// the belief of the iteration before, as a kernel commit does.
func benchApply(b *testing.B, s store.Store) {
	prev := hotTrace(b, s)[0].ID
	for i := 0; b.Loop(); i++ {
		trace := fmt.Sprintf("apply-%d", i/10)
		ev := record(trace, blackboard.Evidence, "belief_validation", 2*i)
		belief := record(trace, blackboard.Beliefs, "door_open", 2*i+1)
		belief.EvidenceRefs = []string{ev.ID}
		err := s.Apply(b.Context(), store.Batch{
			Appends:       []blackboard.Record{ev, belief},
			Invalidations: []store.Invalidation{{ID: prev, Status: blackboard.StatusInvalidated, Reason: reason.SupersededByCommit}},
		})
		if err != nil {
			b.Fatal(err)
		}
		prev = belief.ID
	}
}

package kernel_test

import (
	"testing"

	"github.com/blackboardkernel/bk/store/memstore"
)

// opBytes reads the generator's choices from a fuzz input, one byte
// each; the run ends when the bytes do.
type opBytes struct{ b []byte }

func (s *opBytes) intn(n int) int {
	if len(s.b) == 0 {
		return 0
	}
	v := int(s.b[0]) % n
	s.b = s.b[1:]
	return v
}

func (s *opBytes) done() bool { return len(s.b) == 0 }

// opRecorder is a seeded source that keeps its choices as bytes a
// opBytes replays identically (every n is at most 256).
type opRecorder struct {
	invRNG
	b []byte
}

func (r *opRecorder) intn(n int) int {
	v := r.invRNG.intn(n)
	r.b = append(r.b, byte(v))
	return v
}

// recordedOps returns the input that replays steps generator steps from seed.
func recordedOps(tb testing.TB, seed uint64, steps int) []byte {
	r := &opRecorder{invRNG: newInvRNG(seed)}
	w := newInvWorld(tb, memstore.New(), r, 2, true)
	g := &invGen{w: w, s: r}
	for range steps {
		if _, _, err := g.step(); err != nil {
			tb.Fatalf("seed %d: %v", seed, err)
		}
	}
	return r.b
}

// FuzzOps lets the fuzz input choose a sequence of operations through every
// handle (the generator of TestInvariants) and checks the invariants after
// each step. Seeds are recorded runs of the seeded generator, plus the
// corpus under testdata/fuzz/FuzzOps.
func FuzzOps(f *testing.F) {
	for seed := range uint64(4) {
		f.Add(recordedOps(f, seed+1, 20+20*int(seed)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		src := &opBytes{b: data}
		w := newInvWorld(t, memstore.New(), src, 2, true)
		if _, err := w.run(&invGen{w: w, s: src}, newInvChecker(w.m), 300); err != nil {
			t.Fatal(err)
		}
	})
}

package kernel_test

import (
	"reflect"
	"testing"
)

// TestViewFromStateMatchesRecords runs the model tests' random operations
// (fresh traces as they go, persistent records, both stores) and, after
// every step, reads the step's trace and a fresh one both ways: from the
// decision state, where it holds the view, and from the trace's records.
// The two must agree; and the state must hold the view often enough for
// the comparison to mean something (the generator writes plans and
// actions as pending proposals and lets records expire, so most of its
// traces soon go through the records).
func TestViewFromStateMatchesRecords(t *testing.T) {
	for _, st := range invStores {
		t.Run(st.name, func(t *testing.T) {
			seed, steps := invSeedFor(t), invSteps(st.steps, st.raceDiv)
			src := newInvRNG(seed)
			w := newInvWorld(t, st.open(t), src, 4, true)
			g := &invGen{w: w, s: src}
			fromState, total := 0, 0
			for n := 0; n < steps; n++ {
				trace, _, err := g.step()
				if err != nil {
					continue // a refusal: the trace is what it was
				}
				for _, persistent := range []bool{false, true} {
					sv, ok, err := w.k.ViewFromState(w.ctx, trace, persistent)
					rv, rerr := w.k.ViewFromRecords(w.ctx, trace, persistent)
					total++
					if err != nil || rerr != nil {
						// A refusal (another namespace's trace) is the same either way.
						if err == nil || rerr == nil || err.Error() != rerr.Error() {
							t.Fatalf("seed %d step %d: view of %s: from the state %v, from the records %v", seed, n, trace, err, rerr)
						}
						continue
					}
					if !ok {
						continue
					}
					fromState++
					if !reflect.DeepEqual(sv, rv) {
						t.Fatalf("seed %d step %d: view of %s (persistent %v)\nfrom the state   %+v\nfrom the records %+v", seed, n, trace, persistent, sv, rv)
					}
				}
			}
			t.Logf("seed %d: %d of %d views read from the state", seed, fromState, total)
			if fromState < total/20 {
				t.Errorf("seed %d: only %d of %d views read from the state", seed, fromState, total)
			}
		})
	}
}

package kernel_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// TestConcurrentTraces: many goroutines on many traces, several per trace,
// write percepts and submit beliefs while others read views. Every record
// lands once, under a unique id of its own trace.
func TestConcurrentTraces(t *testing.T) {
	const traces, perTrace, rounds = 6, 3, 8
	f := newFixture(t)
	var (
		mu  sync.Mutex
		ids = map[string]string{} // id -> trace
		wg  sync.WaitGroup
	)
	keep := func(trace string, recs ...blackboard.Record) {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range recs {
			if prev, dup := ids[r.ID]; dup {
				t.Errorf("id %s handed out twice (%s, %s)", r.ID, prev, trace)
			}
			ids[r.ID] = trace
		}
	}
	for i := range traces {
		trace := fmt.Sprintf("trace-%d", i)
		for g := range perTrace {
			wg.Go(func() {
				for r := range rounds {
					kind := fmt.Sprintf("reading_%d_%d", g, r)
					p, err := f.tool.Write(f.ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: kind, Payload: blackboard.Payload{"r": r}})
					if err != nil {
						t.Errorf("%s: percept: %v", trace, err)
						return
					}
					d, err := f.planner.Submit(f.ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Beliefs, Kind: "b_" + kind, Payload: belief(true, kind)})
					if err != nil || d.Code != reason.Committed {
						t.Errorf("%s: belief: %s %v", trace, d.Code, err)
						return
					}
					keep(trace, f.get(p), f.get(d.ProposalID), f.get(d.CommittedID), f.get(d.EvidenceID))
				}
			})
		}
		wg.Go(func() {
			for range rounds {
				if _, err := f.planner.View(f.ctx, trace, true); err != nil {
					t.Errorf("%s: view: %v", trace, err)
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if want := traces * perTrace * rounds * 4; len(ids) != want || f.store.Len() != want {
		t.Fatalf("%d ids handed out, store holds %d, want %d", len(ids), f.store.Len(), want)
	}
	for id, trace := range ids {
		r := f.get(id)
		if r.Provenance.TraceID != trace || !strings.HasPrefix(id, string(r.Slot)+":"+trace+":") {
			t.Errorf("record %s of trace %s has trace %s", id, trace, r.Provenance.TraceID)
		}
	}
}

// TestConcurrentCommitOfOneProposal: exactly one of N racing commits wins;
// the others learn the proposal is no longer pending.
func TestConcurrentCommitOfOneProposal(t *testing.T) {
	const n = 16
	f := newFixture(t)
	f.perceive(tr, "charge", nil, nil, 0)
	p, err := f.planner.Write(f.ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Beliefs, Kind: "refund_due", Payload: belief(true, "charge")})
	if err != nil {
		t.Fatal(err)
	}
	start := make(chan struct{})
	results := make(chan error, n)
	decisions := make(chan kernel.Decision, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			<-start
			d, err := f.planner.Commit(f.ctx, tr, p)
			results <- err
			if err == nil {
				decisions <- d
			}
		})
	}
	close(start)
	wg.Wait()
	close(results)
	close(decisions)
	for err := range results {
		if err != nil {
			wantErr(t, err, kernel.ErrInvalidProposal, reason.InvalidProposal)
		}
	}
	if len(decisions) != 1 {
		t.Fatalf("%d commits succeeded, want 1", len(decisions))
	}
	d := <-decisions
	if d.Code != reason.Committed {
		t.Fatalf("winner: %s", d.Code)
	}
	f.checkDecision(d)
	// Percept, proposal, artifact, belief: nothing written twice.
	if f.store.Len() != 4 {
		t.Errorf("store holds %d records, want 4", f.store.Len())
	}
}

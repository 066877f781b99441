package storetest

import (
	"errors"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// chainModel is the test's own account of what each trace's chain must
// be: the events it applied, in the order the contract gives them,
// linked with package chain's functions. It never reads the store.
type chainModel struct {
	t      *testing.T
	traces map[[2]string][]chain.Event
	where  map[string][2]string // record id → its trace
	recs   map[string]blackboard.Record
}

func (m *chainModel) key(ns, trace string) [2]string {
	if ns == "" {
		ns = blackboard.DefaultNamespace
	}
	return [2]string{ns, trace}
}

// apply records a batch the store accepted: its status changes first,
// then its appends, each in batch order.
func (m *chainModel) apply(b store.Batch) {
	for _, inv := range b.Invalidations {
		k := m.where[inv.ID]
		r := m.recs[inv.ID]
		d := chain.TransitionDigest(inv.ID, inv.Status, inv.Reason)
		m.push(k, chain.Event{Op: chain.OpStatus, Record: blackboard.Record{ID: inv.ID, Namespace: k[0], Status: inv.Status, Reason: inv.Reason,
			Provenance: blackboard.Provenance{TraceID: r.Provenance.TraceID}}}, d)
	}
	for _, r := range b.Appends {
		k := m.key(r.Namespace, r.Provenance.TraceID)
		d, err := chain.AppendDigest(&r)
		if err != nil {
			m.t.Fatalf("AppendDigest(%s): %v", r.ID, err)
		}
		m.where[r.ID], m.recs[r.ID] = k, r
		m.push(k, chain.Event{Op: chain.OpAppend, Record: r}, d)
	}
}

func (m *chainModel) push(k [2]string, e chain.Event, digest chain.Hash) {
	evs := m.traces[k]
	var prev chain.Hash
	if len(evs) > 0 {
		prev = evs[len(evs)-1].Link
	}
	e.Seq = uint64(len(evs))
	e.Link = chain.Next(prev, e.Seq, digest)
	m.traces[k] = append(evs, e)
}

// testChain checks a [store.Chainer]: every batch extends the chain of
// each trace it touches exactly as the contract says, a refused batch
// extends none, and the chain the store streams verifies.
func testChain(t *testing.T, s store.Store) {
	cs, ok := s.(store.Chainer)
	if !ok {
		t.Skip("the store does not implement store.Chainer")
	}
	ctx := t.Context()
	m := &chainModel{t: t, traces: map[[2]string][]chain.Event{}, where: map[string][2]string{}, recs: map[string]blackboard.Record{}}
	// Each batch asks for its appends' links (Batch.Links), which must
	// be the ones the contract gives.
	apply := func(b store.Batch) {
		t.Helper()
		b.Links = make([]chain.Hash, len(b.Appends))
		if err := s.Apply(ctx, b); err != nil {
			t.Fatalf("Apply: %v", err)
		}
		m.apply(b)
		for i, r := range b.Appends {
			evs := m.traces[m.key(r.Namespace, r.Provenance.TraceID)]
			for _, e := range evs {
				if e.Op == chain.OpAppend && e.Record.ID == r.ID && e.Link != b.Links[i] {
					t.Errorf("Batch.Links[%d] = %s, the contract gives %s for %s", i, b.Links[i], e.Link, r.ID)
				}
			}
		}
	}
	inNS := func(r blackboard.Record, ns string) blackboard.Record {
		r.Namespace = ns
		r.ID = store.RecordID(r.Slot, ns, r.Provenance.TraceID, len(m.traces[m.key(ns, r.Provenance.TraceID)])+100)
		return r
	}
	a1, a2, a3 := record("ca", blackboard.Percepts, "door", 1), record("ca", blackboard.Beliefs, "door_open", 2), record("ca", blackboard.Actions, "open", 3)
	a2.Provenance.InputRefs, a2.EvidenceRefs = []string{a1.ID}, []string{a1.ID}
	conf := 0.75
	a3.Provenance.Confidence, a3.Provenance.TTLMS, a3.Provenance.Span = &conf, 5000, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	a3.Payload = blackboard.Payload{"amount": 12.5, "items": []any{"a", 2.0, map[string]any{"z": true, "a": nil}}}
	b1 := record("cb", blackboard.Percepts, "door", 1)
	apply(store.Batch{Appends: []blackboard.Record{a1, a2}})
	apply(store.Batch{Appends: []blackboard.Record{b1, a3}})
	o1 := inNS(record("ca", blackboard.Percepts, "door", 1), "other")
	apply(store.Batch{Appends: []blackboard.Record{o1}})
	// One batch changing records of two traces and appending to a third.
	a4 := record("ca", blackboard.Evidence, "approval", 4)
	apply(store.Batch{
		Invalidations: []store.Invalidation{{ID: b1.ID, Status: blackboard.StatusExpired, Reason: reason.TTLExpired},
			{ID: a1.ID, Status: blackboard.StatusInvalidated, Reason: reason.StaleEvidence}},
		Appends: []blackboard.Record{a4},
	})
	// Refused batches extend nothing.
	links := make([]chain.Hash, 2)
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{record("ca", blackboard.Percepts, "door", 5), a4}, Links: links}); !errors.Is(err, store.ErrDuplicateID) {
		t.Fatalf("a batch appending a held id: %v, want ErrDuplicateID", err)
	}
	if links[0] != (chain.Hash{}) || links[1] != (chain.Hash{}) {
		t.Error("a refused batch wrote links")
	}
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{record("ca", blackboard.Percepts, "door", 6)}, Trace: "ca", TraceLen: 1}); !errors.Is(err, blackboard.ErrConflict) {
		t.Fatalf("a batch on a stale condition: %v, want ErrConflict", err)
	}
	if err := s.Apply(ctx, store.Batch{Invalidations: []store.Invalidation{{ID: a1.ID, Status: blackboard.StatusExpired, Reason: reason.TTLExpired}}}); !errors.Is(err, store.ErrNotActive) {
		t.Fatalf("a second status change: %v, want ErrNotActive", err)
	}

	for k, want := range m.traces {
		h, err := cs.Head(ctx, k[0], k[1])
		if err != nil {
			t.Fatalf("Head(%q, %q): %v", k[0], k[1], err)
		}
		last := want[len(want)-1]
		if h.Len != uint64(len(want)) || h.Link != last.Link {
			t.Errorf("Head(%q, %q) = %d events ending %s, the contract gives %d ending %s", k[0], k[1], h.Len, h.Link, len(want), last.Link)
		}
		var got []chain.Event
		for e, err := range cs.Chain(ctx, k[0], k[1]) {
			if err != nil {
				t.Fatalf("Chain(%q, %q): %v", k[0], k[1], err)
			}
			got = append(got, e)
		}
		if len(got) != len(want) {
			t.Fatalf("Chain(%q, %q) streams %d events, want %d", k[0], k[1], len(got), len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			if g.Seq != w.Seq || g.Op != w.Op || g.Link != w.Link || g.Record.ID != w.Record.ID || g.Record.Status != w.Record.Status || g.Record.Reason != w.Record.Reason {
				t.Errorf("Chain(%q, %q)[%d] = %d %s %s %s/%s link %s, want %d %s %s %s/%s link %s", k[0], k[1], i,
					g.Seq, g.Op, g.Record.ID, g.Record.Status, g.Record.Reason, g.Link, w.Seq, w.Op, w.Record.ID, w.Record.Status, w.Record.Reason, w.Link)
			}
		}
		if _, err := store.VerifyTrace(ctx, cs, k[0], k[1], -1); err != nil {
			t.Errorf("VerifyTrace(%q, %q): %v", k[0], k[1], err)
		}
	}
	if h, err := cs.Head(ctx, "", "no-such-trace"); err != nil || h.Len != 0 || h.Link != (chain.Hash{}) {
		t.Errorf("Head of an unknown trace = %+v, %v; want zero", h, err)
	}
}

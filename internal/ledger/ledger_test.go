package ledger_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"iter"
	"slices"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/internal/ledger"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
)

type key struct{ ns, trace string }

// tampered serves a store's records as an attacker who rewrote its
// storage would leave them: traces hidden, events replaced, heads
// rewritten.
type tampered struct {
	store.Chainer
	hidden map[key]bool
	events map[key][]chain.Event
	heads  map[key]chain.Head
}

func (t *tampered) ListTraces(ctx context.Context, ns string) iter.Seq2[store.TraceSummary, error] {
	return func(yield func(store.TraceSummary, error) bool) {
		for ts, err := range store.ListTraces(ctx, t.Chainer, ns) {
			if err == nil && t.hidden[key{ts.Namespace, ts.TraceID}] {
				continue
			}
			if !yield(ts, err) {
				return
			}
		}
	}
}

func (t *tampered) Chain(ctx context.Context, ns, trace string) iter.Seq2[chain.Event, error] {
	if evs, ok := t.events[key{ns, trace}]; ok {
		return func(yield func(chain.Event, error) bool) {
			for _, e := range evs {
				if !yield(e, nil) {
					return
				}
			}
		}
	}
	return t.Chainer.Chain(ctx, ns, trace)
}

func (t *tampered) Head(ctx context.Context, ns, trace string) (chain.Head, error) {
	if h, ok := t.heads[key{ns, trace}]; ok {
		return h, nil
	}
	return t.Chainer.Head(ctx, ns, trace)
}

// rechain serves evs as trace's chain, every link computed anew from the
// first, and a head that ends on them: an attacker who rewrote the rows
// and their links, without the key.
func (t *tampered) rechain(tb testing.TB, trace string, evs []chain.Event) {
	tb.Helper()
	var prev chain.Hash
	for i := range evs {
		d, err := evs[i].Digest()
		if err != nil {
			tb.Fatal(err)
		}
		evs[i].Link = chain.Next(prev, evs[i].Seq, d)
		prev = evs[i].Link
	}
	k := key{blackboard.DefaultNamespace, trace}
	t.events[k] = evs
	t.heads[k] = chain.Head{Namespace: k.ns, Trace: trace, Len: uint64(len(evs)), Link: prev}
}

// ListTrace lists what the tampered chain appends, so that only the
// chain's own checks can tell.
func (t *tampered) ListTrace(ctx context.Context, ns, trace string) iter.Seq2[blackboard.Record, error] {
	if t.hidden[key{ns, trace}] {
		return func(func(blackboard.Record, error) bool) {}
	}
	evs, ok := t.events[key{ns, trace}]
	if !ok {
		return t.Chainer.ListTrace(ctx, ns, trace)
	}
	return func(yield func(blackboard.Record, error) bool) {
		status := map[string]blackboard.Status{}
		var recs []blackboard.Record
		for _, e := range evs {
			if e.Op == chain.OpStatus {
				status[e.Record.ID] = e.Record.Status
				continue
			}
			recs = append(recs, e.Record)
		}
		for _, r := range recs {
			if s, ok := status[r.ID]; ok {
				r.Status = s
			}
			if !yield(r, nil) {
				return
			}
		}
	}
}

// scene is a kernel with a signing key that wrote three traces, signed a
// checkpoint, wrote on, and signed a second one.
type scene struct {
	st   *memstore.Store
	pub  ed25519.PublicKey
	kept []chain.Checkpoint // what OnCheckpoint handed out
}

func newScene(t *testing.T) *scene {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s := &scene{st: memstore.New(), pub: pub}
	k, err := kernel.New(kernel.Config{Store: s.st, Signer: priv, CheckpointEvery: -1, OnCheckpoint: func(c chain.Checkpoint) { s.kept = append(s.kept, c) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	tool := k.Handle(blackboard.RoleTool, "crm")
	write := func(trace, kind string, v float64) {
		t.Helper()
		if _, err := tool.Write(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: kind, Payload: blackboard.Payload{"v": v}}); err != nil {
			t.Fatal(err)
		}
	}
	for i, tr := range []string{"a", "b", "c"} {
		write(tr, "order", float64(i))
		write(tr, "order", float64(i+10)) // supersedes nothing: percepts stay
	}
	if c, err := k.Checkpoint(ctx); err != nil || c.Seq != 1 || len(c.Heads) != 3 {
		t.Fatalf("first checkpoint: %+v, %v", c, err)
	}
	write("a", "refund", 5)
	write("a", "refund", 6)
	if c, err := k.Checkpoint(ctx); err != nil || c.Seq != 2 || len(c.Heads) != 1 {
		t.Fatalf("second checkpoint: %+v, %v", c, err)
	}
	if c, err := k.Checkpoint(ctx); err != nil || c.Seq != 0 {
		t.Fatalf("a checkpoint of nothing new: %+v, %v", c, err)
	}
	write("b", "order", 7)
	if err := k.Close(); err != nil { // the third checkpoint
		t.Fatal(err)
	}
	if len(s.kept) != 3 {
		t.Fatalf("OnCheckpoint got %d checkpoints, want 3", len(s.kept))
	}
	return s
}

func events(t *testing.T, st store.Chainer, trace string) []chain.Event {
	var out []chain.Event
	for e, err := range st.Chain(t.Context(), blackboard.DefaultNamespace, trace) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// broken returns the faults a report names, checkpoint breaks first.
func faults(rep ledger.Report) []chain.Fault {
	var out []chain.Fault
	for _, b := range rep.Broken {
		out = append(out, b.Fault)
	}
	for _, tr := range rep.Traces {
		if tr.Break != nil {
			out = append(out, tr.Break.Fault)
		}
	}
	return out
}

func verify(t *testing.T, st store.Chainer, keys []ed25519.PublicKey, trusted ...chain.Checkpoint) ledger.Report {
	t.Helper()
	rep, err := ledger.Verify(t.Context(), st, keys, trusted...)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestVerifyClean(t *testing.T) {
	s := newScene(t)
	rep := verify(t, s.st, []ed25519.PublicKey{s.pub}, s.kept...)
	if !rep.OK() || !rep.Signed || rep.Checkpoints != 3 || len(rep.Keys) != 1 {
		t.Fatalf("a clean store: %+v", rep)
	}
	for _, tr := range rep.Traces {
		if tr.Head.Trace != ledger.Trace && !tr.Covered {
			t.Errorf("trace %s is not covered by a checkpoint", tr.Head.Trace)
		}
	}
	if c, ok, err := ledger.Covering(t.Context(), s.st, "", "a"); err != nil || !ok || c.Seq != 2 {
		t.Errorf("Covering(a) = %d, %v, %v; want checkpoint 2", c.Seq, ok, err)
	}
	if _, ok, err := ledger.Covering(t.Context(), s.st, "", "zz"); err != nil || ok {
		t.Errorf("Covering of an unknown trace: %v, %v", ok, err)
	}
	// Without a key the sequence is checked, the signatures are not.
	if rep := verify(t, s.st, nil); !rep.OK() || rep.Signed {
		t.Errorf("without keys: %+v", rep)
	}
}

func TestVerifyAttacks(t *testing.T) {
	s := newScene(t)
	keys := []ed25519.PublicKey{s.pub}
	def := blackboard.DefaultNamespace
	attack := func(name string, want chain.Fault, tamper func(*tampered), trusted ...chain.Checkpoint) {
		t.Run(name, func(t *testing.T) {
			tp := &tampered{Chainer: s.st, hidden: map[key]bool{}, events: map[key][]chain.Event{}, heads: map[key]chain.Head{}}
			tamper(tp)
			rep := verify(t, tp, keys, trusted...)
			if got := faults(rep); !slices.Contains(got, want) {
				t.Fatalf("faults %v, want %s among them", got, want)
			}
		})
	}
	attack("drop a trace/ledger.missing_trace", chain.FaultMissing, func(tp *tampered) {
		tp.hidden[key{def, "c"}] = true
		tp.heads[key{def, "c"}] = chain.Head{}
		tp.events[key{def, "c"}] = nil
	})
	attack("truncate and rewrite the head/chain.tail", chain.FaultTruncated, func(tp *tampered) {
		tp.rechain(t, "a", events(t, s.st, "a")[:3])
	})
	attack("re-chain the tail/chain.head", chain.FaultHead, func(tp *tampered) {
		evs := events(t, s.st, "a")
		evs[len(evs)-1].Record.Payload = blackboard.Payload{"v": 600.0}
		tp.rechain(t, "a", evs)
	})
	attack("replay an old checkpoint/chain.sequence", chain.FaultCheckpoint, func(tp *tampered) {
		evs := events(t, s.st, ledger.Trace)
		old := evs[0]
		old.Seq = uint64(len(evs))
		old.Record.ID = store.RecordID(blackboard.Evidence, "", ledger.Trace, len(evs)+1)
		tp.rechain(t, ledger.Trace, append(evs, old))
	})
	attack("drop the newest checkpoint/trusted copy", chain.FaultCheckpoint, func(tp *tampered) {
		tp.rechain(t, ledger.Trace, events(t, s.st, ledger.Trace)[:2])
	}, s.kept[2])
	attack("a forged checkpoint vouching for a truncated trace/chain.signature", chain.FaultCheckpoint, func(tp *tampered) {
		// Trace b cut back to its first checkpoint, and the checkpoint
		// that vouched for its tail rewritten to vouch for the cut: its
		// signature, kept as it was, is all that tells.
		b := events(t, s.st, "b")[:2]
		tp.rechain(t, "b", b)
		evs := events(t, s.st, ledger.Trace)
		c, err := ledger.Decode(evs[2].Record)
		if err != nil {
			t.Fatal(err)
		}
		c.Heads[0].Len, c.Heads[0].Link = 2, b[1].Link
		if evs[2].Record.Payload, err = ledger.Payload(&c); err != nil {
			t.Fatal(err)
		}
		tp.rechain(t, ledger.Trace, evs)
	})
	attack("a checkpoint under another key", chain.FaultCheckpoint, func(tp *tampered) {
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		evs := events(t, s.st, ledger.Trace)
		c, err := ledger.Decode(evs[2].Record)
		if err != nil {
			t.Fatal(err)
		}
		c.Heads[0].Len++
		if err := c.Sign(priv); err != nil {
			t.Fatal(err)
		}
		if evs[2].Record.Payload, err = ledger.Payload(&c); err != nil {
			t.Fatal(err)
		}
		tp.rechain(t, ledger.Trace, evs)
	})
}

// A key rotated between two kernels is recorded: each checkpoint names
// its key, the report lists both in order, and a verifier given only the
// new key cannot vouch for what the old one signed.
func TestKeyRotation(t *testing.T) {
	st := memstore.New()
	var pubs []ed25519.PublicKey
	for i, trace := range []string{"a", "b"} {
		pub, priv, _ := ed25519.GenerateKey(rand.Reader)
		pubs = append(pubs, pub)
		k, err := kernel.New(kernel.Config{Store: st, Signer: priv, CheckpointEvery: -1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := k.Handle(blackboard.RoleTool, "crm").Write(t.Context(), kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: "order", Payload: blackboard.Payload{"i": float64(i)}}); err != nil {
			t.Fatal(err)
		}
		if err := k.Close(); err != nil {
			t.Fatal(err)
		}
	}
	rep := verify(t, st, pubs)
	if !rep.OK() || rep.Checkpoints != 2 || !slices.Equal(rep.Keys, []string{chain.KeyID(pubs[0]), chain.KeyID(pubs[1])}) {
		t.Fatalf("both keys given: ok %v, %d checkpoints, keys %v", rep.OK(), rep.Checkpoints, rep.Keys)
	}
	rep = verify(t, st, pubs[1:])
	if rep.OK() || len(rep.Broken) != 1 || rep.Broken[0].Fault != chain.FaultCheckpoint {
		t.Fatalf("the new key only: %+v", rep.Broken)
	}
}

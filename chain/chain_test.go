package chain_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/reason"
)

func rec(trace string, n int) blackboard.Record {
	conf := 0.9
	return blackboard.Record{
		ID: fmt.Sprintf("actions:%s:%d", trace, n), Slot: blackboard.Actions, Mode: blackboard.ModeCommit, Kind: "issue_refund",
		Payload:      blackboard.Payload{"amount": 42.5, "order": "A-1", "lines": []any{1.0, "x"}},
		EvidenceRefs: []string{"evidence:" + trace + ":1"},
		Provenance: blackboard.Provenance{Role: blackboard.RoleKernel, Writer: "kernel", TraceID: trace, TimestampMS: 1_700_000_000_000 + int64(n),
			InputRefs: []string{"beliefs:" + trace + ":1"}, Confidence: &conf, TTLMS: 1000, Span: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		Status: blackboard.StatusActive, Reason: reason.Committed, Scope: blackboard.ScopeEpisode,
	}
}

func digest(t testing.TB, r blackboard.Record) chain.Hash {
	t.Helper()
	d, err := chain.AppendDigest(&r)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A number spelled two ways, a nil or empty payload or list, and the
// default namespace spelled "" or by name digest alike: every store reads
// them back in one of these forms.
func TestDigestSpellings(t *testing.T) {
	a := rec("t", 1)
	b := rec("t", 1)
	b.Payload = blackboard.Payload{"amount": json.Number("4.25e1"), "order": "A-1", "lines": []any{json.Number("1.0"), "x"}}
	b.Namespace = blackboard.DefaultNamespace
	if digest(t, a) != digest(t, b) {
		t.Error("one record, spelled two ways, digests two ways")
	}
	c, d := rec("t", 1), rec("t", 1)
	c.Payload, d.Payload = nil, blackboard.Payload{}
	c.EvidenceRefs, d.EvidenceRefs = nil, []string{}
	if digest(t, c) != digest(t, d) {
		t.Error("nil and empty digest apart")
	}
	z, nz := rec("t", 1), rec("t", 1)
	zero, negZero := 0.0, 0.0
	negZero = -negZero
	z.Provenance.Confidence, nz.Provenance.Confidence = &zero, &negZero
	if digest(t, z) != digest(t, nz) {
		t.Error("confidence 0 and -0 digest apart")
	}
}

// Every field of a record is in its digest: a change to any one changes
// it, and so do moves of text between adjacent fields.
func TestDigestEveryField(t *testing.T) {
	base := digest(t, rec("t", 1))
	other := 0.8
	edits := map[string]func(*blackboard.Record){
		"id":         func(r *blackboard.Record) { r.ID += "x" },
		"slot":       func(r *blackboard.Record) { r.Slot = blackboard.Beliefs },
		"mode":       func(r *blackboard.Record) { r.Mode = blackboard.ModePropose },
		"kind":       func(r *blackboard.Record) { r.Kind = "issue_refunds" },
		"payload":    func(r *blackboard.Record) { r.Payload["amount"] = 42.6 },
		"payloadkey": func(r *blackboard.Record) { r.Payload["extra"] = nil },
		"status":     func(r *blackboard.Record) { r.Status = blackboard.StatusInvalidated },
		"reason":     func(r *blackboard.Record) { r.Reason = reason.StaleEvidence },
		"scope":      func(r *blackboard.Record) { r.Scope = blackboard.ScopePersistent },
		"namespace":  func(r *blackboard.Record) { r.Namespace = "other" },
		"role":       func(r *blackboard.Record) { r.Provenance.Role = blackboard.RoleTool },
		"writer":     func(r *blackboard.Record) { r.Provenance.Writer = "kernel2" },
		"trace":      func(r *blackboard.Record) { r.Provenance.TraceID = "u" },
		"ts":         func(r *blackboard.Record) { r.Provenance.TimestampMS++ },
		"ttl":        func(r *blackboard.Record) { r.Provenance.TTLMS++ },
		"confidence": func(r *blackboard.Record) { r.Provenance.Confidence = &other },
		"noconf":     func(r *blackboard.Record) { r.Provenance.Confidence = nil },
		"inputs":     func(r *blackboard.Record) { r.Provenance.InputRefs = append(r.Provenance.InputRefs, "x") },
		"evidence":   func(r *blackboard.Record) { r.EvidenceRefs = nil },
		"refsmove": func(r *blackboard.Record) {
			r.Provenance.InputRefs, r.EvidenceRefs = append(r.Provenance.InputRefs, r.EvidenceRefs...), nil
		},
		"span":      func(r *blackboard.Record) { r.Provenance.Span = "" },
		"kindwrite": func(r *blackboard.Record) { r.Kind, r.Provenance.Writer = "issue_refundk", "ernel" },
	}
	for name, edit := range edits {
		r := rec("t", 1)
		r.Payload = r.Payload.Clone()
		edit(&r)
		if digest(t, r) == base {
			t.Errorf("%s: the edit leaves the digest as it was", name)
		}
	}
	if _, err := chain.AppendDigest(&blackboard.Record{Payload: blackboard.Payload{"x": make(chan int)}}); !errors.Is(err, chain.ErrMalformed) {
		t.Errorf("a payload without a canonical form: %v, want ErrMalformed", err)
	}
}

// build links events the way a store does.
func build(t testing.TB, trace string, n int) []chain.Event {
	var evs []chain.Event
	var prev chain.Hash
	for i := range n {
		e := chain.Event{Seq: uint64(i), Op: chain.OpAppend, Record: rec(trace, i+1)}
		if i == n-1 && n > 2 {
			// The last event changes the status of the first record.
			e = chain.Event{Seq: uint64(i), Op: chain.OpStatus, Record: blackboard.Record{ID: evs[0].Record.ID, Status: blackboard.StatusInvalidated,
				Reason: reason.StaleEvidence, Provenance: blackboard.Provenance{TraceID: trace}}}
		}
		d, err := e.Digest()
		if err != nil {
			t.Fatal(err)
		}
		e.Link = chain.Next(prev, e.Seq, d)
		prev = e.Link
		evs = append(evs, e)
	}
	return evs
}

func walk(evs []chain.Event, trace string, expect ...chain.Head) (chain.Head, error) {
	w := chain.NewWalker("", trace)
	w.Origin = func(id string) (string, string, bool) {
		parts := strings.Split(id, ":") // actions:{trace}:{n}
		return blackboard.DefaultNamespace, parts[1], len(parts) == 3
	}
	for _, h := range expect {
		w.Expect(h.Len, h.Link, "a witness")
	}
	for i := range evs {
		if err := w.Step(&evs[i]); err != nil {
			return w.Head(), err
		}
	}
	return w.Head(), w.Finish()
}

func fault(t *testing.T, err error, want chain.Fault) {
	t.Helper()
	var b *chain.Break
	if !errors.As(err, &b) || !errors.Is(err, chain.ErrBroken) {
		t.Fatalf("got %v, want a break of kind %s", err, want)
	}
	if b.Fault != want {
		t.Fatalf("got fault %s (%v), want %s", b.Fault, err, want)
	}
}

// The attacks a walker stops, each with the switch that lets it through.
func TestWalkerAttacks(t *testing.T) {
	evs := build(t, "t", 6)
	head, err := walk(evs, "t")
	if err != nil || head.Len != 6 || head.Link != evs[5].Link {
		t.Fatalf("clean chain: %+v, %v", head, err)
	}
	clone := func() []chain.Event {
		out := make([]chain.Event, len(evs))
		for i, e := range evs {
			e.Record.Payload = e.Record.Payload.Clone()
			out[i] = e
		}
		return out
	}
	t.Run("edit/chain.link", func(t *testing.T) {
		c := clone()
		c[2].Record.Payload["amount"] = 4250.0
		_, err := walk(c, "t")
		fault(t, err, chain.FaultContent)
	})
	t.Run("delete/chain.gap", func(t *testing.T) {
		c := clone()
		_, err := walk(append(c[:2], c[3:]...), "t")
		fault(t, err, chain.FaultGap)
	})
	t.Run("reorder/chain.order", func(t *testing.T) {
		c := clone()
		c[1], c[2] = c[2], c[1]
		_, err := walk(c, "t")
		fault(t, err, chain.FaultGap)
		// Renumbered to fit, the links still give them away.
		c[1].Seq, c[2].Seq = 1, 2
		_, err = walk(c, "t")
		fault(t, err, chain.FaultContent)
	})
	t.Run("replay/chain.order", func(t *testing.T) {
		c := clone()
		_, err := walk(append(c[:3], c[2:]...), "t")
		fault(t, err, chain.FaultOrder)
	})
	t.Run("moved/chain.link", func(t *testing.T) {
		u := build(t, "u", 3)
		m := u[1]
		m.Seq = 6
		m.Record.Provenance.TraceID = "t"
		_, err := walk(append(clone(), m), "t")
		fault(t, err, chain.FaultMoved)
	})
	t.Run("truncate/chain.tail", func(t *testing.T) {
		_, err := walk(clone()[:4], "t", head)
		fault(t, err, chain.FaultTruncated)
	})
	t.Run("rechain/chain.head", func(t *testing.T) {
		// The tail replaced and linked anew: only a head recorded before
		// tells.
		c := clone()[:5]
		r := rec("t", 6)
		r.Payload["amount"] = 1.0
		e := chain.Event{Seq: 5, Op: chain.OpAppend, Record: r}
		d, _ := e.Digest()
		e.Link = chain.Next(c[4].Link, 5, d)
		c = append(c, e)
		if _, err := walk(c, "t"); err != nil {
			t.Fatalf("without a witness the re-chained tail verifies (%v): the walker cannot know", err)
		}
		_, err := walk(c, "t", head)
		fault(t, err, chain.FaultHead)
	})
	t.Run("status/chain.status", func(t *testing.T) {
		// A second status change of a record, linked properly.
		c := clone()
		e := chain.Event{Seq: 6, Op: chain.OpStatus, Record: c[5].Record}
		d, _ := e.Digest()
		e.Link = chain.Next(c[5].Link, 6, d)
		_, err := walk(append(c, e), "t")
		fault(t, err, chain.FaultStatus)
	})
}

func TestCheckpoint(t *testing.T) {
	pub, priv := newKey(t, 1)
	other, _ := newKey(t, 2)
	evs := build(t, "t", 4)
	c1 := chain.Checkpoint{Namespace: "ns", Seq: 1, TimeMS: 5, Heads: []chain.Head{{Namespace: "ns", Trace: "t", Len: 4, Link: evs[3].Link}, {Namespace: "ns", Trace: "a", Len: 1}}}
	if err := c1.Sign(priv); err != nil {
		t.Fatal(err)
	}
	if c1.Heads[0].Trace != "a" || c1.KeyID != chain.KeyID(pub) {
		t.Fatalf("Sign: heads %v, key %s", c1.Heads, c1.KeyID)
	}
	if err := c1.Verify([]ed25519.PublicKey{other, pub}); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if h, ok := c1.Covers("ns", "t"); !ok || h.Len != 4 {
		t.Errorf("Covers(ns, t) = %v, %v", h, ok)
	}
	if _, ok := c1.Covers("", "t"); ok {
		t.Error("Covers answers for another namespace")
	}
	if err := c1.Verify([]ed25519.PublicKey{other}); !errors.Is(err, chain.ErrKey) {
		t.Errorf("Verify with another key: %v, want ErrKey", err)
	}
	t.Run("forged/chain.signature", func(t *testing.T) {
		f := c1
		f.Heads = append([]chain.Head(nil), c1.Heads...)
		f.Heads[1].Len = 3 // vouch for a truncated trace
		fault(t, f.Verify([]ed25519.PublicKey{pub}), chain.FaultCheckpoint)
	})
	c2 := chain.Checkpoint{Namespace: "ns", Seq: 2, Prev: c1.Digest(), TimeMS: 6}
	if err := c2.Sign(priv); err != nil {
		t.Fatal(err)
	}
	if err := c1.Follows(nil); err != nil {
		t.Errorf("the first checkpoint: %v", err)
	}
	if err := c2.Follows(&c1); err != nil {
		t.Errorf("the second checkpoint: %v", err)
	}
	t.Run("replayed/chain.sequence", func(t *testing.T) {
		fault(t, c1.Follows(&c2), chain.FaultCheckpoint)
		fault(t, c2.Follows(nil), chain.FaultCheckpoint)
		skip := c2
		skip.Seq = 3
		fault(t, skip.Follows(&c1), chain.FaultCheckpoint)
	})
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if err := c2.Sign(ec); !errors.Is(err, chain.ErrKey) {
		t.Errorf("Sign with an ECDSA key: %v, want ErrKey", err)
	}
	// A checkpoint reads back from JSON as it was.
	raw, err := json.Marshal(c1)
	if err != nil {
		t.Fatal(err)
	}
	var back chain.Checkpoint
	if err := json.Unmarshal(raw, &back); err != nil || back.Digest() != c1.Digest() || back.Verify([]ed25519.PublicKey{pub}) != nil {
		t.Errorf("JSON round trip: %v", err)
	}
}

func TestHashText(t *testing.T) {
	var h chain.Hash
	if err := h.UnmarshalText([]byte("zz")); !errors.Is(err, chain.ErrMalformed) {
		t.Errorf("short hash: %v", err)
	}
	want := chain.Next(chain.Hash{}, 0, chain.Hash{1})
	b, _ := want.MarshalText()
	if err := h.UnmarshalText(b); err != nil || h != want {
		t.Errorf("round trip: %v", err)
	}
}

// BenchmarkChainRecord is the cost of chaining one record: its digest and
// its link.
func BenchmarkChainRecord(b *testing.B) {
	r := rec("t", 1)
	var prev chain.Hash
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		d, err := chain.AppendDigest(&r)
		if err != nil {
			b.Fatal(err)
		}
		prev = chain.Next(prev, uint64(i), d)
	}
}

// BenchmarkChainDecision is the cost of chaining a decision record as the
// tool gate writes one: a nested payload of about 700 bytes.
func BenchmarkChainDecision(b *testing.B) {
	r := rec("t", 1)
	r.Slot, r.Kind = blackboard.Evidence, "decision_record"
	r.Payload = blackboard.Payload{"code": "EFFECT_SUCCEEDED", "context": map[string]any{"approval_required": false, "args": map[string]any{"order_id": "A-1"},
		"args_digest": "sha256:04f09fff81934b741613ccd0a1a607f7bb99b055cb56d787e0ec34f4abd75345", "attempt": 1.0, "call_id": "call_lookup_order",
		"caller": "support", "intent": "refund", "policy": "sha256:21f9bd169b55fe1b229eb8d05469653984c35215754c1a3def81f33b01930caf", "tool": "lookup_order"},
		"decision_id": "decision:percepts:p1:5", "evidence_refs": []any{"actions:p1:2", "percepts:p1:4"}, "kind": "lookup_order", "outcome": "executed",
		"subject": "percepts:p1:5", "version": 1.0}
	var prev chain.Hash
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		d, err := chain.AppendDigest(&r)
		if err != nil {
			b.Fatal(err)
		}
		prev = chain.Next(prev, uint64(i), d)
	}
}

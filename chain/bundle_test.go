package chain_test

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/reason"
)

// builder chains events by hand, as a store would.
type builder struct {
	ns, trace string
	events    []chain.Event
	link      chain.Hash
}

func (b *builder) add(t testing.TB, op chain.Op, r blackboard.Record) {
	t.Helper()
	r.Namespace, r.Provenance.TraceID = b.ns, b.trace
	e := chain.Event{Seq: uint64(len(b.events)), Op: op, Record: r}
	d, err := e.Digest()
	if err != nil {
		t.Fatal(err)
	}
	b.link = chain.Next(b.link, e.Seq, d)
	e.Link = b.link
	b.events = append(b.events, e)
}

func (b *builder) head() chain.Head {
	return chain.Head{Namespace: b.ns, Trace: b.trace, Len: uint64(len(b.events)), Link: b.link}
}

func (b *builder) bundled() chain.BundleTrace {
	return chain.BundleTrace{Namespace: b.ns, Trace: b.trace, Events: b.events}
}

func record(id, kind string, ts int64, p blackboard.Payload) blackboard.Record {
	conf := 0.75
	return blackboard.Record{ID: id, Slot: blackboard.Evidence, Mode: blackboard.ModeCommit, Kind: kind, Payload: p,
		Provenance: blackboard.Provenance{Role: blackboard.RoleKernel, Writer: "kernel", TimestampMS: ts, Confidence: &conf, InputRefs: []string{"percept:x:1"}},
		Status:     blackboard.StatusActive, Reason: reason.Committed, Scope: blackboard.ScopeEpisode}
}

// fixture returns a bundle of a run's trace (two appends and a status
// change) and a policy trace, under one checkpoint signed by key.
func fixture(t testing.TB, key ed25519.PrivateKey) *chain.Bundle {
	t.Helper()
	run := &builder{ns: blackboard.DefaultNamespace, trace: "run-1"}
	run.add(t, chain.OpAppend, record("evidence:run-1:1", "decision", 1700000000000, blackboard.Payload{"amount": 12.5, "n": 3.0, "note": "<a & b>", "list": []any{"x", true, nil}}))
	run.add(t, chain.OpAppend, record("evidence:run-1:2", "request", 1700000000001, blackboard.Payload{"policy": "sha256:00ff"}))
	run.add(t, chain.OpStatus, blackboard.Record{ID: "evidence:run-1:1", Status: blackboard.StatusInvalidated, Reason: reason.Code("SUPERSEDED")})
	pol := &builder{ns: blackboard.DefaultNamespace, trace: "bk.policy.default"}
	pol.add(t, chain.OpAppend, record("evidence:bk.policy.default:1", "policy", 1690000000000, blackboard.Payload{"hash": "sha256:00ff", "policy": map[string]any{"tools": []any{}}}))
	cp := chain.Checkpoint{Namespace: blackboard.DefaultNamespace, Seq: 1, TimeMS: 1700000000500, Heads: []chain.Head{run.head(), pol.head()}}
	if err := cp.Sign(key); err != nil {
		t.Fatal(err)
	}
	return &chain.Bundle{Format: chain.BundleFormat, Traces: []chain.BundleTrace{run.bundled(), pol.bundled()}, Checkpoints: []chain.Checkpoint{cp}}
}

func newKey(t testing.TB, seed byte) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
	return priv.Public().(ed25519.PublicKey), priv
}

func encode(t testing.TB, b *chain.Bundle) []byte {
	t.Helper()
	data, err := b.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestVerifyBundle(t *testing.T) {
	pub, priv := newKey(t, 1)
	data := encode(t, fixture(t, priv))
	got, err := chain.VerifyBundle(data, []ed25519.PublicKey{pub})
	if err != nil {
		t.Fatalf("a bundle as encoded: %v", err)
	}
	if len(got.Traces) != 2 || len(got.Traces[0].Events) != 3 || got.Format != chain.BundleFormat {
		t.Fatalf("decoded %+v", got)
	}
	if again := encode(t, got); !bytes.Equal(again, data) {
		t.Fatalf("the decoded bundle encodes to other bytes")
	}
}

// TestVerifyBundleEveryByte changes each byte of a bundle in turn, two
// ways, and requires every change to be refused.
func TestVerifyBundleEveryByte(t *testing.T) {
	pub, priv := newKey(t, 1)
	keys := []ed25519.PublicKey{pub}
	data := encode(t, fixture(t, priv))
	changes := []struct {
		name string
		to   func(byte) byte
	}{
		{"xor 0x01", func(c byte) byte { return c ^ 0x01 }},
		{"a space", func(byte) byte { return ' ' }},
		{"xor 0x20", func(c byte) byte { return c ^ 0x20 }}, // the case of a letter
	}
	buf := make([]byte, len(data))
	for _, ch := range changes {
		for i := range data {
			copy(buf, data)
			buf[i] = ch.to(data[i])
			if buf[i] == data[i] {
				continue
			}
			if _, err := chain.VerifyBundle(buf, keys); err == nil {
				t.Errorf("%s at byte %d (%q in %q) verifies", ch.name, i, data[i], window(data, i))
			}
		}
	}
	// A byte cut or added anywhere is refused too.
	for i := range data {
		cut := append(append([]byte{}, data[:i]...), data[i+1:]...)
		if _, err := chain.VerifyBundle(cut, keys); err == nil {
			t.Errorf("byte %d cut (%q) verifies", i, window(data, i))
		}
	}
}

func window(b []byte, i int) string {
	return string(b[max(0, i-20):min(len(b), i+20)])
}

// TestVerifyBundleRespelled gives the same bundle spelled another way,
// which JSON reads as the same value: only the bundle's bytes check
// catches it (switch chain.bundle_bytes).
func TestVerifyBundleRespelled(t *testing.T) {
	pub, priv := newKey(t, 1)
	keys := []ed25519.PublicKey{pub}
	data := string(encode(t, fixture(t, priv)))
	cp := fixture(t, priv).Checkpoints[0]
	sig := cp.Heads[0].Link.String()
	for name, alt := range map[string]string{
		"space between fields": strings.Replace(data, `,"traces"`, ` ,"traces"`, 1),
		"a trailing newline":   data + "\n",
		"upper-case hex":       strings.Replace(data, sig, strings.ToUpper(sig), 1),
		"a number respelled":   strings.Replace(data, `"amount":12.5`, `"amount":1.25e1`, 1),
		"an unknown field":     strings.Replace(data, `{"format"`, `{"note":"x","format"`, 1),
		"a field repeated":     strings.Replace(data, `{"format"`, `{"format":"x","format"`, 1),
		"a key's case":         strings.Replace(data, `"format"`, `"Format"`, 1),
		"an escaped letter":    strings.Replace(data, `"run-1"`, `"\u0072un-1"`, 1),
	} {
		if alt == data {
			t.Fatalf("%s: the fixture has nothing to respell", name)
		}
		_, err := chain.VerifyBundle([]byte(alt), keys)
		if !errors.Is(err, chain.ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
}

func TestVerifyBundleRefuses(t *testing.T) {
	pub, priv := newKey(t, 1)
	keys := []ed25519.PublicKey{pub}
	var brk *chain.Break

	other, _ := newKey(t, 2)
	if _, err := chain.VerifyBundle(encode(t, fixture(t, priv)), []ed25519.PublicKey{other}); !errors.Is(err, chain.ErrKey) {
		t.Errorf("another key: err = %v, want ErrKey", err)
	}
	if _, err := chain.VerifyBundle(encode(t, fixture(t, priv)), nil); !errors.Is(err, chain.ErrKey) {
		t.Errorf("no key: err = %v, want ErrKey", err)
	}

	// A trace no checkpoint names: chained well, vouched for by none.
	b := fixture(t, priv)
	extra := &builder{ns: blackboard.DefaultNamespace, trace: "run-2"}
	extra.add(t, chain.OpAppend, record("evidence:run-2:1", "decision", 1, nil))
	b.Traces = append(b.Traces, extra.bundled())
	if _, err := chain.VerifyBundle(encode(t, b), keys); !errors.As(err, &brk) || brk.Fault != chain.FaultCheckpoint || brk.Trace != "run-2" {
		t.Errorf("an unnamed trace: err = %v, want a checkpoint break of run-2", err)
	}

	// The chain's tail cut: shorter than the head the checkpoint signed.
	b = fixture(t, priv)
	b.Traces[0].Events = b.Traces[0].Events[:2]
	if _, err := chain.VerifyBundle(encode(t, b), keys); !errors.As(err, &brk) || brk.Fault != chain.FaultTruncated {
		t.Errorf("a cut tail: err = %v, want FaultTruncated", err)
	}

	// Past the signed head, events are chained: a changed one breaks.
	b = fixture(t, priv)
	b.Traces[0].Events = b.Traces[0].Events[:2]
	for i, h := range b.Checkpoints[0].Heads {
		if h.Trace == "run-1" {
			b.Checkpoints[0].Heads[i].Len, b.Checkpoints[0].Heads[i].Link = 1, b.Traces[0].Events[0].Link
		}
	}
	if err := b.Checkpoints[0].Sign(priv); err != nil {
		t.Fatal(err)
	}
	if _, err := chain.VerifyBundle(encode(t, b), keys); err != nil {
		t.Fatalf("events past the signed head: %v", err)
	}
	b.Traces[0].Events[1].Record.Kind = "forged"
	if _, err := chain.VerifyBundle(encode(t, b), keys); !errors.As(err, &brk) || brk.Fault != chain.FaultContent || brk.Seq != 1 {
		t.Errorf("an event past the signed head changed: err = %v, want FaultContent at 1", err)
	}

	// A status change that carries a field no digest holds.
	b = fixture(t, priv)
	b.Traces[0].Events[2].Record.Kind = "smuggled"
	if _, err := chain.VerifyBundle(encode(t, b), keys); !errors.Is(err, chain.ErrMalformed) {
		t.Errorf("a status change with a kind: err = %v, want ErrMalformed", err)
	}

	// A status change moved into another trace's bundle entry.
	b = fixture(t, priv)
	b.Traces[0].Events[2].Record.Provenance.TraceID = "run-9"
	if _, err := chain.VerifyBundle(encode(t, b), keys); !errors.As(err, &brk) || brk.Fault != chain.FaultMoved {
		t.Errorf("a status change of another trace: err = %v, want FaultMoved", err)
	}

	for name, mod := range map[string]func(*chain.Bundle){
		"no checkpoint":     func(b *chain.Bundle) { b.Checkpoints = nil },
		"no trace":          func(b *chain.Bundle) { b.Traces = nil },
		"another format":    func(b *chain.Bundle) { b.Format = "bk.evidence.v2" },
		"a trace twice":     func(b *chain.Bundle) { b.Traces = append(b.Traces, b.Traces[0]) },
		"a default spelled": func(b *chain.Bundle) { b.Traces = append(b.Traces, b.Traces[0]); b.Traces[2].Namespace = "" },
	} {
		b := fixture(t, priv)
		mod(b)
		if _, err := chain.VerifyBundle(encode(t, b), keys); !errors.Is(err, chain.ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
	for _, junk := range []string{"", "null", "{}", "[]", `{"format":"bk.evidence.v1"} {}`} {
		if _, err := chain.VerifyBundle([]byte(junk), keys); err == nil {
			t.Errorf("%q verifies", junk)
		}
	}
}

func ExampleVerifyBundle() {
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	pub := priv.Public().(ed25519.PublicKey)

	// One trace of one record, chained as a store chains it.
	rec := blackboard.Record{ID: "evidence:run-1:1", Slot: blackboard.Evidence, Mode: blackboard.ModeCommit, Kind: "note",
		Payload: blackboard.Payload{"text": "hello"}, Status: blackboard.StatusActive, Scope: blackboard.ScopeEpisode,
		Namespace: "default", Provenance: blackboard.Provenance{Role: blackboard.RoleKernel, Writer: "kernel", TraceID: "run-1"}}
	d, _ := chain.AppendDigest(&rec)
	ev := chain.Event{Seq: 0, Op: chain.OpAppend, Record: rec, Link: chain.Next(chain.Hash{}, 0, d)}

	// A checkpoint vouching for its head, signed.
	cp := chain.Checkpoint{Namespace: "default", Seq: 1, Heads: []chain.Head{{Namespace: "default", Trace: "run-1", Len: 1, Link: ev.Link}}}
	if err := cp.Sign(priv); err != nil {
		panic(err)
	}
	b := chain.Bundle{Format: chain.BundleFormat, Checkpoints: []chain.Checkpoint{cp},
		Traces: []chain.BundleTrace{{Namespace: "default", Trace: "run-1", Events: []chain.Event{ev}}}}
	data, _ := b.Encode()

	got, err := chain.VerifyBundle(data, []ed25519.PublicKey{pub})
	fmt.Println("verified:", err == nil, len(got.Traces[0].Events), "event")

	// One letter of the payload changed: the chain breaks.
	forged := bytes.Replace(data, []byte("hello"), []byte("hellp"), 1)
	_, err = chain.VerifyBundle(forged, []ed25519.PublicKey{pub})
	var brk *chain.Break
	if errors.As(err, &brk) {
		fmt.Println("forged:", brk.Fault, "at event", brk.Seq, "record", brk.RecordID)
	}
	// Output:
	// verified: true 1 event
	// forged: content at event 0 record evidence:run-1:1
}

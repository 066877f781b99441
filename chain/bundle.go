package chain

import (
	"bytes"
	"cmp"
	"crypto/ed25519"
	"encoding/json"
	"fmt"

	"github.com/blackboardkernel/bk/blackboard"
)

// BundleFormat is the Format of every [Bundle] this package writes and
// reads: a bundle of another format is refused, not guessed at.
const BundleFormat = "bk.evidence.v1"

// Bundle is evidence that travels without its store: the events of one
// or more traces and the signed checkpoints that vouch for them, checked
// offline by [VerifyBundle] with nothing but the signers' public keys.
// The bundle of a run holds the run's trace and, when its records name a
// policy snapshot, the namespace's policy trace; each trace is named by
// at least one of the checkpoints (a policy written long before the run
// is vouched for by an earlier checkpoint than the run is). A Bundle is a
// value: safe to read concurrently, not to change while another
// goroutine encodes it.
type Bundle struct {
	// Format is [BundleFormat].
	Format string `json:"format"`
	// Traces are the bundled traces, each with every event of its chain
	// from the first.
	Traces []BundleTrace `json:"traces"`
	// Checkpoints vouch for the traces' heads; each names one or more of
	// them.
	Checkpoints []Checkpoint `json:"checkpoints"`
}

// BundleTrace is one trace of a [Bundle]: its namespace, its id and its
// chain's events in order, from event 0.
type BundleTrace struct {
	Namespace string  `json:"namespace"`
	Trace     string  `json:"trace"`
	Events    []Event `json:"events"`
}

// Encode returns the bundle as compact JSON (encoding/json's Marshal).
// Those bytes are the only spelling of the bundle [VerifyBundle] accepts.
func (b *Bundle) Encode() ([]byte, error) {
	out, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("%w: bundle: %v", ErrMalformed, err)
	}
	return out, nil
}

// VerifyBundle checks an encoded [Bundle] offline and returns it decoded.
//
// It refuses, as [ErrMalformed], input that is not the bytes [Bundle.Encode]
// writes for the value it decodes to: another format, trailing data,
// unknown or repeated fields, and any other spelling of the same value
// (space, the case of a hex digit, a number written another way, base64
// padding bits), so that any byte changed anywhere is caught even where
// JSON would read the same value. A payload number is read as a double,
// as the kernel keeps numbers. It also refuses a bundle of no trace, a trace bundled twice,
// an event whose record names another trace, and a status change whose
// record carries more than the change (see [Event]).
//
// It then requires at least one checkpoint, and checks every
// checkpoint's signature with keys ([Checkpoint.Verify]: a checkpoint
// signed by no key given is [ErrKey], a bad signature a [*Break]). Every
// bundled trace must be named by a checkpoint (else a [*Break] with
// [FaultCheckpoint]), and its events are walked from the first with a
// [Walker] that must meet every head the checkpoints name for it: a
// changed, missing or reordered event, or a chain cut before a named
// head, is a [*Break] naming the event and the fault.
//
// A verified bundle proves that the holder of a key in keys signed heads
// that the bundled chains reach: each trace's events up to the signed
// head are, byte for byte in content, order and number, the events the
// signer's store had chained when it signed (from event [Head.Migrated]
// on, for a trace chained when its store was migrated; the migrated
// events' earlier history is not proven). It does not prove:
//
//   - events after a signed head: they are chained onto it, so none can
//     be changed without breaking the chain, but they are not signed, and
//     a tail could have been replaced or left off since;
//   - the checkpoint's place in its namespace's sequence: offline,
//     [Checkpoint.Follows] cannot be checked, so an older checkpoint (a
//     shorter head) passes, and what the store holds beyond it is not
//     shown; only a verifier of the store itself (package ledger) checks
//     the sequence;
//   - that the bundle holds every trace of a run: only the traces in it
//     are checked;
//   - that the records are true: only that they were recorded so.
//
// VerifyBundle is safe for concurrent use.
func VerifyBundle(data []byte, keys []ed25519.PublicKey) (*Bundle, error) {
	var b Bundle
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("%w: bundle: %v", ErrMalformed, err)
	}
	if dec.InputOffset() != int64(len(data)) {
		return nil, fmt.Errorf("%w: bundle: %d bytes of trailing data after the bundle", ErrMalformed, int64(len(data))-dec.InputOffset())
	}
	if b.Format != BundleFormat {
		return nil, fmt.Errorf("%w: bundle: format %q, not %q", ErrMalformed, b.Format, BundleFormat)
	}
	if !mutSkipBundleBytes() {
		again, err := b.Encode()
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(again, data) {
			at := 0
			for at < len(again) && at < len(data) && again[at] == data[at] {
				at++
			}
			return nil, fmt.Errorf("%w: bundle: byte %d is not what the bundle's encoding writes there (changed, or written another way)", ErrMalformed, at)
		}
	}
	if len(b.Traces) == 0 {
		return nil, fmt.Errorf("%w: bundle: no trace: it proves nothing", ErrMalformed)
	}
	if len(b.Checkpoints) == 0 {
		return nil, fmt.Errorf("%w: bundle: no checkpoint: nothing vouches for its traces", ErrMalformed)
	}
	for i := range b.Checkpoints {
		if err := b.Checkpoints[i].Verify(keys); err != nil {
			return nil, err
		}
	}
	seen := map[[2]string]bool{}
	for i := range b.Traces {
		t := &b.Traces[i]
		ns := cmp.Or(t.Namespace, blackboard.DefaultNamespace)
		if seen[[2]string{ns, t.Trace}] {
			return nil, fmt.Errorf("%w: bundle: trace %q of namespace %q is bundled twice", ErrMalformed, t.Trace, ns)
		}
		seen[[2]string{ns, t.Trace}] = true
		if err := verifyTrace(t, ns, b.Checkpoints); err != nil {
			return nil, err
		}
	}
	return &b, nil
}

// verifyTrace walks one bundled trace against the heads checkpoints name
// for it.
func verifyTrace(t *BundleTrace, ns string, cps []Checkpoint) error {
	w := NewWalker(ns, t.Trace)
	named := false
	for i := range cps {
		if cmp.Or(cps[i].Namespace, blackboard.DefaultNamespace) != ns {
			continue
		}
		if h, ok := cps[i].Covers(ns, t.Trace); ok {
			named = true
			w.Expect(h.Len, h.Link, fmt.Sprintf("checkpoint %d", cps[i].Seq))
		}
	}
	if !named {
		return &Break{Namespace: ns, Trace: t.Trace, Fault: FaultCheckpoint,
			Detail: "no checkpoint of the bundle names the trace: nothing vouches for its head"}
	}
	for i := range t.Events {
		e := &t.Events[i]
		r := &e.Record
		if cmp.Or(r.Namespace, blackboard.DefaultNamespace) != ns || r.Provenance.TraceID != t.Trace {
			return &Break{Namespace: ns, Trace: t.Trace, Seq: e.Seq, RecordID: r.ID, Fault: FaultMoved,
				Detail: fmt.Sprintf("the event's record belongs to trace %q of namespace %q", r.Provenance.TraceID, cmp.Or(r.Namespace, blackboard.DefaultNamespace))}
		}
		if e.Op == OpStatus && !bareStatus(r) {
			return fmt.Errorf("%w: bundle: event %d of trace %q: a status change carries fields besides the change", ErrMalformed, e.Seq, t.Trace)
		}
		if err := w.Step(e); err != nil {
			return err
		}
	}
	return w.Finish()
}

// bareStatus reports whether a status change's record holds only what
// the change names: its other fields are in no digest, so a bundle must
// not carry them.
func bareStatus(r *blackboard.Record) bool {
	bare := blackboard.Record{ID: r.ID, Namespace: r.Namespace, Status: r.Status, Reason: r.Reason,
		Provenance: blackboard.Provenance{TraceID: r.Provenance.TraceID}}
	a, errA := json.Marshal(r)
	z, errZ := json.Marshal(&bare)
	return errA == nil && errZ == nil && bytes.Equal(a, z)
}

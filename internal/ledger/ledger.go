package ledger

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/store"
)

// Trace is the trace of each namespace that holds its checkpoints.
const Trace = "bk.checkpoints"

// Kind is the kind of a checkpoint record.
const Kind = "checkpoint"

// payloadKey is where a checkpoint record's payload holds the checkpoint.
const payloadKey = "checkpoint"

// Payload returns the payload of c's record: c as JSON values.
func Payload(c *chain.Checkpoint) (blackboard.Payload, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("ledger: checkpoint %d: %w", c.Seq, err)
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("ledger: checkpoint %d: %w", c.Seq, err)
	}
	return blackboard.Payload{payloadKey: v}, nil
}

// Decode reads the checkpoint a checkpoint record holds.
func Decode(r blackboard.Record) (chain.Checkpoint, error) {
	var c chain.Checkpoint
	v, ok := r.Payload[payloadKey]
	if r.Kind != Kind || !ok {
		return c, fmt.Errorf("%w: record %s is not a checkpoint", chain.ErrMalformed, r.ID)
	}
	raw, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(raw, &c)
	}
	if err != nil {
		return c, fmt.Errorf("%w: record %s: %v", chain.ErrMalformed, r.ID, err)
	}
	return c, nil
}

// Covering returns the latest checkpoint of namespace that names trace
// traceID, and false when none does.
func Covering(ctx context.Context, st store.Store, namespace, traceID string) (chain.Checkpoint, bool, error) {
	var out chain.Checkpoint
	found := false
	for r, err := range st.ListTrace(ctx, namespace, Trace) {
		if err != nil {
			return chain.Checkpoint{}, false, err
		}
		c, err := Decode(r)
		if err != nil {
			continue
		}
		if _, ok := c.Covers(namespace, traceID); ok {
			out, found = c, true
		}
	}
	return out, found, nil
}

// TraceResult is what [Verify] found of one trace.
type TraceResult struct {
	Head chain.Head
	// Break is the first break of the trace's chain, or nil.
	Break *chain.Break
	// Covered says a checkpoint names the trace: its history up to that
	// head is proven against the checkpoint, not only against the store.
	Covered bool
}

// Report is what [Verify] found.
type Report struct {
	// Traces are every trace of the store, the checkpoint traces
	// included, and every trace a checkpoint names that the store lacks
	// (with a [chain.FaultMissing] break).
	Traces []TraceResult
	// Checkpoints counts the checkpoints read; Broken are the breaks of
	// their sequence or signatures (not of their trace's chain, which is
	// in Traces).
	Checkpoints int
	Broken      []*chain.Break
	// Signed says every checkpoint's signature was checked against a key
	// given; false when no key was given (the sequence is still checked).
	Signed bool
	// Keys are the ids of the keys that signed the checkpoints, in order
	// of first use: more than one is a rotation.
	Keys []string
}

// OK reports whether nothing broke.
func (r *Report) OK() bool {
	if len(r.Broken) > 0 {
		return false
	}
	for _, t := range r.Traces {
		if t.Break != nil {
			return false
		}
	}
	return true
}

// Verify reads every trace of st and checks its history: each trace's
// chain ([store.VerifyTrace]); each namespace's checkpoints, in order
// ([chain.Checkpoint.Follows]) and, when keys are given, signed by one
// of them; that every trace a checkpoint names is in the store and its
// chain reaches the latest head a checkpoint names; and that the store
// holds each trusted checkpoint (one kept elsewhere) as it was, so that
// newer checkpoints dropped from the store are caught. Its memory grows
// with the number of traces, not of records. The error is the store's or
// the context's; what is broken is in the [Report].
func Verify(ctx context.Context, st store.Chainer, keys []ed25519.PublicKey, trusted ...chain.Checkpoint) (Report, error) {
	rep := Report{Signed: len(keys) > 0}
	type key struct{ ns, trace string }
	expected := map[key]chain.Head{}
	held := map[key]map[uint64]chain.Hash{} // checkpoint digests by namespace and seq
	var traces []store.TraceSummary
	for ts, err := range store.ListTraces(ctx, st, "") {
		if err != nil {
			return rep, err
		}
		traces = append(traces, ts)
	}
	// The checkpoints first: they say what the other traces must reach.
	for _, ts := range traces {
		if ts.TraceID != Trace {
			continue
		}
		var prev *chain.Checkpoint
		for r, err := range st.ListTrace(ctx, ts.Namespace, Trace) {
			if err != nil {
				return rep, err
			}
			rep.Checkpoints++
			c, err := Decode(r)
			if err == nil && cmp.Or(c.Namespace, blackboard.DefaultNamespace) != ts.Namespace {
				err = fmt.Errorf("checkpoint %d names namespace %q", c.Seq, c.Namespace)
			}
			if err != nil {
				rep.Broken = append(rep.Broken, asBreak(ts.Namespace, r.ID, err))
				continue
			}
			// Out of sequence or unsigned, a checkpoint vouches for nothing;
			// the next is still checked against it, so that one bad
			// checkpoint is one break.
			if err = c.Follows(prev); err == nil && len(keys) > 0 {
				err = c.Verify(keys)
			}
			prev = &c
			if err != nil {
				rep.Broken = append(rep.Broken, asBreak(ts.Namespace, r.ID, err))
				continue
			}
			if !slices.Contains(rep.Keys, c.KeyID) {
				rep.Keys = append(rep.Keys, c.KeyID)
			}
			k := key{ts.Namespace, Trace}
			if held[k] == nil {
				held[k] = map[uint64]chain.Hash{}
			}
			held[k][c.Seq] = c.Digest()
			for _, h := range c.Heads {
				hk := key{cmp.Or(h.Namespace, blackboard.DefaultNamespace), h.Trace}
				if h.Len > expected[hk].Len {
					expected[hk] = h
				}
			}
		}
	}
	for _, c := range trusted {
		ns := cmp.Or(c.Namespace, blackboard.DefaultNamespace)
		if d, ok := held[key{ns, Trace}][c.Seq]; !ok || d != c.Digest() {
			rep.Broken = append(rep.Broken, &chain.Break{Namespace: ns, Trace: Trace, Seq: c.Seq, Fault: chain.FaultCheckpoint,
				Detail: fmt.Sprintf("the store does not hold trusted checkpoint %d as it was", c.Seq)})
		}
	}
	// The traces are walked side by side, as many at once as there are
	// processors: a store's reads run in parallel, and each walk needs
	// only its own trace.
	want := make([]*chain.Head, len(traces))
	for i, ts := range traces {
		k := key{ts.Namespace, ts.TraceID}
		if h, ok := expected[k]; ok {
			want[i] = &h
			delete(expected, k)
		}
	}
	results := make([]TraceResult, len(traces))
	if err := parallel(ctx, len(traces), func(i int) error {
		ts := traces[i]
		var expect []chain.Head
		if want[i] != nil {
			expect = append(expect, *want[i])
		}
		h, err := store.VerifyTrace(ctx, st, ts.Namespace, ts.TraceID, ts.Records, expect...)
		results[i] = TraceResult{Head: h, Covered: want[i] != nil}
		var brk *chain.Break
		switch {
		case errors.As(err, &brk):
			results[i].Break = brk
		case err != nil:
			return err
		}
		return nil
	}); err != nil {
		return rep, err
	}
	rep.Traces = append(rep.Traces, results...)
	// What the checkpoints name and the store lacks: dropped traces.
	var gone []chain.Head
	for _, h := range expected {
		gone = append(gone, h)
	}
	slices.SortFunc(gone, func(a, b chain.Head) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Trace, b.Trace))
	})
	for _, h := range gone {
		if mutMissingTrace {
			break
		}
		rep.Traces = append(rep.Traces, TraceResult{Head: chain.Head{Namespace: h.Namespace, Trace: h.Trace}, Covered: true,
			Break: &chain.Break{Namespace: h.Namespace, Trace: h.Trace, Fault: chain.FaultMissing,
				Detail: fmt.Sprintf("a checkpoint names it with %d events; the store holds none", h.Len)}})
	}
	return rep, ctx.Err()
}

// asBreak makes err, found at checkpoint record id, a break of the
// checkpoint sequence.
func asBreak(ns, id string, err error) *chain.Break {
	var brk *chain.Break
	if errors.As(err, &brk) {
		b := *brk
		b.Trace, b.RecordID = Trace, id
		return &b
	}
	return &chain.Break{Namespace: ns, Trace: Trace, RecordID: id, Fault: chain.FaultCheckpoint, Detail: err.Error()}
}

// parallel runs work(0) … work(n-1) on as many goroutines as there are
// processors and returns the first error; after one, no new work starts.
func parallel(ctx context.Context, n int, work func(i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := work(i); err != nil {
					select {
					case errs <- err:
					default:
					}
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

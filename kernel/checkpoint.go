package kernel

import (
	"cmp"
	"context"
	"crypto"
	"crypto/ed25519"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/internal/ledger"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// defaultCheckpointEvery is how often a kernel with a signing key signs
// a checkpoint when Config.CheckpointEvery is zero.
const defaultCheckpointEvery = time.Minute

// closeCheckpointWait bounds the checkpoint Close writes: Close takes no
// context.
const closeCheckpointWait = 30 * time.Second

// signing is a kernel's checkpoint machinery (see Config.Signer).
type signing struct {
	signer crypto.Signer
	store  store.Chainer
	on     func(chain.Checkpoint)

	mu      sync.Mutex
	touched map[string]struct{} // traces written since the last checkpoint
	one     sync.Mutex          // one checkpoint at a time

	stop chan struct{}
	done chan struct{}
}

// checkSigner reports the problem of a Signer for Config.Validate, or "".
func checkSigner(c *Config) string {
	if c.Signer == nil {
		return ""
	}
	if _, ok := c.Signer.Public().(ed25519.PublicKey); !ok {
		return fmt.Sprintf("the public key is %T: checkpoints are signed with Ed25519", c.Signer.Public())
	}
	if c.Store != nil {
		if _, ok := c.Store.(store.Chainer); !ok {
			return fmt.Sprintf("the store (%T) keeps no hash chain (store.Chainer) to sign", c.Store)
		}
	}
	return ""
}

// startSigning sets up checkpoints once the kernel's store is known.
func (k *Kernel) startSigning(cfg *Config) {
	if cfg.Signer == nil {
		return
	}
	sg := &signing{signer: cfg.Signer, store: k.store.(store.Chainer), on: cfg.OnCheckpoint, touched: map[string]struct{}{}}
	k.signing = sg
	every := cmp.Or(cfg.CheckpointEvery, defaultCheckpointEvery)
	if every < 0 {
		return
	}
	sg.stop, sg.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sg.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-sg.stop:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), every)
				if _, err := k.Checkpoint(ctx); err != nil {
					k.log.Error("checkpoint", "namespace", k.namespace, "err", err)
				}
				cancel()
			}
		}
	}()
}

// touch notes a trace the kernel wrote, for the next checkpoint.
func (sg *signing) touch(traceID string) {
	sg.mu.Lock()
	sg.touched[traceID] = struct{}{}
	sg.mu.Unlock()
}

// Checkpoint signs and records, now, a checkpoint of the traces this
// kernel wrote since its last one (package chain): their heads as the
// store holds them, after the namespace's latest checkpoint in the store,
// signed with Config.Signer. It returns the checkpoint (also handed to
// Config.OnCheckpoint), or the zero Checkpoint when the kernel wrote
// nothing since its last one. The kernel calls it every
// Config.CheckpointEvery and at Close. Without a Signer it fails with
// [blackboard.ErrInvalidInput]. Safe for concurrent use; checkpoints of one
// kernel are made one at a time, and kernels sharing a namespace take
// turns through the store.
func (k *Kernel) Checkpoint(ctx context.Context) (chain.Checkpoint, error) {
	sg := k.signing
	if sg == nil {
		return chain.Checkpoint{}, fmt.Errorf("kernel: checkpoint: %w: no Config.Signer", blackboard.ErrInvalidInput)
	}
	sg.one.Lock()
	defer sg.one.Unlock()
	sg.mu.Lock()
	touched := sg.touched
	sg.touched = map[string]struct{}{}
	sg.mu.Unlock()
	if len(touched) == 0 {
		return chain.Checkpoint{}, nil
	}
	c, err := k.checkpoint(ctx, sg, slices.Sorted(maps.Keys(touched)))
	if err != nil {
		// Those traces are still to vouch for.
		sg.mu.Lock()
		maps.Copy(sg.touched, touched)
		sg.mu.Unlock()
		return chain.Checkpoint{}, err
	}
	if sg.on != nil {
		sg.on(c)
	}
	return c, nil
}

// checkpoint reads the heads of traces and records their checkpoint after
// the namespace's latest, taking its turn with other kernels through the
// trace's length.
func (k *Kernel) checkpoint(ctx context.Context, sg *signing, traces []string) (chain.Checkpoint, error) {
	heads := make([]chain.Head, 0, len(traces))
	for _, tr := range traces {
		h, err := sg.store.Head(ctx, k.namespace, tr)
		if err != nil {
			return chain.Checkpoint{}, fmt.Errorf("kernel: checkpoint: head of trace %q: %w", tr, err)
		}
		heads = append(heads, h)
	}
	for attempt := 0; ; attempt++ {
		c := chain.Checkpoint{Namespace: k.namespace, Seq: 1, TimeMS: k.now().UnixMilli(), Heads: heads}
		n := 0
		last, err := k.store.FindActive(ctx, k.namespace, ledger.Trace, blackboard.Evidence, ledger.Kind)
		switch {
		case err == nil:
			prev, derr := ledger.Decode(last)
			_, _, idx, ok := store.SplitRecordID(last.ID)
			if derr != nil || !ok {
				return chain.Checkpoint{}, fmt.Errorf("kernel: checkpoint: the latest checkpoint, %s, does not read: %v", last.ID, derr)
			}
			c.Seq, c.Prev, n = prev.Seq+1, prev.Digest(), idx+1
		case !errors.Is(err, blackboard.ErrNotFound):
			return chain.Checkpoint{}, fmt.Errorf("kernel: checkpoint: %w", err)
		}
		if err := c.Sign(sg.signer); err != nil {
			return chain.Checkpoint{}, fmt.Errorf("kernel: %w", err)
		}
		payload, err := ledger.Payload(&c)
		if err != nil {
			return chain.Checkpoint{}, err
		}
		rec := blackboard.Record{ID: store.RecordID(blackboard.Evidence, k.namespace, ledger.Trace, n+1), Slot: blackboard.Evidence,
			Mode: blackboard.ModeCommit, Kind: ledger.Kind, Payload: payload, Status: blackboard.StatusActive, Reason: reason.Committed,
			Scope: blackboard.ScopeEpisode, Namespace: k.namespace,
			Provenance: blackboard.Provenance{Role: blackboard.RoleKernel, Writer: "kernel", TraceID: ledger.Trace, TimestampMS: c.TimeMS}}
		err = k.store.Apply(ctx, store.Batch{Appends: []blackboard.Record{rec}, Trace: ledger.Trace, TraceNamespace: k.namespace, TraceLen: n})
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, blackboard.ErrConflict) || attempt >= 8 {
			return chain.Checkpoint{}, fmt.Errorf("kernel: checkpoint: %w", err)
		}
		// Another kernel of the namespace recorded one first: follow it.
	}
}

// closeSigning stops the ticker and records the last checkpoint.
func (k *Kernel) closeSigning() error {
	sg := k.signing
	if sg == nil {
		return nil
	}
	if sg.stop != nil {
		close(sg.stop)
		<-sg.done
		sg.stop = nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeCheckpointWait)
	defer cancel()
	_, err := k.Checkpoint(ctx)
	return err
}

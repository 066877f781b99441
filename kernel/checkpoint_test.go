package kernel_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
)

// A handle may not write the checkpoint trace: a junk record there would
// stop every checkpoint after it, a forged one would sit in the
// checkpoints' sequence.
func TestAttackCheckpointTraceReserved(t *testing.T) {
	k, err := kernel.New(kernel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	for _, role := range []blackboard.Role{blackboard.RoleTool, blackboard.RoleEvidence} {
		_, err = k.Handle(role, "x").Write(t.Context(), kernel.Entry{TraceID: "bk.checkpoints", Slot: blackboard.Evidence, Kind: "checkpoint", Payload: blackboard.Payload{}})
		if !errors.Is(err, blackboard.ErrPermission) {
			t.Errorf("a %s handle writing bk.checkpoints: %v, want ErrPermission", role, err)
		}
	}
}

// hidden is a store that keeps no chain (it hides memstore's).
type hidden struct{ store.Store }

func TestSignerConfig(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for name, cfg := range map[string]kernel.Config{
		"an ECDSA key":      {Signer: ec},
		"a store unchained": {Signer: priv, Store: hidden{memstore.New()}},
	} {
		var ce *kernel.ConfigError
		if _, err := kernel.New(cfg); !errors.As(err, &ce) || ce.Field != "Signer" {
			t.Errorf("%s: %v, want a ConfigError on Signer", name, err)
		}
	}
	k, err := kernel.New(kernel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if _, err := k.Checkpoint(t.Context()); !errors.Is(err, blackboard.ErrInvalidInput) {
		t.Errorf("Checkpoint without a signer: %v, want ErrInvalidInput", err)
	}
}

// The kernel signs the heads of the traces it wrote, in one sequence
// per namespace that two kernels sharing the namespace extend in turn.
func TestCheckpointSequence(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	st := memstore.New()
	var got []chain.Checkpoint
	open := func() *kernel.Kernel {
		k, err := kernel.New(kernel.Config{Store: st, Signer: priv, CheckpointEvery: -1, OnCheckpoint: func(c chain.Checkpoint) { got = append(got, c) }})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	k1, k2 := open(), open()
	write := func(k *kernel.Kernel, trace string) {
		if _, err := k.Handle(blackboard.RoleTool, "crm").Write(t.Context(), kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: "order", Payload: blackboard.Payload{}}); err != nil {
			t.Fatal(err)
		}
	}
	write(k1, "a")
	write(k2, "b")
	if _, err := k1.Checkpoint(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := k2.Checkpoint(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(k1.Close(), k2.Close()); err != nil { // nothing new: no checkpoint
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d checkpoints, want 2", len(got))
	}
	if err := got[0].Follows(nil); err != nil {
		t.Error(err)
	}
	if err := got[1].Follows(&got[0]); err != nil {
		t.Error(err)
	}
	for i, c := range got {
		if err := c.Verify([]ed25519.PublicKey{pub}); err != nil {
			t.Errorf("checkpoint %d: %v", i, err)
		}
		if len(c.Heads) != 1 || c.Heads[0].Len != 1 {
			t.Errorf("checkpoint %d names %+v, want the one trace its kernel wrote", i, c.Heads)
		}
	}
}

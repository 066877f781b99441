package store_test

import (
	"errors"
	"testing"

	. "github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/vouch"
	"github.com/blackboardkernel/bk/store"
)

// TestVouchedBatchesOnly: a batch the kernel vouched for passes
// Check unscanned; the same batch from any other caller (no mark,
// or a copy of the struct built anew) is checked and refused.
func TestVouchedBatchesOnly(t *testing.T) {
	bad := func() store.Batch {
		return store.Batch{Appends: []Record{{ID: "beliefs:t:1", Slot: Beliefs, Mode: ModeCommit, Kind: "k\xff",
			Provenance: Provenance{Role: RoleKernel, Writer: "kernel", TraceID: "t"}, Status: StatusActive}}}
	}
	b := bad()
	if err := b.Check("", ""); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("unvouched bad batch: %v, want ErrInvalidInput", err)
	}
	if err := b.Check("t", ""); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("unvouched bad batch, held: %v, want ErrInvalidInput", err)
	}
	vouch.Set(&b.Vouch)
	if err := b.Check("", ""); err != nil {
		t.Fatalf("vouched batch: %v, want it passed unscanned", err)
	}
	rebuilt := store.Batch{Appends: b.Appends, Trace: b.Trace}
	if err := rebuilt.Check("", ""); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("a batch rebuilt from a vouched one's records: %v, want ErrInvalidInput", err)
	}
}

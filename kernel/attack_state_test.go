package kernel_test

import (
	"path/filepath"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

// An operator retracts an observation with a write the kernel does not
// make (a status change straight in the store). The next decision must not
// rest on it, whether it is made by the kernel that wrote the trace's state
// last (which starts from the state it left: the store refuses its batch,
// the trace having changed since) or by another process (which reads a
// stored state that missed the change, and must read the trace instead).
func TestAttackRetractionBehindTheState(t *testing.T) {
	stores := map[string]func(t *testing.T) store.Store{
		"memory": func(*testing.T) store.Store { return memstore.New() },
		"sqlite": func(t *testing.T) store.Store {
			s, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "bk.db"))
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
	for name, open := range stores {
		for _, who := range []string{"the same kernel", "another kernel"} {
			t.Run(name+"/"+who, func(t *testing.T) {
				ctx := t.Context()
				s := open(t)
				defer s.Close()
				newKernel := func() *kernel.Kernel {
					k, err := kernel.New(kernel.Config{
						Store:       s,
						BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"charge"}}},
					})
					if err != nil {
						t.Fatal(err)
					}
					return k
				}
				k := newKernel()
				obs, err := k.Handle(blackboard.RoleTool, "billing").Write(ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Percepts, Kind: "charge",
					Payload: blackboard.Payload{"order_id": "A1", "amount": 100.0}})
				if err != nil {
					t.Fatal(err)
				}
				belief := kernel.Entry{TraceID: "t", Slot: blackboard.Beliefs, Kind: "refund_due",
					Payload: blackboard.Payload{"value": true, "depends_on": []any{"charge"}}}
				if d, err := k.Proposer(blackboard.RolePlanner, "p").Submit(ctx, belief); err != nil || !d.Committed() {
					t.Fatalf("belief on the observation: %v %v", d.Code, err)
				}
				if err := s.Apply(ctx, store.Batch{Invalidations: []store.Invalidation{{ID: obs, Status: blackboard.StatusInvalidated, Reason: reason.StaleEvidence}}}); err != nil {
					t.Fatal(err)
				}
				if who == "another kernel" {
					k = newKernel()
				}
				d, err := k.Proposer(blackboard.RolePlanner, "p").Submit(ctx, belief)
				if err != nil {
					t.Fatal(err)
				}
				if d.Committed() {
					t.Fatalf("a belief committed on the retracted observation %s", obs)
				}
				if d.Code != reason.MissingEvidence {
					t.Errorf("refused with %s, want %s", d.Code, reason.MissingEvidence)
				}
			})
		}
	}
}

// Another process commits a persistent constraint that blocks an action
// type while this kernel holds the namespace's constraints in its cache.
// Its next decision must enforce it: the cache is read again whenever the
// store's counter of persistent constraints moved.
func TestAttackPersistentConstraintBehindTheCache(t *testing.T) {
	t.Run("memory", func(t *testing.T) { persistentBehindTheCache(t, memstore.New()) })
	t.Run("sqlite", func(t *testing.T) {
		s, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "bk.db"))
		if err != nil {
			t.Fatal(err)
		}
		persistentBehindTheCache(t, s)
	})
}

func persistentBehindTheCache(t *testing.T, s store.Store) {
	ctx := t.Context()
	defer s.Close()
	newKernel := func() *kernel.Kernel {
		k, err := kernel.New(kernel.Config{
			Store:       s,
			ActionSpecs: []kernel.ActionSpec{{Type: "notify", SafeFallback: true, Repeatable: true}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	agent, owner := newKernel(), newKernel()
	notify := kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: "notify", Payload: blackboard.Payload{"urgent": true}}
	if d, err := agent.Proposer(blackboard.RolePlanner, "p").Submit(ctx, notify); err != nil || !d.Committed() {
		t.Fatalf("first notify: %v %v", d.Code, err)
	}
	_, err := owner.Symbolic("policy").CommitConstraint(ctx, "other", kernel.Constraint{Name: "no_urgent", Enabled: true,
		BlocksField: "urgent", AppliesTo: []string{"notify"}}, blackboard.ScopePersistent)
	if err != nil {
		t.Fatal(err)
	}
	d, err := agent.Proposer(blackboard.RolePlanner, "p").Submit(ctx, notify)
	if err != nil {
		t.Fatal(err)
	}
	if d.Committed() || d.Rule != "no_urgent" {
		t.Fatalf("notify after another process blocked it: %s (rule %q), want the persistent constraint to block it", d.Code, d.Rule)
	}
}

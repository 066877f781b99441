package kernel_test

import (
	"errors"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
)

func TestOnceKeysOnWrites(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		w := func(keys ...string) error {
			res, err := a.k.Governor().Write(a.ctx, "payments", kernel.Entry{TraceID: "t", Slot: blackboard.Percepts, Kind: "attempt", OnceKeys: keys}, nil)
			if err == nil && (res.ID == "" || res.Appended != nil) {
				t.Errorf("a write without follow records returned %+v, want its record and nothing else", res)
			}
			return err
		}
		if err := w("effect/A1"); err != nil {
			t.Fatal(err)
		}
		a.mark()
		if err := w("effect/A1"); !errors.Is(err, blackboard.ErrDuplicateKey) {
			t.Errorf("second claim: %v, want ErrDuplicateKey", err)
		}
		if err := w("x", "x"); !errors.Is(err, blackboard.ErrInvalidInput) {
			t.Errorf("repeated key: %v", err)
		}
		a.unchanged()
		if _, err := a.planner.Write(a.ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Beliefs, Kind: "b", Payload: belief(true, "attempt"), OnceKeys: []string{"k"}}); !errors.Is(err, blackboard.ErrPermission) {
			t.Errorf("planner claims a key: %v, want ErrPermission", err)
		}
		if _, err := a.planner.Submit(a.ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Beliefs, Kind: "b", Payload: belief(true, "attempt"), OnceKeys: []string{"k"}}); !errors.Is(err, blackboard.ErrPermission) {
			t.Errorf("planner submit claims a key: %v, want ErrPermission", err)
		}
	})
}

// mark and unchanged snapshot the store, as the fixture's do.
func (a *arena) mark() { a.marked = a.dumpAll() }

func (a *arena) unchanged() {
	a.t.Helper()
	if got := a.dumpAll(); len(got) != len(a.marked) {
		a.t.Errorf("store changed: had %d records, now %d", len(a.marked), len(got))
	}
}

func (a *arena) dumpAll() []blackboard.Record {
	var out []blackboard.Record
	for _, slot := range blackboard.AllSlots() {
		for r, err := range a.store.ListSlot(a.ctx, slot, blackboard.Filter{}) {
			if err != nil {
				a.t.Fatal(err)
			}
			out = append(out, r)
		}
	}
	return out
}

func TestSpecAndNamespace(t *testing.T) {
	once := &kernel.OnceKey{Fields: []string{"order_id"}}
	k, err := kernel.New(kernel.WithNamespace("shop"), kernel.WithActionSpecs(kernel.ActionSpec{Type: "issue_refund", MinBeliefs: []string{"refund_due"}, Once: once}))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if k.Namespace() != "shop" {
		t.Errorf("namespace %q", k.Namespace())
	}
	s, ok := k.Spec("issue_refund")
	if !ok || s.Once == nil || s.Once.Fields[0] != "order_id" || s.MinBeliefs[0] != "refund_due" {
		t.Fatalf("spec %+v %v", s, ok)
	}
	s.Once.Fields[0], s.MinBeliefs[0], once.Fields[0] = "x", "y", "z" // copies both ways
	if again, _ := k.Spec("issue_refund"); again.Once.Fields[0] != "order_id" || again.MinBeliefs[0] != "refund_due" {
		t.Errorf("spec changed through a copy: %+v", again)
	}
	if _, ok := k.Spec("nothing"); ok {
		t.Error("unregistered type has a spec")
	}
	if fb, ok := k.Spec(kernel.FallbackQueueForReview); !ok || !fb.SafeFallback {
		t.Error("default fallback missing")
	}
}

package kernel_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store"
)

func TestOnceKeysOnWrites(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		w := func(keys ...string) error {
			res, err := writeResult(a.k.Governor().Write(a.ctx, "payments", kernel.Entry{TraceID: "t", Slot: blackboard.Percepts, Kind: "attempt", OnceKeys: keys}, nil))
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
		for r, err := range a.store.ListSlot(a.ctx, slot, store.Filter{}) {
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
	k, err := kernel.New(kernel.Config{
		Namespace:   "shop",
		ActionSpecs: []kernel.ActionSpec{{Type: "issue_refund", MinBeliefs: []string{"refund_due"}, Once: once}},
	})
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
	once.Fields[0] = "z" // New keeps its own copy
	if again, _ := k.Spec("issue_refund"); again.Once.Fields[0] != "order_id" || again.MinBeliefs[0] != "refund_due" {
		t.Errorf("spec changed through the caller's config: %+v", again)
	}
	if _, ok := k.Spec("nothing"); ok {
		t.Error("unregistered type has a spec")
	}
	if fb, ok := k.Spec(kernel.FallbackQueueForReview); !ok || !fb.SafeFallback {
		t.Error("default fallback missing")
	}
}

// Governor.Submit hands its then function the committed record as a copy,
// and Governor.Write the record written: what the store holds, and the
// caller's to keep and change without reaching stored state (the gate
// keeps the action it runs and the result it returns).
func TestAttackGovernorSeesACopyOfTheCommitted(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		a.groundRefund("t", "A1")
		var seen []blackboard.Record
		d, err := a.k.Governor().Submit(a.ctx, "llm", kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: "issue_refund", Payload: action("refund_due")},
			func(_ kernel.Decision, committed blackboard.Record) ([]kernel.Follow, error) {
				seen = append(seen, committed)
				return nil, nil
			})
		if err != nil || !d.Committed() || len(seen) == 0 {
			t.Fatalf("refund: %+v %v (then called %d times)", d, err, len(seen))
		}
		got := seen[len(seen)-1]
		stored := a.get(d.CommittedID)
		if !reflect.DeepEqual(got, stored) {
			t.Fatalf("then saw\n %+v\nthe store holds\n %+v", got, stored)
		}
		got.Payload["requires_beliefs"] = []any{"forged"}
		got.Payload["amount"] = 1e9
		got.Provenance.InputRefs[0], got.EvidenceRefs[0] = "x", "x"
		if after := a.get(d.CommittedID); !reflect.DeepEqual(after, stored) {
			t.Errorf("changing what then saw changed the store:\n %+v\nwas\n %+v", after, stored)
		}
		// So does Write, with the record written.
		var wrote blackboard.Record
		w, err := writeResult(a.k.Governor().Write(a.ctx, "payments", kernel.Entry{TraceID: "t", Slot: blackboard.Percepts, Kind: "receipt",
			Payload: blackboard.Payload{"amount": 5.0, "lines": []any{"a"}}, InputRefs: []string{d.CommittedID}},
			func(rec blackboard.Record) ([]kernel.Follow, error) {
				wrote = rec
				return nil, nil
			}))
		if err != nil || wrote.ID != w.ID {
			t.Fatalf("write: %+v %v, then saw %s", w, err, wrote.ID)
		}
		written := a.get(w.ID)
		wrote.Payload["amount"], wrote.Payload["lines"].([]any)[0], wrote.Provenance.InputRefs[0] = 1e9, "forged", "x"
		if after := a.get(w.ID); !reflect.DeepEqual(after, written) {
			t.Errorf("changing what Write's then saw changed the store:\n %+v\nwas\n %+v", after, written)
		}
		// A refusal hands over no record.
		var refused []blackboard.Record
		if _, err := a.k.Governor().Submit(a.ctx, "llm", kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: "issue_refund", Payload: action("nothing")},
			func(_ kernel.Decision, committed blackboard.Record) ([]kernel.Follow, error) {
				refused = append(refused, committed)
				return nil, nil
			}); err != nil || len(refused) == 0 || refused[0].ID != "" {
			t.Errorf("refused: %v, then saw %+v", err, refused)
		}
	})
}

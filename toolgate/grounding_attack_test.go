package toolgate

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
)

// The attacks of this file are the exact-grounding routes of the third
// adversarial review (issue 36): a derived belief that rests on another
// result than the one it was computed from, a planner's belief over a
// derived one, and a planner's commit of a tool's action.

// pausingStore holds, once it is armed, the first writer whose batch
// appends a record hold matches, right after the batch landed, until the
// test releases it: the window between a result's record and what the
// gate does next with it, which a model's parallel tool calls open.
type pausingStore struct {
	store.Store
	armed   atomic.Bool
	hold    func(blackboard.Record) bool
	held    chan struct{} // closed when the writer holds
	release chan struct{}
}

func newPausingStore(hold func(blackboard.Record) bool) *pausingStore {
	return &pausingStore{Store: memstore.New(), hold: hold, held: make(chan struct{}), release: make(chan struct{})}
}

func (s *pausingStore) Apply(ctx context.Context, b store.Batch) error {
	if err := s.Store.Apply(ctx, b); err != nil {
		return err
	}
	for _, r := range b.Appends {
		if s.hold(r) && s.armed.CompareAndSwap(true, false) {
			close(s.held)
			select {
			case <-s.release:
			case <-ctx.Done():
			}
			break
		}
	}
	return nil
}

// orderSystem is a shop's orders as lookups read them, which a refund
// made elsewhere (another agent, a person at the counter) changes.
type orderSystem struct {
	mu     sync.Mutex
	orders map[string]order
}

func (o *orderSystem) read(id string) order {
	o.mu.Lock()
	defer o.mu.Unlock()
	return order{"order_id": id, "amount": o.orders[id]["amount"], "refunded": o.orders[id]["refunded"], "refundable": o.orders[id]["refundable"]}
}

func (o *orderSystem) refundElsewhere(id string, amount float64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.orders[id]["refunded"] = o.orders[id]["refunded"].(float64) + amount
}

// raceDesk is deriveDesk's configuration over store and the order system:
// lookup_order derives refund_due; issue_refund requires it, is bound to
// the order looked up and is once per order.
func raceDesk(t *testing.T, store store.Store, shop *orderSystem) (*Gate, *atomic.Int64) {
	t.Helper()
	refunds := new(atomic.Int64)
	lookup := Func(Tool{Name: "lookup_order", Result: "order", ReadOnly: true, Derives: []Derive{refundDue}},
		func(_ context.Context, _ Invocation, a lookupArgs) (order, error) { return shop.read(a.OrderID), nil })
	refund := Func(Tool{Name: "issue_refund", Result: "refund", Requires: []string{"refund_due"},
		Bindings: []Binding{{Arg: "order_id", Percept: "order", Op: "equal"}}, Once: &kernel.OnceKey{Fields: []string{"order_id"}}, Unscoped: true},
		func(_ context.Context, _ Invocation, a refundArgs) (map[string]any, error) {
			refunds.Add(1)
			shop.refundElsewhere(a.OrderID, a.Amount)
			return map[string]any{"refunded": a.Amount}, nil
		})
	g, err := New(context.Background(), Config{
		Kernel:    kernel.Config{Store: store},
		Tools:     []Tool{lookup, refund},
		Contracts: map[string][]string{"support": {"lookup_order", "issue_refund"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	checkStoreAtEnd(t, store)
	return g, refunds
}

func newShop() *orderSystem {
	return &orderSystem{orders: map[string]order{
		"A1": {"amount": 80.0, "refunded": 0.0, "refundable": true},
		"A2": {"amount": 80.0, "refunded": 80.0, "refundable": true},
	}}
}

// orderRead matches the result record of a lookup of order id that read
// refunded as it was.
func orderRead(id string, refunded float64) func(blackboard.Record) bool {
	return func(r blackboard.Record) bool {
		return r.Slot == blackboard.Percepts && r.Kind == "order" && r.Payload["order_id"] == id && r.Payload["refunded"] == refunded
	}
}

// callAsync makes a call on its own goroutine, as a model's parallel tool
// call is made.
func callAsync(t *testing.T, g *Gate, trace, tool, args string) <-chan Result {
	out := make(chan Result, 1)
	go func() {
		res, err := g.Call(context.Background(), Call{Tool: tool, Args: json.RawMessage(args), Caller: "support", TraceID: trace})
		if err != nil {
			t.Errorf("%s %s: %v", tool, args, err)
		}
		out <- res
	}()
	return out
}

// Two lookups of one order in one trace at once, the order refunded
// elsewhere between their reads: the first read (nothing refunded yet) is
// recorded, then the second (all of it refunded) and its derivation,
// false; then the first's derivation. Resting on the result kind, the
// belief computed from the old read would commit on the new read, true,
// and the refund would run on an order with nothing left to refund. It
// rests on the very result it was computed from, now superseded: refused.
func TestAttackDerivedFromOldRead(t *testing.T) {
	shop := newShop()
	store := newPausingStore(orderRead("A1", 0))
	g, refunds := raceDesk(t, store, shop)
	store.armed.Store(true)
	first := callAsync(t, g, "t", "lookup_order", `{"order_id":"A1"}`)
	<-store.held
	shop.refundElsewhere("A1", 80)
	second := callGate(t, g, "t", "lookup_order", `{"order_id":"A1"}`)
	if len(second.Derived) != 1 || second.Derived[0].Code != reason.Committed || second.Derived[0].Value {
		t.Fatalf("the second lookup derived %+v, want a committed false", second.Derived)
	}
	close(store.release)
	res := <-first
	if len(res.Derived) != 1 || res.Derived[0].Code == reason.Committed || res.Derived[0].Code != reason.SupersededEvidence {
		t.Errorf("the first lookup derived %+v, want SUPERSEDED_EVIDENCE: its result was superseded", res.Derived)
	}
	r := callGate(t, g, "t", "issue_refund", `{"order_id":"A1","amount":80}`)
	if r.Outcome != audit.OutcomeRefused || refunds.Load() != 0 {
		t.Errorf("refund of an order with nothing left: %+v, %d refunds ran", r, refunds.Load())
	}
}

// The same race across two orders: a lookup of A1 (refundable) is
// recorded, then a lookup of A2 (nothing left) and its false derivation,
// then A1's derivation. Resting on the result kind, A1's belief would
// rest on A2's result, and the refund of A2, bound to the order its
// belief rests on, would run.
func TestAttackDerivedForAnotherOrder(t *testing.T) {
	shop := newShop()
	store := newPausingStore(orderRead("A1", 0))
	g, refunds := raceDesk(t, store, shop)
	store.armed.Store(true)
	first := callAsync(t, g, "t", "lookup_order", `{"order_id":"A1"}`)
	<-store.held
	callGate(t, g, "t", "lookup_order", `{"order_id":"A2"}`)
	close(store.release)
	res := <-first
	if len(res.Derived) != 1 || res.Derived[0].Code == reason.Committed {
		t.Errorf("A1's lookup derived %+v, want it refused: A2's result superseded A1's", res.Derived)
	}
	r := callGate(t, g, "t", "issue_refund", `{"order_id":"A2","amount":80}`)
	if r.Outcome != audit.OutcomeRefused || refunds.Load() != 0 {
		t.Errorf("refund of A2 on A1's belief: %+v, %d refunds ran", r, refunds.Load())
	}
}

// The belief was computed from the current result and committed; a second
// lookup of the order (refunded elsewhere meanwhile) is recorded, and the
// refund is decided before its derivation lands. The belief's result is
// no longer the current observation: the refund is SUPERSEDED_EVIDENCE
// and nothing runs, though the newer result is clean.
func TestAttackRefundOnSupersededDerivation(t *testing.T) {
	shop := newShop()
	store := newPausingStore(orderRead("A1", 80))
	g, refunds := raceDesk(t, store, shop)
	if res := callGate(t, g, "t", "lookup_order", `{"order_id":"A1"}`); len(res.Derived) != 1 || !res.Derived[0].Value || res.Derived[0].Code != reason.Committed {
		t.Fatalf("lookup derived %+v", res.Derived)
	}
	shop.refundElsewhere("A1", 80)
	store.armed.Store(true)
	second := callAsync(t, g, "t", "lookup_order", `{"order_id":"A1"}`)
	<-store.held
	r := callGate(t, g, "t", "issue_refund", `{"order_id":"A1","amount":80}`)
	close(store.release)
	<-second
	if r.Outcome != audit.OutcomeRefused || r.Code != reason.SupersededEvidence || refunds.Load() != 0 {
		t.Errorf("refund on a derivation whose result was superseded: %+v, %d refunds ran; want SUPERSEDED_EVIDENCE", r, refunds.Load())
	}
}

// A planner submits refund_due = true over the gate's derived false, on
// the same observation (by id, or by kind), under any name, the
// deriver's included: the kind is the deriving tool's, and the refund of
// the order with nothing left is refused.
func TestAttackPlannerOverridesDerivedBelief(t *testing.T) {
	ctx := context.Background()
	shop := newShop()
	g, refunds := raceDesk(t, memstore.New(), shop)
	res := callGate(t, g, "t", "lookup_order", `{"order_id":"A2"}`)
	if len(res.Derived) != 1 || res.Derived[0].Code != reason.Committed || res.Derived[0].Value {
		t.Fatalf("lookup derived %+v", res.Derived)
	}
	b, err := g.Kernel().Reader().Get(ctx, res.Derived[0].BeliefID)
	if err != nil {
		t.Fatal(err)
	}
	source := b.Payload["depends_on"].([]any)[0].(string)
	for _, name := range []string{"mallory", audit.DeriverWriter("lookup_order"), audit.CallerWriter("support")} {
		for _, dep := range []string{source, "order"} {
			_, err := g.Kernel().Proposer(blackboard.RolePlanner, name).Submit(ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Beliefs, Kind: "refund_due",
				Payload: blackboard.Payload{"value": true, "depends_on": []string{dep}, "order_id": "A2", "max_refund": 80.0}})
			if !errors.Is(err, blackboard.ErrPermission) || kernel.CodeOf(err) != reason.PermissionDenied {
				t.Errorf("planner %s proposes refund_due on %s: %v, want PERMISSION_DENIED", name, dep, err)
			}
		}
	}
	r := callGate(t, g, "t", "issue_refund", `{"order_id":"A2","amount":80}`)
	if r.Outcome != audit.OutcomeRefused || refunds.Load() != 0 {
		t.Errorf("refund over the derived false: %+v, %d refunds ran", r, refunds.Load())
	}
}

// A planner submits the refund tool's action type itself, under its own
// name or the gate's caller writer: the kernel would commit it and claim
// the order's once-key, the gate would never run it, and every later
// refund of the order, in any trace, would be DUPLICATE_ACTION. The action
// type is the gate's: refused, and the gate's refund runs and holds the
// key.
func TestAttackPlannerHoldsOnceKey(t *testing.T) {
	ctx := context.Background()
	g, refunds := raceDesk(t, memstore.New(), newShop())
	callGate(t, g, "t", "lookup_order", `{"order_id":"A1"}`)
	for _, name := range []string{"mallory", audit.CallerWriter("support"), audit.GateWriter} {
		d, err := g.Kernel().Proposer(blackboard.RolePlanner, name).Submit(ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: "issue_refund",
			Payload: blackboard.Payload{"order_id": "A1", "amount": 1.0, "requires_beliefs": []string{"refund_due"}}})
		if !errors.Is(err, blackboard.ErrPermission) || kernel.CodeOf(err) != reason.PermissionDenied || d.Code == reason.Committed {
			t.Errorf("planner %s submits issue_refund: %v %v, want PERMISSION_DENIED", name, d.Code, err)
		}
	}
	r := callGate(t, g, "t", "issue_refund", `{"order_id":"A1","amount":80}`)
	if r.Outcome != audit.OutcomeExecuted || refunds.Load() != 1 {
		t.Fatalf("the gate's refund: %+v, %d refunds ran", r, refunds.Load())
	}
	key, err := g.Kernel().Governor().OnceKeyOf(ctx, r.ActionID)
	if err != nil {
		t.Fatal(err)
	}
	if holder, err := g.Kernel().Governor().ClaimedBy(ctx, key); err != nil || holder != r.ActionID {
		t.Errorf("once-key held by %q (%v), want the gate's action %s", holder, err, r.ActionID)
	}
}

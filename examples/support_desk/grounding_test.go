package main

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/blackboardkernel/bk/kernel"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/supervisor"
	"github.com/blackboardkernel/bk/toolgate"
	"github.com/blackboardkernel/bk/worker/llm"
)

// Exact grounding on the desk as newDesk builds it (issue 36): a model's
// parallel tool calls, made deterministic by holding one call between the
// record of its result and what the gate does next with it.

// holdingStore is a memory store that, once armed, holds the first writer
// whose batch appends a record hold matches, right after the batch
// landed, until the test releases it.
type holdingStore struct {
	store.Store
	armed   atomic.Bool
	hold    func(blackboard.Record) bool
	held    chan struct{}
	release chan struct{}
}

func (s *holdingStore) Apply(ctx context.Context, b store.Batch) error {
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

// groundingDesk is the desk over a holding store that holds the lookup of
// order whose read found refunded already refunded on it.
func groundingDesk(t *testing.T, order string, refunded float64) (*desk, *holdingStore) {
	t.Helper()
	ctx := context.Background()
	store := &holdingStore{Store: memstore.New(), held: make(chan struct{}), release: make(chan struct{}),
		hold: func(r blackboard.Record) bool {
			return r.Slot == blackboard.Percepts && r.Kind == "order" && r.Payload["order_id"] == order && r.Payload["refunded"] == refunded
		}}
	w, err := openWorld("", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	client, err := llm.New("http://127.0.0.1:1/v1", llm.WithModel("unused"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := newDesk(ctx, kernel.Config{Store: store, Namespace: "desk"}, w, client, func(context.Context, supervisor.Event) {})
	if d != nil && d.g != nil {
		t.Cleanup(func() { d.g.Close() })
	}
	if err != nil {
		t.Fatal(err)
	}
	// The ticket is about this order: the refunds below are in scope, so
	// what refuses them is the grounding.
	if err := d.g.RecordRequest(ctx, "T1", audit.Request{Principal: "customer@example.com", Resources: map[string][]string{"order": {order}}}); err != nil {
		t.Fatal(err)
	}
	return d, store
}

// callAs makes the model's call through the desk's gate, under its contract.
func (d *desk) callAs(t *testing.T, trace, tool, args string) toolgate.Result {
	t.Helper()
	res, err := d.g.Call(context.Background(), toolgate.Call{Tool: tool, Args: json.RawMessage(args), Caller: role, TraceID: trace})
	if err != nil {
		t.Fatalf("%s %s: %v", tool, args, err)
	}
	return res
}

// Two lookups of A1 in one ticket at once, A1 refunded in full elsewhere
// between their reads: the first read (nothing refunded) is recorded, then
// the second (all refunded) and its false refund_due, then the first's
// derivation. It rests on the very result it was computed from, now
// superseded: refused, and the refund the model asks for next is refused
// by the kernel, never reaching the payment API.
func TestAttackParallelLookups(t *testing.T) {
	d, store := groundingDesk(t, "A1", 0)
	store.armed.Store(true)
	first := make(chan toolgate.Result, 1)
	go func() {
		res, err := d.g.Call(context.Background(), toolgate.Call{Tool: "lookup_order", Args: json.RawMessage(`{"order_id":"A1"}`), Caller: role, TraceID: "T1"})
		if err != nil {
			t.Error(err)
		}
		first <- res
	}()
	<-store.held
	if _, _, err := d.w.Refund("refunded-at-the-counter", "A1", 80); err != nil {
		t.Fatal(err)
	}
	second := d.callAs(t, "T1", "lookup_order", `{"order_id":"A1"}`)
	if len(second.Derived) != 1 || second.Derived[0].Code != reason.Committed || second.Derived[0].Value {
		t.Fatalf("the second lookup derived %+v, want a committed false", second.Derived)
	}
	close(store.release)
	res := <-first
	if len(res.Derived) != 1 || res.Derived[0].Code != reason.SupersededEvidence {
		t.Errorf("the first lookup derived %+v, want SUPERSEDED_EVIDENCE", res.Derived)
	}
	refund := d.callAs(t, "T1", "issue_refund", `{"order_id":"A1","amount":80,"reason":"late"}`)
	if refund.Outcome != audit.OutcomeRefused || d.effects.Load() != 2 || len(d.w.Payments()) != 1 {
		t.Errorf("refund of an order refunded in full: %+v; %d effects ran, %d payments; want refused by the kernel, only the lookups run",
			refund, d.effects.Load(), len(d.w.Payments()))
	}
}

// refund_due was derived from the current read of A9 and committed; A9 is
// refunded elsewhere, and a second lookup's result is recorded while the
// model's parallel refund is decided, before that lookup's derivation
// lands. The belief's result is no longer the current observation:
// SUPERSEDED_EVIDENCE, and nothing runs.
func TestAttackRefundBesideLookup(t *testing.T) {
	d, store := groundingDesk(t, "A9", 60)
	if res := d.callAs(t, "T1", "lookup_order", `{"order_id":"A9"}`); len(res.Derived) != 1 || res.Derived[0].Code != reason.Committed || !res.Derived[0].Value {
		t.Fatalf("lookup derived %+v", res.Derived)
	}
	if _, _, err := d.w.Refund("refunded-at-the-counter", "A9", 60); err != nil {
		t.Fatal(err)
	}
	store.armed.Store(true)
	second := make(chan struct{})
	go func() {
		defer close(second)
		if _, err := d.g.Call(context.Background(), toolgate.Call{Tool: "lookup_order", Args: json.RawMessage(`{"order_id":"A9"}`), Caller: role, TraceID: "T1"}); err != nil {
			t.Error(err)
		}
	}()
	<-store.held
	refund := d.callAs(t, "T1", "issue_refund", `{"order_id":"A9","amount":60,"reason":"other"}`)
	close(store.release)
	<-second
	if refund.Outcome != audit.OutcomeRefused || refund.Code != reason.SupersededEvidence || d.effects.Load() != 2 || len(d.w.Payments()) != 1 {
		t.Errorf("refund beside a newer lookup: %+v; %d effects ran, %d payments; want SUPERSEDED_EVIDENCE, only the lookups run",
			refund, d.effects.Load(), len(d.w.Payments()))
	}
}

package toolgate

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

// fullEffect sets every field of an Effect.
var fullEffect = audit.Effect{Status: audit.StatusFailed, Tool: "issue_refund", ActionID: "actions:t:4", Key: "desk/actions:t:4", Attempt: 3,
	Code: reason.RetriesExhausted, Approval: "evidence:t:5", Approver: "human:alice", Note: "ok", Error: "gateway timeout",
	ExecutionStatus: failure.StatusNetwork, Category: failure.Category("network"), Retryable: true,
	LeaseUntilMS: 1_735_689_600_123, PreviousError: "connection reset"}

// TestEffectRoundTrip: what the encoder writes, stored by the kernel (its
// payload normalised, its numbers made JSON numbers) in memory and in
// SQLite, the decoder reads back field for field; so does a sparse effect,
// whose empty fields are left out of the payload.
func TestEffectRoundTrip(t *testing.T) {
	sq, err := sqlitestore.Open(t.Context(), ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	for name, s := range map[string]store.Store{"memory": memstore.New(), "sqlite": sq} {
		t.Run(name, func(t *testing.T) {
			k, err := kernel.New(kernel.Config{Store: s})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			sparse := audit.Effect{Status: audit.StatusAttempted, Tool: "lookup_order", ActionID: "actions:t:2", Key: "k", Attempt: 1}
			for _, want := range []audit.Effect{fullEffect, sparse} {
				w, err := writeResult(k.Governor().Write(ctx, toolWriter(want.Tool), kernel.Entry{TraceID: "t", Slot: blackboard.Percepts, Kind: audit.KindAttempt, Payload: payload(want)}, nil))
				if err != nil {
					t.Fatal(err)
				}
				back, err := s.Get(ctx, w.ID)
				if err != nil {
					t.Fatal(err)
				}
				got, ok := audit.EffectOf(back)
				if !ok || got != want {
					t.Errorf("audit.EffectOf = %+v, %v; want %+v", got, ok, want)
				}
			}
			stored, _ := json.Marshal(sparse.Encode())
			if string(stored) != `{"action_id":"actions:t:2","attempt":1,"key":"k","status":"attempted","tool":"lookup_order"}` {
				t.Errorf("a sparse effect is stored as %s", stored)
			}
		})
	}
}

// TestEffectOfRefusesForgeries: an object under audit.KeyEffect is the gate's
// only in a percept written under the gate's writer id for the tool it
// names, with a known status and an action id. Another tool's percept
// that copies a real effect, evidence holding one, and a percept with a
// status the gate never writes are not effects.
func TestEffectOfRefusesForgeries(t *testing.T) {
	k, err := kernel.New(kernel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	real := fullEffect
	real.Status, real.Code = audit.StatusSucceeded, reason.EffectSucceeded
	write := func(w kernel.Handle, e kernel.Entry) blackboard.Record {
		t.Helper()
		e.TraceID = "t"
		id, err := w.Write(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		r, err := w.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	genuine := write(k.Handle(blackboard.RoleTool, toolWriter(real.Tool)), kernel.Entry{Slot: blackboard.Percepts, Kind: "refund", Payload: payload(real)})
	if got, ok := audit.EffectOf(genuine); !ok || got != real {
		t.Fatalf("the gate's own layout under its writer id: %+v, %v", got, ok)
	}
	otherStatus := real
	otherStatus.Status = "paid"
	noAction := real
	noAction.ActionID = ""
	for name, r := range map[string]blackboard.Record{
		"another tool":      write(k.Handle(blackboard.RoleTool, "scraper"), kernel.Entry{Slot: blackboard.Percepts, Kind: "refund", Payload: payload(real)}),
		"another tool's id": write(k.Handle(blackboard.RoleTool, toolWriter("lookup_order")), kernel.Entry{Slot: blackboard.Percepts, Kind: "refund", Payload: payload(real)}),
		"evidence":          write(k.Handle(blackboard.RoleEvidence, toolWriter(real.Tool)), kernel.Entry{Slot: blackboard.Evidence, Kind: "refund", Payload: payload(real)}),
		"unknown status":    write(k.Handle(blackboard.RoleTool, toolWriter(real.Tool)), kernel.Entry{Slot: blackboard.Percepts, Kind: "refund", Payload: payload(otherStatus)}),
		"no action":         write(k.Handle(blackboard.RoleTool, toolWriter(real.Tool)), kernel.Entry{Slot: blackboard.Percepts, Kind: "refund", Payload: payload(noAction)}),
		"not an object":     write(k.Handle(blackboard.RoleTool, toolWriter(real.Tool)), kernel.Entry{Slot: blackboard.Percepts, Kind: "refund", Payload: blackboard.Payload{audit.KeyEffect: "succeeded"}}),
	} {
		if e, ok := audit.EffectOf(r); ok {
			t.Errorf("%s: %s taken for the gate's effect %+v", name, r.ID, e)
		}
	}
}

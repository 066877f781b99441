package worker_test

import (
	"context"
	"errors"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/worker"
)

func TestOwnAndLastOwn(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	k, err := kernel.New(kernel.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	tool := k.Handle(blackboard.RoleTool, "x")
	other := k.Handle(blackboard.RoleTool, "y")
	planner := k.Proposer(blackboard.RolePlanner, "x") // same name, another role
	write := func(h kernel.Handle, trace, kind string, v float64) {
		t.Helper()
		if _, err := h.Write(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: kind, Payload: blackboard.Payload{"v": v}}); err != nil {
			t.Fatal(err)
		}
	}
	write(tool, "t", "a", 1)
	write(other, "t", "a", 2)
	write(tool, "t", "b", 3)
	write(tool, "t", "a", 4)
	write(tool, "u", "a", 5)
	d, err := planner.Submit(ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Beliefs, Kind: "a",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"nothing"}}})
	if err != nil || d.Code != reason.MissingEvidence {
		t.Fatal(d.Code, err)
	}

	var got []float64
	for r, err := range worker.Own(ctx, tool, "t") {
		if err != nil {
			t.Fatal(err)
		}
		v, _ := r.Payload.Float("v")
		got = append(got, v)
	}
	if len(got) != 3 || got[0] != 1 || got[1] != 3 || got[2] != 4 {
		t.Fatalf("Own(tool x, t) = %v, want [1 3 4]", got)
	}
	last, ok, err := worker.LastOwn(ctx, tool, "t", blackboard.Percepts, "a")
	if v, _ := last.Payload.Float("v"); err != nil || !ok || v != 4 {
		t.Fatalf("LastOwn = %v %v %v, want the record with v=4", last, ok, err)
	}
	// The planner named x sees its own rejected proposal, with its code,
	// and none of the tool's records.
	last, ok, err = worker.LastOwn(ctx, planner, "t", blackboard.Beliefs, "a")
	if err != nil || !ok || last.Status != blackboard.StatusInvalidated || last.Reason != reason.MissingEvidence {
		t.Fatalf("planner LastOwn = %+v %v %v", last, ok, err)
	}
	if _, ok, err := worker.LastOwn(ctx, planner, "t", blackboard.Percepts, "a"); ok || err != nil {
		t.Fatalf("a record of another role counted as own: %v %v", ok, err)
	}
	if _, ok, err := worker.LastOwn(ctx, tool, "none", blackboard.Percepts, "a"); ok || err != nil {
		t.Fatalf("empty trace: %v %v", ok, err)
	}
	// Stopping early is allowed.
	for range worker.Own(ctx, tool, "t") {
		break
	}
	// Store errors come through.
	_ = store.Close()
	if _, _, err := worker.LastOwn(ctx, tool, "t", blackboard.Percepts, "a"); !errors.Is(err, blackboard.ErrClosed) {
		t.Fatalf("closed store: %v", err)
	}
}

package kernel_test

import (
	"context"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
)

// A view names the record each committed payload comes from, from the
// trace's state and from its records alike, and a later commit of a kind
// moves the id on.
func TestViewIDs(t *testing.T) {
	ctx := context.Background()
	k, err := kernel.New(kernel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	tool, planner := k.Handle(blackboard.RoleTool, "crm"), k.Proposer(blackboard.RolePlanner, "planner")
	first, err := tool.Write(ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Percepts, Kind: "order", Payload: blackboard.Payload{"n": 1}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := planner.Submit(ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Beliefs, Kind: "ok",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}})
	if err != nil || !d.Committed() {
		t.Fatal(d.Code, err)
	}
	second, err := tool.Write(ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Percepts, Kind: "order", Payload: blackboard.Payload{"n": 2}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := k.Reader().View(ctx, "t", false)
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := v.ID(blackboard.Beliefs, "ok"); !ok || id != d.CommittedID {
		t.Errorf("belief id %q, want %q", id, d.CommittedID)
	}
	if id, _ := v.ID(blackboard.Percepts, "order"); id != second || id == first {
		t.Errorf("percept id %q, want the later %q", id, second)
	}
	if _, ok := v.ID(blackboard.Beliefs, "missing"); ok {
		t.Error("an id for a kind not committed")
	}
	// A pending proposal makes the view read the trace's records.
	if _, err := planner.Write(ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Plans, Kind: "plan", Payload: blackboard.Payload{"steps": []any{map[string]any{"action": "noop"}}}}); err != nil {
		t.Fatal(err)
	}
	v, err = k.Reader().View(ctx, "t", false)
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := v.ID(blackboard.Beliefs, "ok"); id != d.CommittedID || len(v.Pending) != 1 {
		t.Errorf("from the records: belief id %q, pending %d", id, len(v.Pending))
	}
}

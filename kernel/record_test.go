package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/jsonval"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// TestRecordJSONRoundTrip: records encode their enums by name and decode
// back to the same value, so a store may keep them as JSON.
func TestRecordJSONRoundTrip(t *testing.T) {
	f := newFixture(t)
	d := f.groundedBelief(tr)
	for _, r := range []blackboard.Record{f.get(d.CommittedID), f.get(d.EvidenceID), f.get(d.ProposalID), f.get(f.get(d.CommittedID).Provenance.InputRefs[1])} {
		enc, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back blackboard.Record
		if err := json.Unmarshal(enc, &back); err != nil {
			t.Fatalf("%s: %v", enc, err)
		}
		if !reflect.DeepEqual(back, r) {
			t.Errorf("round trip of %s:\n got %+v\nwant %+v", enc, back, r)
		}
		if !strings.Contains(string(enc), `"slot":"`+string(r.Slot)+`"`) {
			t.Errorf("slot not encoded by name: %s", enc)
		}
	}
	// The enums are strings: decoding takes any text, and what reads a
	// record from outside checks it. A store refuses such a record.
	for _, bad := range []string{`{"slot":"belief"}`, `{"mode":"Commit"}`, `{"status":"active"}`, `{"scope":"global"}`, `{"provenance":{"role":"kernel "}}`} {
		r := f.get(d.CommittedID)
		if err := json.Unmarshal([]byte(bad), &r); err != nil {
			t.Fatalf("%s: %v", bad, err)
		}
		if r.Slot.Valid() && r.Mode.Valid() && r.Scope.Valid() && r.Provenance.Role.Valid() && r.Status == blackboard.StatusActive {
			t.Errorf("%s decoded to a valid record", bad)
		}
		r.ID = "beliefs:" + tr + ":99"
		b := store.Batch{Appends: []blackboard.Record{r}}
		if err := b.Check(tr, ""); !errors.Is(err, blackboard.ErrInvalidInput) {
			t.Errorf("%s: the store's check gave %v", bad, err)
		}
	}
	b := store.Batch{Appends: []blackboard.Record{{ID: "x"}}}
	if err := b.Check("", ""); !errors.Is(err, blackboard.ErrInvalidInput) {
		t.Errorf("zero-valued enums passed the store's check: %v", err)
	}
}

func TestErrorMessage(t *testing.T) {
	f := newFixture(t)
	_, err := f.planner.Commit(f.ctx, tr, "beliefs:t1:9")
	var kerr *kernel.Error
	if !errors.As(err, &kerr) || kerr.Op != "commit" || kerr.RecordID != "beliefs:t1:9" {
		t.Fatalf("%#v", err)
	}
	if msg := err.Error(); msg != "kernel: commit beliefs:t1:9 [INVALID_PROPOSAL]: invalid proposal: no such proposal" {
		t.Errorf("message %q", msg)
	}
	if kernel.CodeOf(errors.New("plain")) != "" || kernel.CodeOf(nil) != "" {
		t.Error("CodeOf of an untyped error")
	}
}

func TestTruthy(t *testing.T) {
	for _, v := range []any{nil, false, 0.0, 0, "", []any{}, map[string]any{}, blackboard.Payload{}, []string{}, json.Number("0")} {
		if jsonval.Truthy(v) {
			t.Errorf("Truthy(%#v)", v)
		}
	}
	for _, v := range []any{true, 1.0, -1, "no", []any{false}, map[string]any{"a": nil}, []string{""}, uint8(2), struct{}{}} {
		if !jsonval.Truthy(v) {
			t.Errorf("!Truthy(%#v)", v)
		}
	}
}

// TestPersistentConstraints: a constraint committed with persistent scope in
// one trace binds every other trace and shows in their views on request.
func TestPersistentConstraints(t *testing.T) {
	f := newFixture(t)
	if _, err := f.sym.CommitConstraint(f.ctx, "learner", kernel.Constraint{Name: "block_conflicted_actions", Enabled: true,
		BlocksField: "uses_conflicted_data"}, blackboard.ScopePersistent); err != nil {
		t.Fatal(err)
	}
	f.perceive(tr, "charge", blackboard.Payload{"conflict": true}, new(0.9), 0)
	f.mustPropose(tr, blackboard.Beliefs, "refund_due", belief(true, "charge"))
	// The trace's own disabled constraint of the same name does not switch
	// the persistent one off.
	if _, err := f.sym.CommitConstraint(f.ctx, tr, kernel.Constraint{Name: "block_conflicted_actions", BlocksField: "uses_conflicted_data"}, ""); err != nil {
		t.Fatal(err)
	}
	if d := f.mustPropose(tr, blackboard.Actions, "issue_refund", action("refund_due")); d.Code != reason.Blocked("block_conflicted_actions") {
		t.Errorf("action under a persistent constraint: %s", d.Code)
	}
	for _, include := range []bool{false, true} {
		v, err := f.planner.View(f.ctx, "fresh", include)
		if err != nil || v.Has(blackboard.Constraints, "block_conflicted_actions") != include {
			t.Errorf("IncludePersistent=%v: kinds %v, err %v", include, v.Committed[blackboard.Constraints], err)
		}
	}
}

// TestClosedAndCancelled: a kernel that owns its store refuses work after
// Close, and a cancelled context stores nothing.
func TestClosedAndCancelled(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(f.ctx)
	cancel()
	f.mark()
	if _, err := f.tool.Write(ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Percepts, Kind: "charge"}); !errors.Is(err, context.Canceled) {
		t.Errorf("write with a cancelled context: %v", err)
	}
	if _, err := f.planner.Commit(ctx, tr, "beliefs:t1:1"); !errors.Is(err, context.Canceled) {
		t.Errorf("commit with a cancelled context: %v", err)
	}
	f.unchanged()

	k, err := kernel.New(kernel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Handle(blackboard.RoleTool, "t").Write(f.ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Percepts, Kind: "charge"}); !errors.Is(err, blackboard.ErrClosed) {
		t.Errorf("write after Close: %v", err)
	}
}

// TestCloneKeepsRefListsApart: a clone's input and evidence refs are
// copies, and appending to one list never writes into the other.
func TestCloneKeepsRefListsApart(t *testing.T) {
	r := blackboard.Record{Provenance: blackboard.Provenance{InputRefs: []string{"a", "b"}}, EvidenceRefs: []string{"e"}}
	c := r.Clone()
	c.Provenance.InputRefs = append(c.Provenance.InputRefs, "x")
	c.Provenance.InputRefs[0] = "y"
	if c.EvidenceRefs[0] != "e" || r.Provenance.InputRefs[0] != "a" || len(c.EvidenceRefs) != 1 {
		t.Errorf("clone %v / %v, original %v", c.Provenance.InputRefs, c.EvidenceRefs, r.Provenance.InputRefs)
	}
	if e := (blackboard.Record{}).Clone(); e.Provenance.InputRefs != nil || e.EvidenceRefs != nil {
		t.Errorf("nil refs cloned as %#v, %#v", e.Provenance.InputRefs, e.EvidenceRefs)
	}
}

package kernel_test

import (
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// TestCallerCannotReachStoredState: everything the kernel hands out or takes
// in is a copy. Mutating inputs and outputs after the call changes neither
// the store nor a later decision.
func TestCallerCannotReachStoredState(t *testing.T) {
	f := newFixture(t)
	nested := map[string]any{"currency": "usd"}
	list := []any{"a", map[string]any{"b": 1}}
	deps := []string{"charge"}
	conf := 0.9
	in := blackboard.Payload{"amount": 10.0, "meta": nested, "list": list}
	p, err := f.tool.Write(f.ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Percepts, Kind: "charge", Payload: in, Confidence: &conf})
	if err != nil {
		t.Fatal(err)
	}
	bp := blackboard.Payload{"value": true, "depends_on": deps}
	refs := []string{p}
	b, err := f.planner.Submit(f.ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Beliefs, Kind: "refund_due", Payload: bp, InputRefs: refs})
	if err != nil || b.Code != reason.Committed {
		t.Fatalf("belief: %s %v", b.Code, err)
	}
	v, err := f.planner.View(f.ctx, tr, false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.planner.Get(f.ctx, b.CommittedID)
	if err != nil {
		t.Fatal(err)
	}
	found, err := f.planner.Find(f.ctx, tr, blackboard.Beliefs, "refund_due")
	if err != nil {
		t.Fatal(err)
	}
	var listed []blackboard.Record
	for r, err := range f.planner.Trace(f.ctx, tr) {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, r)
	}
	for r, err := range f.planner.List(f.ctx, blackboard.Beliefs, store.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, r)
	}
	f.mark()

	// Inputs.
	in["amount"], nested["currency"], list[0] = 1e9, "eur", "z"
	list[1].(map[string]any)["b"] = 2
	deps[0], refs[0], conf = "other", "x", 0
	bp["value"] = false
	// Outputs.
	mutate := func(r *blackboard.Record) {
		if r.Payload != nil {
			r.Payload["value"] = false
			r.Payload["amount"] = -1.0
			if m, ok := r.Payload["meta"].(map[string]any); ok {
				m["currency"] = "gbp"
			}
			if l, ok := r.Payload["depends_on"].([]any); ok && len(l) > 0 {
				l[0] = "other"
			}
		}
		if len(r.Provenance.InputRefs) > 0 {
			r.Provenance.InputRefs[0] = "x"
		}
		if len(r.EvidenceRefs) > 0 {
			r.EvidenceRefs[0] = "x"
		}
		if r.Provenance.Confidence != nil {
			*r.Provenance.Confidence = 0
		}
		r.Status = blackboard.StatusInvalidated
	}
	// (Write and Submit hand back ids: nothing of theirs to change.)
	for _, r := range append([]*blackboard.Record{&got, &found}, ptrs(listed)...) {
		mutate(r)
	}
	v.Committed[blackboard.Beliefs]["refund_due"]["value"] = false
	v.Committed[blackboard.Percepts]["charge"]["amount"] = 0.0
	f.unchanged()

	again, err := f.planner.View(f.ctx, tr, false)
	if err != nil {
		t.Fatal(err)
	}
	if pl, _ := again.Committed[blackboard.Beliefs]["refund_due"]; pl["value"] != true {
		t.Errorf("view after mutation: %v", pl)
	}
	if d := f.mustPropose(tr, blackboard.Actions, "issue_refund", action("refund_due")); d.Code != reason.Committed {
		t.Errorf("refund after mutations: %s", d.Code)
	}
}

func ptrs(rs []blackboard.Record) []*blackboard.Record {
	out := make([]*blackboard.Record, len(rs))
	for i := range rs {
		out[i] = &rs[i]
	}
	return out
}

// TestConfigIsFixedByNew: changing an ActionSpec's slice after New does not
// change what the kernel enforces.
func TestConfigIsFixedByNew(t *testing.T) {
	spec := kernel.ActionSpec{Type: "issue_refund", MinBeliefs: []string{"refund_due"}}
	f := newFixtureWith(t, kernel.Config{ActionSpecs: []kernel.ActionSpec{spec}})
	spec.MinBeliefs[0] = "never_committed"
	f.groundedBelief(tr)
	if d := f.mustPropose(tr, blackboard.Actions, "issue_refund", action("refund_due")); d.Code != reason.Committed {
		t.Errorf("refund: %s", d.Code)
	}
}

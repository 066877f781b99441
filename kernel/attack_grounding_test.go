package kernel_test

import (
	"context"
	"errors"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store/memstore"
)

// The attacks of this file are the exact-grounding routes of the third
// adversarial review (issue 36): a belief resting on a record by id, and
// kinds reserved to governance code.

// A belief computed from one observation, named by id, grounds an action
// only while that observation is the current one of its kind: a newer
// observation (the order refunded meanwhile) is not what the belief was
// computed from, however clean it is. A belief that names the percept
// kind rests on whatever is current, and a newer clean observation passes.
func TestAttackExactGrounding(t *testing.T) {
	f := newFixtureWith(t, kernel.Config{ActionSpecs: []kernel.ActionSpec{{Type: "issue_refund", MinBeliefs: []string{"refund_due"}}}})
	old := f.perceive("t", "order", blackboard.Payload{"order_id": "A1", "refunded": 0.0}, nil, 0)
	if d := f.mustPropose("t", blackboard.Beliefs, "refund_due", belief(true, old.ID)); !d.Committed() {
		t.Fatalf("belief on %s: %s", old.ID, d.Code)
	}
	newer := f.perceive("t", "order", blackboard.Payload{"order_id": "A1", "refunded": 80.0}, nil, 0)
	d := f.mustPropose("t", blackboard.Actions, "issue_refund", action("refund_due"))
	if d.Code != reason.SupersededEvidence || d.Failed != old.ID {
		t.Fatalf("refund on a belief computed from a superseded observation: %s (failed %s, %s), want SUPERSEDED_EVIDENCE on %s",
			d.Code, d.Failed, d.Detail, old.ID)
	}
	// A plan is held to the same grounding.
	if d := f.mustPropose("t", blackboard.Plans, "refund_plan", plan(step("issue_refund", "refund_due"))); d.Code != reason.SupersededEvidence {
		t.Errorf("plan on it: %s, want SUPERSEDED_EVIDENCE", d.Code)
	}
	// Resting on the newer observation by id, or on the kind, commits.
	if d := f.mustPropose("t", blackboard.Beliefs, "refund_due", belief(true, newer.ID)); !d.Committed() {
		t.Fatalf("belief on %s: %s", newer.ID, d.Code)
	}
	if d := f.mustPropose("t", blackboard.Actions, "issue_refund", action("refund_due")); !d.Committed() {
		t.Errorf("refund on the current observation: %s %s", d.Code, d.Detail)
	}
	g := newFixtureWith(t, kernel.Config{ActionSpecs: []kernel.ActionSpec{{Type: "issue_refund", MinBeliefs: []string{"refund_due"}}}})
	g.perceive("t", "order", blackboard.Payload{"order_id": "A1"}, nil, 0)
	g.mustPropose("t", blackboard.Beliefs, "refund_due", belief(true, "order"))
	g.perceive("t", "order", blackboard.Payload{"order_id": "A1"}, nil, 0)
	if d := g.mustPropose("t", blackboard.Actions, "issue_refund", action("refund_due")); !d.Committed() {
		t.Errorf("refund on a belief resting on the kind: %s, want committed", d.Code)
	}
}

// Kinds reserved to governance code (kernel.Config.Reserved): a derived
// belief to its deriver, a tool's action type to the gate's callers. No
// planner proposes one, whatever name it writes as; the Governor proposes
// one only as a writer it is reserved to; and a proposal of the kind that
// was stored before the reservation (an older release, another kernel
// over the store) cannot be committed.
func TestAttackReservedKinds(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	spec := []kernel.ActionSpec{{Type: "issue_refund", MinBeliefs: []string{"refund_due"},
		Once: &kernel.OnceKey{Fields: []string{"order_id"}}}}
	// An older kernel over the store, without reservations, stored a
	// planner's proposal of each kind.
	before, err := kernel.New(kernel.Config{Store: store, ActionSpecs: spec})
	if err != nil {
		t.Fatal(err)
	}
	order, err := before.Handle(blackboard.RoleTool, "tool:lookup").Write(ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Percepts, Kind: "order",
		Payload: blackboard.Payload{"order_id": "A1", "refundable": false}})
	if err != nil {
		t.Fatal(err)
	}
	oldBelief, err := before.Proposer(blackboard.RolePlanner, "mallory").Write(ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Beliefs, Kind: "refund_due",
		Mode: blackboard.ModePropose, Payload: belief(true, order)})
	if err != nil {
		t.Fatal(err)
	}
	refund := blackboard.Payload{"order_id": "A1", "requires_beliefs": []string{"refund_due"}}
	oldAction, err := before.Proposer(blackboard.RolePlanner, "mallory").Write(ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: "issue_refund",
		Mode: blackboard.ModePropose, Payload: refund})
	if err != nil {
		t.Fatal(err)
	}
	k, err := kernel.New(kernel.Config{Store: store, ActionSpecs: spec, Reserved: map[blackboard.Slot]map[string][]string{
		blackboard.Beliefs: {"refund_due": {"derive:lookup"}},
		blackboard.Actions: {"issue_refund": {"caller:support"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	gov := k.Governor()
	denied := func(what string, err error) {
		t.Helper()
		var kerr *kernel.Error
		if !errors.Is(err, blackboard.ErrPermission) || !errors.As(err, &kerr) || kerr.Code != reason.PermissionDenied {
			t.Errorf("%s: %v, want PERMISSION_DENIED", what, err)
		}
	}
	for _, name := range []string{"mallory", "derive:lookup", "caller:support"} {
		_, err := k.Proposer(blackboard.RolePlanner, name).Submit(ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Beliefs, Kind: "refund_due", Payload: belief(true, order)})
		denied("planner "+name+" submits the derived belief", err)
		_, err = k.Proposer(blackboard.RolePlanner, name).Write(ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Beliefs, Kind: "refund_due", Mode: blackboard.ModePropose, Payload: belief(true, order)})
		denied("planner "+name+" writes the derived belief", err)
		_, err = k.Proposer(blackboard.RolePlanner, name).Submit(ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: "issue_refund", Payload: refund})
		denied("planner "+name+" submits the tool's action", err)
	}
	_, err = gov.Submit(ctx, "mallory", kernel.Entry{TraceID: "t", Slot: blackboard.Beliefs, Kind: "refund_due", Payload: belief(true, order)}, nil)
	denied("the Governor as another writer", err)
	_, err = k.Proposer(blackboard.RolePlanner, "mallory").Commit(ctx, "t", oldBelief)
	denied("committing a stored proposal of the belief", err)
	_, err = k.Proposer(blackboard.RolePlanner, "mallory").Commit(ctx, "t", oldAction)
	denied("committing a stored proposal of the action", err)
	// The writers the kinds are reserved to.
	d, err := gov.Submit(ctx, "derive:lookup", kernel.Entry{TraceID: "t", Slot: blackboard.Beliefs, Kind: "refund_due", Payload: belief(true, order)}, nil)
	if err != nil || !d.Committed() {
		t.Fatalf("the deriver: %v %v", d.Code, err)
	}
	d, err = gov.Submit(ctx, "caller:support", kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: "issue_refund", Payload: refund}, nil)
	if err != nil || !d.Committed() {
		t.Fatalf("the gate's caller: %v %v", d.Code, err)
	}
	// The gate's commit took the order's once-key: no refused one held it.
	key, err := k.Governor().OnceKeyOf(ctx, d.CommittedID)
	if err != nil {
		t.Fatal(err)
	}
	if holder, err := k.Governor().ClaimedBy(ctx, key); err != nil || holder != d.CommittedID {
		t.Errorf("the once-key is held by %q (%v), want %s", holder, err, d.CommittedID)
	}
	for _, r := range []map[blackboard.Slot]map[string][]string{
		{blackboard.Percepts: {"order": {"tool:lookup"}}},
		{blackboard.Beliefs: {"": {"x"}}},
		{blackboard.Actions: {"issue_refund": {""}}},
	} {
		if k, err := kernel.New(kernel.Config{Reserved: r}); !errors.Is(err, blackboard.ErrInvalidInput) {
			if k != nil {
				k.Close()
			}
			t.Errorf("a bad reservation: %v, want ErrInvalidInput", err)
		}
	}
}

package invariant_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/snapshot"
	"github.com/blackboardkernel/bk/invariant"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
)

// TestCleanStore: a store written through the gate alone (lookups that
// derive, a refund, a refund approved by a person, a refusal, in two
// traces, each with its request recorded and the refunds scoped to its
// orders) has no violation.
func TestCleanStore(t *testing.T) {
	d := newDesk(t)
	d.flow("T1")
	d.flow("T2")
	for _, v := range d.check() {
		t.Errorf("violation in a clean store: %v", v)
	}
}

// TestEmptyStore: an empty store has no violation, and a closed one is
// the store's error.
func TestEmptyStore(t *testing.T) {
	st := memstore.New()
	vs, err := invariant.Check(context.Background(), st)
	if err != nil || len(vs) != 0 {
		t.Fatalf("empty store: %v %v", vs, err)
	}
	st.Close()
	if _, err := invariant.Check(context.Background(), st); err == nil {
		t.Fatal("a closed store checked without an error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := invariant.Check(ctx, memstore.New()); err == nil {
		t.Fatal("a cancelled context checked without an error")
	}
}

// TestAttackEffectWithoutAction: an effect recorded as run for an action
// that was never committed is EffectAction; so is one for an action a
// planner committed itself (no decision of the gate commits it).
func TestAttackEffectWithoutAction(t *testing.T) {
	d := newDesk(t)
	d.flow("T1")
	res := d.effectOf("T1", "issue_refund", audit.StatusSucceeded)
	expectNew(t, d, func() []invariant.Violation {
		forged := res.Clone()
		forged.Payload["effect"].(map[string]any)["action_id"] = "actions:T1:999"
		f := d.forge(forged)
		return []invariant.Violation{{Invariant: invariant.EffectAction, TraceID: "T1", RecordID: f[0].ID}}
	})
	expectNew(t, d, func() []invariant.Violation {
		// A planner's own commit of the tool's action type: a kernel
		// record with no decision record of the gate about it.
		act := d.find("T1", func(r blackboard.Record) bool {
			return r.Slot == blackboard.Actions && r.Mode == blackboard.ModeCommit && r.Kind == "issue_refund"
		})
		a := d.forge(act)[0]
		eff := res.Clone()
		eff.Payload["effect"].(map[string]any)["action_id"] = a.ID
		f := d.forge(eff)
		return []invariant.Violation{{Invariant: invariant.EffectAction, TraceID: "T1", RecordID: f[0].ID}}
	})
}

// TestAttackGroundingSuperseded: an action that ran although the order it
// rests on was looked up again before it committed is EffectGrounding.
func TestAttackGroundingSuperseded(t *testing.T) {
	d := newDesk(t)
	d.request("T1", "A1")
	d.lookup("T1", "A1")
	if res := d.refund("T1", "A1", 50); res.Outcome != audit.OutcomeExecuted {
		t.Fatalf("refund: %+v", res)
	}
	expectNew(t, d, func() []invariant.Violation {
		d.lookup("T1", "A1") // a new observation of the order
		// The same action committed again after it, with its decision
		// record and its result: it rests on the first lookup.
		act := d.find("T1", func(r blackboard.Record) bool {
			return r.Slot == blackboard.Actions && r.Mode == blackboard.ModeCommit && r.Kind == "issue_refund"
		})
		dec := d.find("T1", func(r blackboard.Record) bool {
			dr, ok := audit.Of(r)
			return ok && dr.Subject == act.ID
		})
		eff := d.effectOf("T1", "issue_refund", audit.StatusSucceeded)
		a := d.forge(act)[0]
		dec.Payload["subject"] = a.ID
		dec.Provenance.InputRefs = []string{a.ID}
		eff.Payload["effect"].(map[string]any)["action_id"] = a.ID
		d.forge(dec, eff)
		return []invariant.Violation{
			{Invariant: invariant.EffectGrounding, TraceID: "T1", RecordID: a.ID}, // the belief
			{Invariant: invariant.EffectGrounding, TraceID: "T1", RecordID: a.ID}, // the observation
		}
	})
}

// committedRefund returns the last committed issue_refund action of a
// trace.
func (d *desk) committedRefund(trace string) blackboard.Record {
	d.t.Helper()
	return d.find(trace, func(r blackboard.Record) bool {
		return r.Slot == blackboard.Actions && r.Mode == blackboard.ModeCommit && r.Kind == "issue_refund"
	})
}

// TestAttackOnceKeyHeldByPlanner: a refund's once-key held by an action
// the gate never decided (a planner's own commit of the tool's action
// type) is OnceHolder, and so is one held by a record that is not an
// action at all.
func TestAttackOnceKeyHeldByPlanner(t *testing.T) {
	d := newDesk(t)
	d.flow("T1")
	act := d.committedRefund("T1")
	expectNew(t, d, func() []invariant.Violation {
		rogue := act.Clone()
		rogue.ID = d.next("T1", blackboard.Actions)
		rogue.Payload["order_id"] = "T1-Z9"
		err := d.st.Apply(d.ctx, store.Batch{Appends: []blackboard.Record{rogue},
			Claims: []store.Claim{{Key: `["default","issue_refund","T1-Z9",1]`, RecordID: rogue.ID, Namespace: "default"}}})
		if err != nil {
			t.Fatal(err)
		}
		return []invariant.Violation{{Invariant: invariant.OnceHolder, TraceID: "T1", RecordID: rogue.ID}}
	})
	expectNew(t, d, func() []invariant.Violation {
		// The next slot of the same order taken by a percept.
		p := d.effectOf("T1", "lookup_order", audit.StatusSucceeded)
		p.ID = d.next("T1", blackboard.Percepts)
		p.Payload = blackboard.Payload{"note": "squatting"}
		err := d.st.Apply(d.ctx, store.Batch{Appends: []blackboard.Record{p},
			Claims: []store.Claim{{Key: `["default","issue_refund","T1-Z9",2]`, RecordID: p.ID, Namespace: "default"}}})
		if err != nil {
			t.Fatal(err)
		}
		return []invariant.Violation{{Invariant: invariant.OnceHolder, TraceID: "T1", RecordID: p.ID}}
	})
}

// TestAttackApprovalNotBinding: an effect under an approval of another
// digest, an effect of an action that waited for approval under none,
// and an approval that let two actions run are ApprovalBinding.
func TestAttackApprovalNotBinding(t *testing.T) {
	d := newDesk(t)
	d.flow("T1")
	res := d.effectOf("T1", "issue_refund", audit.StatusSucceeded) // the approved refund of T1-A2
	resEffect, _ := audit.EffectOf(res)
	appr := d.find("T1", func(r blackboard.Record) bool { _, ok := audit.ApprovalOf(r); return ok })
	expectNew(t, d, func() []invariant.Violation {
		a := appr.Clone()
		a.Payload["digest"] = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
		f := d.forge(a)
		eff := res.Clone()
		eff.Payload["effect"].(map[string]any)["approval"] = f[0].ID
		f = d.forge(eff)
		return []invariant.Violation{{Invariant: invariant.ApprovalBinding, TraceID: "T1", RecordID: f[0].ID}}
	})
	expectNew(t, d, func() []invariant.Violation {
		eff := res.Clone()
		delete(eff.Payload["effect"].(map[string]any), "approval")
		f := d.forge(eff)
		return []invariant.Violation{{Invariant: invariant.ApprovalBinding, TraceID: "T1", RecordID: f[0].ID}}
	})
	expectNew(t, d, func() []invariant.Violation {
		// The first refund (no approval needed) run under the second's
		// approval: an approval of another action, used twice.
		first := d.find("T1", func(r blackboard.Record) bool {
			e, ok := audit.EffectOf(r)
			return ok && e.Tool == "issue_refund" && e.Status == audit.StatusSucceeded && e.ActionID != resEffect.ActionID
		})
		first.Payload["effect"].(map[string]any)["approval"] = appr.ID
		f := d.forge(first)
		return []invariant.Violation{
			{Invariant: invariant.ApprovalBinding, TraceID: "T1", RecordID: f[0].ID}, // approves another action
			{Invariant: invariant.ApprovalBinding, TraceID: "T1", RecordID: f[0].ID}, // used by two
		}
	})
}

// TestAttackMaskedValueInClear: a masked argument's value in the clear,
// in an action's arguments or quoted in another record's text, is
// MaskedValue.
func TestAttackMaskedValueInClear(t *testing.T) {
	d := newDesk(t)
	d.flow("T1")
	expectNew(t, d, func() []invariant.Violation {
		prop := d.find("T1", func(r blackboard.Record) bool {
			return r.Slot == blackboard.Actions && r.Mode == blackboard.ModePropose && r.Kind == "lookup_order"
		})
		prop.Payload["email"] = "ann@example.com"
		f := d.forge(prop)
		return []invariant.Violation{{Invariant: invariant.MaskedValue, TraceID: "T1", RecordID: f[0].ID}}
	})
	expectNew(t, d, func() []invariant.Violation {
		// What a context compiler would record of the last round's real
		// output.
		f := d.forge(blackboard.Record{Slot: blackboard.Evidence, Mode: blackboard.ModeCommit, Kind: "compiled_context",
			Payload:    blackboard.Payload{"text": `tool lookup_order returned {"order_id": "T1-A1", "email": "ann@example.com"}`},
			Provenance: blackboard.Provenance{Role: blackboard.RoleKernel, Writer: "kernel", TraceID: "T1"},
			Status:     blackboard.StatusActive, Reason: reason.Committed, Scope: blackboard.ScopeEpisode, Namespace: "default"})
		return []invariant.Violation{{Invariant: invariant.MaskedValue, TraceID: "T1", RecordID: f[0].ID}}
	})
}

// TestAttackDerivedSource: a derived belief that names a result of
// another tool, one whose commit rests on another observation than the
// one it names, and a derived kind committed from a planner's proposal
// are DerivedSource; a derived belief that names its result exactly is
// not.
func TestAttackDerivedSource(t *testing.T) {
	d := newDesk(t)
	d.flow("T1")
	lookup := d.effectOf("T1", "lookup_order", audit.StatusSucceeded)
	refund := d.effectOf("T1", "issue_refund", audit.StatusSucceeded)
	prop := d.find("T1", func(r blackboard.Record) bool {
		return r.Slot == blackboard.Beliefs && r.Mode == blackboard.ModePropose && r.Kind == "refund_due"
	})
	twin := d.find("T1", func(r blackboard.Record) bool {
		return r.Slot == blackboard.Beliefs && r.Mode == blackboard.ModeCommit && r.Kind == "refund_due"
	})
	// derive forges a derived proposal naming src and its commit resting
	// on rests.
	derive := func(src, rests string) (blackboard.Record, blackboard.Record) {
		p := prop.Clone()
		p.Payload["depends_on"] = []any{src}
		p.Provenance.InputRefs = []string{src}
		p = d.forge(p)[0]
		c := twin.Clone()
		c.Payload["depends_on"] = []any{src}
		c.Provenance.InputRefs = []string{p.ID, rests}
		return p, d.forge(c)[0]
	}
	expectNew(t, d, func() []invariant.Violation {
		derive(lookup.ID, lookup.ID) // exact: no violation
		return nil
	})
	expectNew(t, d, func() []invariant.Violation {
		p, _ := derive(refund.ID, refund.ID)
		return []invariant.Violation{{Invariant: invariant.DerivedSource, TraceID: "T1", RecordID: p.ID}}
	})
	expectNew(t, d, func() []invariant.Violation {
		other := d.find("T1", func(r blackboard.Record) bool {
			e, ok := audit.EffectOf(r)
			return ok && e.Tool == "lookup_order" && e.Status == audit.StatusSucceeded && r.ID != lookup.ID
		})
		_, c := derive(other.ID, lookup.ID)
		return []invariant.Violation{{Invariant: invariant.DerivedSource, TraceID: "T1", RecordID: c.ID}}
	})
	expectNew(t, d, func() []invariant.Violation {
		p := prop.Clone()
		p.Provenance.Writer = "analyst"
		p = d.forge(p)[0]
		c := twin.Clone()
		c.Provenance.InputRefs = []string{p.ID, lookup.ID}
		c = d.forge(c)[0]
		return []invariant.Violation{{Invariant: invariant.DerivedSource, TraceID: "T1", RecordID: c.ID}}
	})
}

// TestAttackOnceKeyHeldForNothing: a once-key held by an action the gate
// closed before any attempt (it can never run), and one whose holder ran
// and was then retired (its slot free for a second refund), are
// OnceHolder.
func TestAttackOnceKeyHeldForNothing(t *testing.T) {
	d := newDesk(t)
	d.flow("T1")
	d.lookup("T1", "T1-A9")
	wait := d.call("T1", "issue_refund", refundArgs{OrderID: "T1-A9", Amount: 500})
	if wait.Outcome != audit.OutcomePendingApproval {
		t.Fatalf("refund: %+v", wait)
	}
	expectNew(t, d, func() []invariant.Violation {
		esc := d.effectOf("T1", "issue_refund", audit.StatusSucceeded)
		esc.Kind = audit.KindEscalated
		esc.Payload = blackboard.Payload{"effect": map[string]any{"status": audit.StatusEscalated, "tool": "issue_refund",
			"action_id": wait.ActionID, "code": "APPROVAL_DENIED"}}
		d.forge(esc)
		return []invariant.Violation{{Invariant: invariant.OnceHolder, TraceID: "T1", RecordID: wait.ActionID}}
	})
	expectNew(t, d, func() []invariant.Violation {
		ran := d.effectOf("T1", "issue_refund", audit.StatusSucceeded)
		e, _ := audit.EffectOf(ran)
		err := d.st.Apply(d.ctx, store.Batch{Invalidations: []store.Invalidation{
			{ID: e.ActionID, Status: blackboard.StatusInvalidated, Reason: reason.ApprovalDenied}}})
		if err != nil {
			t.Fatal(err)
		}
		return []invariant.Violation{{Invariant: invariant.OnceHolder, TraceID: "T1", RecordID: e.ActionID}}
	})
}

// TestAttackOutOfScope: a refund that ran for an order outside the
// trace's request, one whose decision names another principal than the
// request's, one whose decision names no request, one decided under a
// policy whose refund declares no scope, and refunds that ran in a trace holding a second request
// record are ScopeHeld.
func TestAttackOutOfScope(t *testing.T) {
	d := newDesk(t)
	d.flow("T1")
	// ran forges a run of the trace's approved refund with its arguments
	// changed by args and its decision's context by ctx: the action, the
	// gate's decision committing it (no approval needed) and its result.
	refund := d.committedRefund("T1")
	decision := d.find("T1", func(r blackboard.Record) bool {
		dr, ok := audit.Of(r)
		return ok && dr.Subject == refund.ID
	})
	result := d.effectOf("T1", "issue_refund", audit.StatusSucceeded)
	ran := func(args map[string]any, ctx map[string]any) blackboard.Record {
		act, dec, eff := refund.Clone(), decision.Clone(), result.Clone()
		for k, v := range args {
			act.Payload[k] = v
		}
		a := d.forge(act)[0]
		dec.Payload["subject"] = a.ID
		dec.Payload["outcome"] = string(audit.OutcomeCommitted)
		dec.Provenance.InputRefs = []string{a.ID}
		for k, v := range ctx {
			if v == nil {
				delete(dec.Payload["context"].(map[string]any), k)
			} else {
				dec.Payload["context"].(map[string]any)[k] = v
			}
		}
		m := eff.Payload["effect"].(map[string]any)
		m["action_id"] = a.ID
		delete(m, "approval")
		delete(m, "approver")
		d.forge(dec, eff)
		return a
	}
	expectNew(t, d, func() []invariant.Violation {
		ran(nil, nil) // the same order again, under the same request: no violation
		return nil
	})
	expectNew(t, d, func() []invariant.Violation {
		a := ran(map[string]any{"order_id": "T1-Z9"}, nil)
		return []invariant.Violation{{Invariant: invariant.ScopeHeld, TraceID: "T1", RecordID: a.ID}}
	})
	expectNew(t, d, func() []invariant.Violation {
		a := ran(nil, map[string]any{"principal": "bob"})
		return []invariant.Violation{{Invariant: invariant.ScopeHeld, TraceID: "T1", RecordID: a.ID}}
	})
	expectNew(t, d, func() []invariant.Violation {
		// A refund decided under a policy snapshot, recorded as the
		// gate records one, whose refund declares no scope at all.
		pol := d.find(audit.PolicyTrace("default"), func(r blackboard.Record) bool { return r.Kind == audit.KindPolicy })
		ap, err := audit.PolicyOf(pol)
		if err != nil {
			t.Fatal(err)
		}
		p, err := snapshot.Decode(ap)
		if err != nil {
			t.Fatal(err)
		}
		for i := range p.Tools {
			if p.Tools[i].Name == "issue_refund" {
				p.Tools[i].Scope = nil
			}
		}
		raw, _ := json.Marshal(p)
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		pol.Payload = blackboard.Payload{"hash": p.Encode().Hash, "policy": m}
		d.forge(pol)
		a := ran(nil, map[string]any{"policy": p.Encode().Hash})
		return []invariant.Violation{{Invariant: invariant.ScopeHeld, TraceID: "T1", RecordID: a.ID}}
	})
	expectNew(t, d, func() []invariant.Violation {
		// A scoped refund decided under no request.
		a := ran(nil, map[string]any{"principal": nil, "request": nil})
		return []invariant.Violation{{Invariant: invariant.ScopeHeld, TraceID: "T1", RecordID: a.ID}}
	})
	expectNew(t, d, func() []invariant.Violation {
		// A second request record, the kernel's in shape, which holds no
		// once-key: every scoped refund of the trace that ran is now
		// under two requests.
		req := d.find("T1", func(r blackboard.Record) bool {
			return r.Slot == blackboard.Evidence && r.Kind == audit.KindRequest
		})
		req.Payload["resources"] = map[string]any{"order": []any{"T1-Z9"}}
		d.forge(req)
		var want []invariant.Violation
		seen := map[string]bool{}
		for _, r := range d.records("T1") {
			if e, ok := audit.EffectOf(r); ok && e.Tool == "issue_refund" && e.Status == audit.StatusSucceeded && !seen[e.ActionID] {
				seen[e.ActionID] = true
				want = append(want, invariant.Violation{Invariant: invariant.ScopeHeld, TraceID: "T1", RecordID: e.ActionID})
			}
		}
		if len(want) < 3 {
			t.Fatalf("refunds that ran: %v", want)
		}
		return want
	})
}

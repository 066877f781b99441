package toolgate

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// callerDriven makes the desk's tools caller-driven: the gate holds them
// without an effect, as an adapter registers a framework's own tools.
func callerDriven(s *setup) {
	for i := range s.tools {
		s.tools[i].Effect = nil
	}
}

// frameworkTool is a framework's own tool, run as a call's effect: it
// counts its runs and the idempotency keys it was given.
type frameworkTool struct {
	runs []Invocation
	ctxs []Invocation // what InvocationFrom read in its context
	fail func(ctx context.Context) error
}

func (f *frameworkTool) effect(ctx context.Context, inv Invocation) (blackboard.Payload, error) {
	f.runs = append(f.runs, inv)
	if from, ok := InvocationFrom(ctx); ok {
		f.ctxs = append(f.ctxs, from)
	}
	if f.fail != nil {
		if err := f.fail(ctx); err != nil {
			return nil, err
		}
	}
	return blackboard.Payload{"refund_id": "re_" + inv.Args["order_id"].(string), "amount": inv.Args["amount"]}, nil
}

// callWith makes a refund call under a retry key with the framework's
// tool as its effect (nil: none).
func (d *desk) callWith(ctx context.Context, trace, key string, amount float64, f *frameworkTool) (Result, error) {
	args, _ := json.Marshal(map[string]any{"order_id": "A1", "amount": amount})
	c := Call{ID: key, RetryKey: key, Tool: "issue_refund", Args: args, Caller: "support", TraceID: trace, Intent: "refund"}
	if f != nil {
		c.Effect = f.effect
	}
	return d.g.Call(ctx, c)
}

func TestCallerDrivenToolIsAccepted(t *testing.T) {
	d := newDesk(t, memstoreOf(t), callerDriven)
	if !d.g.CallerDriven("issue_refund") || d.g.CallerDriven("no_such_tool") {
		t.Fatal("CallerDriven: issue_refund is held without an effect; an unknown tool is not caller-driven")
	}
	d2 := newDesk(t, memstoreOf(t))
	if d2.g.CallerDriven("issue_refund") {
		t.Fatal("a tool with its Effect is not caller-driven")
	}
}

// A call of a caller-driven tool that brings no effect is refused before
// anything is recorded or charged; with the effect it runs it, once, with
// its Invocation in the context.
func TestCallerDrivenCall(t *testing.T) {
	d := newDesk(t, memstoreOf(t), callerDriven)
	d.setEffect("lookup_order", nil)
	d.g = d.gate(Config{Tools: withLookup(d), Contracts: d.contracts})
	d.ground("t1", "A1")
	before := len(d.records())
	res, err := d.callWith(d.ctx, "t1", "k1", 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantOutcome(t, "a call without its effect", res, audit.OutcomeRefused, reason.EffectUnavailable)
	if res.Hint == "" || len(d.records()) != before {
		t.Fatalf("hint %q, %d records written, want a hint and none", res.Hint, len(d.records())-before)
	}
	f := &frameworkTool{}
	res, err = d.callWith(d.ctx, "t1", "k1", 100, f)
	if err != nil {
		t.Fatal(err)
	}
	wantOutcome(t, "a call with its effect", res, audit.OutcomeExecuted, reason.EffectSucceeded)
	if len(f.runs) != 1 || len(f.ctxs) != 1 || f.ctxs[0].Key != f.runs[0].Key || f.runs[0].Key == "" {
		t.Fatalf("runs %+v, context invocations %+v: want one run, its Invocation in its context", f.runs, f.ctxs)
	}
	if _, ok := InvocationFrom(d.ctx); ok {
		t.Fatal("InvocationFrom outside an effect")
	}
	res, err = d.callWith(d.ctx, "t1", "k1", 100, f)
	if err != nil || res.Outcome != audit.OutcomeExecuted || len(f.runs) != 1 {
		t.Fatalf("retried: %+v %v, %d runs; want the recorded result and one run", res, err, len(f.runs))
	}
}

// A call's effect runs in place of the tool's own.
func TestCallEffectReplacesTools(t *testing.T) {
	d := newDesk(t, memstoreOf(t))
	d.ground("t1", "A1")
	f := &frameworkTool{}
	if res, err := d.callWith(d.ctx, "t1", "k1", 100, f); err != nil || res.Outcome != audit.OutcomeExecuted {
		t.Fatalf("%+v %v", res, err)
	}
	if len(f.runs) != 1 || len(d.invocations("issue_refund")) != 0 {
		t.Fatalf("the call's effect ran %d times, the tool's %d; want 1 and 0", len(f.runs), len(d.invocations("issue_refund")))
	}
}

// withLookup is the desk's tools, caller-driven but for lookup_order,
// whose effect the desk runs (the tests ground a refund with it).
func withLookup(d *desk) []Tool {
	tools := deskTools(func(tool string) EffectFunc {
		if tool != "lookup_order" {
			return nil
		}
		return func(ctx context.Context, inv Invocation) (blackboard.Payload, error) { return d.effect(ctx, tool, inv) }
	})
	return tools
}

func memstoreOf(t *testing.T) store.Store { return stores[0].open(t) }

// TestAttackCallerEffectBurned: a caller-driven call approved through
// Approver.Resolve, then Execute and Recover, none with the caller's
// effect. None may run it, record a result or use its approval: each
// answers EFFECT_UNAVAILABLE, and the caller's retry under the call's key,
// with the effect, runs it once, under that approval.
func TestAttackCallerEffectBurned(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		d.g = d.gate(Config{Tools: withLookup(d), Contracts: d.contracts})
		d.ground("t1", "A1")
		f := &frameworkTool{}
		res, err := d.callWith(d.ctx, "t1", "k1", 700, f)
		if err != nil {
			t.Fatal(err)
		}
		wantOutcome(t, "the call", res, audit.OutcomePendingApproval, reason.ApprovalRequired)
		out, err := d.g.Approver("human:lead").Resolve(d.ctx, audit.Approval{TraceID: "t1", ActionID: res.ActionID, Digest: res.ArgsDigest, Decision: audit.Approved, Note: "ok"})
		if err != nil {
			t.Fatal(err)
		}
		wantOutcome(t, "Resolve", out, audit.OutcomeRefused, reason.EffectUnavailable)
		if out.ActionID != res.ActionID {
			t.Fatalf("Resolve names %q, want %q", out.ActionID, res.ActionID)
		}
		wantOutcome(t, "Execute", d.execute(res.ActionID), audit.OutcomeRefused, reason.EffectUnavailable)
		d.clock.Advance(2 * d.g.lease)
		if rs, err := d.g.Recover(d.ctx); err != nil || len(rs) != 0 {
			t.Fatalf("Recover: %+v %v, want nothing driven", rs, err)
		}
		n := 0
		for _, r := range d.records() {
			if e, ok := audit.EffectOf(r); ok && e.Tool == "issue_refund" {
				n++
			}
		}
		if n != 0 || len(f.runs) != 0 {
			t.Fatalf("%d attempts or failures recorded, %d runs, before the caller's retry; want none", n, len(f.runs))
		}
		res, err = d.callWith(d.ctx, "t1", "k1", 700, f)
		if err != nil {
			t.Fatal(err)
		}
		wantOutcome(t, "the caller's retry", res, audit.OutcomeExecuted, reason.EffectSucceeded)
		if len(f.runs) != 1 {
			t.Fatalf("the framework's tool ran %d times, want 1", len(f.runs))
		}
		ds := d.decisions(audit.Query{TraceID: "t1", Outcome: audit.OutcomeExecuted, Tool: "issue_refund"})
		if len(ds) != 1 || len(ds[0].Approvals) != 1 {
			t.Fatalf("executed decisions %+v, want one, under the approval", ds)
		}
		if res, err := d.callWith(d.ctx, "t1", "k1", 700, f); err != nil || res.Outcome != audit.OutcomeExecuted || len(f.runs) != 1 {
			t.Fatalf("again: %+v %v, %d runs", res, err, len(f.runs))
		}
	})
}

// A caller-driven tool whose attempt a crashed caller left: Recover does
// not re-drive a keyed (Idempotent) one, the caller's retry does, with the
// same idempotency key; an unkeyed one is EFFECT_UNKNOWN.
func TestCallerDrivenCrash(t *testing.T) {
	d := newDesk(t, memstoreOf(t))
	d.g = d.gate(Config{Tools: withLookup(d), Contracts: d.contracts})
	d.ground("t1", "A1")
	// The caller dies while its tool runs: its context ends, and the
	// attempt is left without a result.
	ctx, cancel := context.WithCancel(d.ctx)
	dying := &frameworkTool{fail: func(context.Context) error { cancel(); return errors.New("killed") }}
	if _, err := d.callWith(ctx, "t1", "k1", 100, dying); err == nil {
		t.Fatal("the dying call returned no error")
	}
	d.clock.Advance(2 * d.g.lease)
	if rs, err := d.g.Recover(d.ctx); err != nil || len(rs) != 0 {
		t.Fatalf("Recover: %+v %v, want the attempt left to the caller", rs, err)
	}
	f := &frameworkTool{}
	res, err := d.callWith(d.ctx, "t1", "k1", 100, f)
	if err != nil {
		t.Fatal(err)
	}
	wantOutcome(t, "the caller's retry", res, audit.OutcomeExecuted, reason.EffectSucceeded)
	if len(f.runs) != 1 || f.runs[0].Key != dying.runs[0].Key || f.runs[0].Attempt != 2 {
		t.Fatalf("re-driven %+v after %+v: want attempt 2 with the same key", f.runs, dying.runs)
	}

	// search_kb has no once-key and is not Idempotent.
	ctx, cancel = context.WithCancel(d.ctx)
	kb := Call{RetryKey: "k2", Tool: "search_kb", Args: json.RawMessage(`{"query":"refund"}`), Caller: "researcher", TraceID: "t2",
		Effect: func(context.Context, Invocation) (blackboard.Payload, error) {
			cancel()
			return nil, errors.New("killed")
		}}
	if _, err := d.g.Call(ctx, kb); err == nil {
		t.Fatal("the dying call returned no error")
	}
	d.clock.Advance(2 * d.g.lease)
	rs, err := d.g.Recover(d.ctx)
	if err != nil || len(rs) != 1 {
		t.Fatalf("Recover: %+v %v", rs, err)
	}
	wantOutcome(t, "an unkeyed attempt left", rs[0], audit.OutcomeFailed, reason.EffectUnknown)
}

// A denial needs no effect: Resolve escalates a caller-driven call as any
// other, and the caller's retry gets the denial and runs nothing.
func TestCallerDrivenDenied(t *testing.T) {
	d := newDesk(t, memstoreOf(t))
	d.g = d.gate(Config{Tools: withLookup(d), Contracts: d.contracts})
	d.ground("t1", "A1")
	f := &frameworkTool{}
	res, err := d.callWith(d.ctx, "t1", "k1", 700, f)
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.g.Approver("human:lead").Resolve(d.ctx, audit.Approval{TraceID: "t1", ActionID: res.ActionID, Digest: res.ArgsDigest, Decision: audit.Denied, Note: "no"})
	if err != nil {
		t.Fatal(err)
	}
	wantOutcome(t, "Resolve deny", out, audit.OutcomeRefused, reason.ApprovalDenied)
	if out.FallbackID == "" {
		t.Fatal("no fallback committed")
	}
	res, err = d.callWith(d.ctx, "t1", "k1", 700, f)
	if err != nil {
		t.Fatal(err)
	}
	wantOutcome(t, "the caller's retry", res, audit.OutcomeRefused, reason.ApprovalDenied)
	if len(f.runs) != 0 {
		t.Fatalf("the framework's tool ran %d times after a denial", len(f.runs))
	}
}

package toolgate

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/mask"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store/memstore"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// secretOrder is an order id the desk masks: it must never be stored.
const secretOrder = "ORD-SECRET-4111"

var testMaskKey = []byte("0123456789abcdef0123456789abcdef")

// withMasking masks order_id in lookup_order's arguments and output and
// in issue_refund's arguments, and issue_refund's output refund_id (the
// desk's refund API spells it with the order id), under one key.
func withMasking(su *setup) {
	for i := range su.tools {
		switch su.tools[i].Name {
		case "lookup_order":
			su.tools[i].Masked = []string{"order_id"}
		case "issue_refund":
			su.tools[i].Masked = []string{"order_id", "refund_id"}
		}
	}
	su.cfg.MaskKey = testMaskKey
}

// noSecret fails the test if any record of the store, in its JSON form,
// holds the secret.
func (d *desk) noSecret(t *testing.T, secret string) {
	t.Helper()
	for _, r := range d.records() {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), secret) {
			t.Errorf("record %s (%s %s) holds the masked value: %s", r.ID, r.Slot, r.Kind, b)
		}
	}
}

// A model sends a masked order id through every path that writes: a
// lookup, a refund that runs, one that waits for approval and is resumed,
// a refusal of arguments that fail the schema and of arguments that do
// not parse. No record holds the value; the effects and the caller get
// it.
func TestAttackMaskedValueReachesStore(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		d.ground("t", secretOrder)
		lookups := d.invocations("lookup_order")
		if len(lookups) != 1 || lookups[0].Args["order_id"] != secretOrder {
			t.Fatalf("lookup effect got %+v, want the real order id", lookups)
		}
		orders := d.kinds(blackboard.Percepts, "order")
		if len(orders) != 1 || !mask.Masked(orders[0].Payload["order_id"]) {
			t.Fatalf("order percept %+v, want its order_id masked", orders)
		}
		small := d.refund("t", secretOrder, 100)
		wantOutcome(t, "small refund", small, audit.OutcomeExecuted, reason.EffectSucceeded)
		if got := d.invocations("issue_refund"); len(got) != 1 || got[0].Args["order_id"] != secretOrder {
			t.Fatalf("refund effect got %+v, want the real order id", got)
		}
		d.ground("t", secretOrder) // the first refund used the observation
		big := d.call("t", "support", "refund", "issue_refund", `{"order_id":"`+secretOrder+`","amount":600}`)
		wantOutcome(t, "big refund", big, audit.OutcomePendingApproval, reason.ApprovalRequired)
		if big.Args["order_id"] != secretOrder {
			t.Errorf("pending Result.Args %v, want the caller's real values", big.Args)
		}
		d.approve("t", big.ActionID, "alice", time.Hour)
		given, _ := json.Marshal(map[string]any(big.Args))
		res, err := d.g.Resume(d.ctx, "t", big.ActionID, given)
		if err != nil {
			t.Fatal(err)
		}
		wantOutcome(t, "resumed refund", res, audit.OutcomeExecuted, reason.EffectSucceeded)
		if res.Output["refund_id"] != "re_"+secretOrder {
			t.Errorf("resumed output %v, want the effect's real output", res.Output)
		}
		bad := d.call("t", "support", "refund", "issue_refund", `{"order_id":"`+secretOrder+`","amount":"lots"}`)
		wantOutcome(t, "bad amount", bad, audit.OutcomeRefused, reason.InvalidArguments)
		broken := d.call("t", "support", "refund", "issue_refund", `{"order_id":"`+secretOrder+`",`)
		wantOutcome(t, "unparsed", broken, audit.OutcomeRefused, reason.InvalidArguments)
		denied := d.call("t", "researcher", "", "issue_refund", `{"order_id":"`+secretOrder+`","amount":1}`)
		wantOutcome(t, "not permitted", denied, audit.OutcomeRefused, reason.ToolNotPermitted)
		// A loop guard's refusal keeps the repeated call's digest: keyed.
		lookup := Call{Tool: "lookup_order", Args: json.RawMessage(`{"order_id":"` + secretOrder + `"}`), Caller: "support", TraceID: "loop", Guard: newGuard(t)}
		var last Result
		for range 3 {
			if last, err = d.g.Call(d.ctx, lookup); err != nil {
				t.Fatal(err)
			}
		}
		wantOutcome(t, "third identical lookup", last, audit.OutcomeRefused, reason.LoopDetected)
		loops := d.decisions(audit.Query{TraceID: "loop", Outcome: audit.OutcomeRefused})
		if len(loops) != 1 || !strings.Contains(mustJSON(t, loops[0]), mask.Prefix) {
			t.Errorf("loop refusal %+v, want its digest keyed", loops)
		}
		plain, _ := budget.Digest([]byte(`{"order_id":"` + secretOrder + `"}`))
		d.noSecret(t, secretOrder)
		d.noSecret(t, strings.TrimPrefix(plain, "sha256:"))
	}, withMasking)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A changed masked argument does not pass an approval of the committed
// one (its hash, and so the digest, differs), nor does the hash itself
// given back: only the real value runs the effect.
func TestMaskedApprovalBindsRealValue(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t", secretOrder, 700)
		if wait.ArgsDigest != d.digest(wait.ActionID) {
			t.Fatalf("Result.ArgsDigest %s is not the stored action's digest %s", wait.ArgsDigest, d.digest(wait.ActionID))
		}
		d.approve("t", wait.ActionID, "alice", time.Hour)
		changed, _ := json.Marshal(map[string]any{"order_id": "ORD-OTHER", "amount": 700})
		res, err := d.g.Resume(d.ctx, "t", wait.ActionID, changed)
		if err != nil {
			t.Fatal(err)
		}
		wantOutcome(t, "changed masked argument", res, audit.OutcomeRefused, reason.ApprovalMismatch)
		act, err := d.store.Get(d.ctx, wait.ActionID)
		if err != nil {
			t.Fatal(err)
		}
		hashed, _ := json.Marshal(map[string]any{"order_id": act.Payload["order_id"], "amount": 700})
		res, err = d.g.Resume(d.ctx, "t", wait.ActionID, hashed)
		if err != nil {
			t.Fatal(err)
		}
		wantOutcome(t, "the stored hash given back", res, audit.OutcomeRefused, reason.MaskedUnavailable)
		if n := len(d.invocations("issue_refund")); n != 0 {
			t.Fatalf("the refund ran %d times with a changed or hashed order id", n)
		}
		real, _ := json.Marshal(map[string]any{"order_id": secretOrder, "amount": 700})
		res, err = d.g.Resume(d.ctx, "t", wait.ActionID, real)
		if err != nil {
			t.Fatal(err)
		}
		wantOutcome(t, "real arguments", res, audit.OutcomeExecuted, reason.EffectSucceeded)
		if got := d.invocations("issue_refund"); len(got) != 1 || got[0].Args["order_id"] != secretOrder {
			t.Fatalf("refund effect got %+v", got)
		}
	}, withMasking)
}

// Equal masked values give equal hashes: a repeated refund of one order
// is a duplicate under its once-key; another order's is not.
func TestMaskedOnceKey(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		d.ground("t", secretOrder)
		wantOutcome(t, "first", d.refund("t", secretOrder, 100), audit.OutcomeExecuted, reason.EffectSucceeded)
		d.ground("t", secretOrder) // fresh grounding: the first refund used it
		wantOutcome(t, "repeat", d.refund("t", secretOrder, 100), audit.OutcomeRefused, reason.DuplicateAction)
		d.ground("u", "ORD-2")
		wantOutcome(t, "other order", d.refund("u", "ORD-2", 100), audit.OutcomeExecuted, reason.EffectSucceeded)
		d.noSecret(t, secretOrder)
	}, withMasking, withOnceKey)
}

// A binding compares the masked argument with the masked percept field:
// the grounded order passes, another order is refused, and so is a
// masked argument against an unmasked observation (fail closed).
func TestMaskedBinding(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		d.ground("t", secretOrder)
		wantOutcome(t, "other order", d.refund("t", "ORD-OTHER", 100), audit.OutcomeRefused, reason.ArgumentNotBound)
		wantOutcome(t, "grounded order", d.refund("t", secretOrder, 100), audit.OutcomeExecuted, reason.EffectSucceeded)
	}, withMasking)
	onStores(t, func(t *testing.T, d *desk) {
		d.ground("t", "ORD-PLAIN")
		wantOutcome(t, "masked against plain", d.refund("t", "ORD-PLAIN", 100), audit.OutcomeRefused, reason.ArgumentNotBound)
	}, func(su *setup) {
		for i := range su.tools {
			if su.tools[i].Name == "issue_refund" {
				su.tools[i].Masked = []string{"order_id"} // lookup_order's output is not masked
			}
		}
		su.cfg.MaskKey = testMaskKey
	})
}

// An observer masks a percept field with package mask and the gate's key:
// what the gate stores for the same value, equal values giving equal
// masks and different ones different masks.
func TestObserverMask(t *testing.T) {
	d := newDesk(t, memstore.New(), withMasking)
	m, err := mask.Hash(testMaskKey, secretOrder)
	if err != nil || !mask.Masked(m) {
		t.Fatalf("mask.Hash: %q %v", m, err)
	}
	d.ground("t", secretOrder)
	if got := d.kinds(blackboard.Percepts, "order")[0].Payload["order_id"]; got != m {
		t.Errorf("stored %v, mask.Hash gives %v", got, m)
	}
	if again, _ := mask.Hash(testMaskKey, secretOrder); again != m {
		t.Error("one value gives two masks")
	}
	if other, _ := mask.Hash(testMaskKey, "ORD-2"); other == m {
		t.Error("two values give one mask")
	}

	// An observer's percept, its order id masked with the gate's key,
	// grounds a refund of that order; the plain order id does not.
	observe := func(trace string, orderID any) {
		t.Helper()
		if _, err := d.k.Handle(blackboard.RoleTool, "crm").Write(d.ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: "order",
			Payload: blackboard.Payload{"order_id": orderID, "amount": 900.0}}); err != nil {
			t.Fatal(err)
		}
		dec, err := d.analyst.Submit(d.ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Beliefs, Kind: "refund_due",
			Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}})
		if err != nil || !dec.Committed() {
			t.Fatalf("belief refund_due: %v %v", dec.Code, err)
		}
	}
	observe("observed", m)
	wantOutcome(t, "observed masked order", d.refund("observed", secretOrder, 100), audit.OutcomeExecuted, reason.EffectSucceeded)
	d.unchecked("an observer records the order id in the clear, to show it does not bind")
	observe("plain", secretOrder)
	wantOutcome(t, "observed plain order", d.refund("plain", secretOrder, 100), audit.OutcomeRefused, reason.ArgumentNotBound)
}

// New refuses a tool that masks a field without a mask key, a short key,
// and an order binding on a masked argument.
func TestMaskedNewRefuses(t *testing.T) {
	ctx := context.Background()
	tools := deskTools(func(string) EffectFunc {
		return func(context.Context, Invocation) (blackboard.Payload, error) { return nil, nil }
	})
	tools[1].Masked = []string{"order_id"}
	cfg := func(key []byte) Config {
		return Config{
			Kernel:    kernel.Config{BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}}},
			Tools:     tools,
			Contracts: map[string][]string{"support": {"lookup_order", "issue_refund"}},
			MaskKey:   key,
		}
	}
	if _, err := New(ctx, cfg(nil)); !errors.Is(err, blackboard.ErrInvalidInput) {
		t.Errorf("no key: %v, want blackboard.ErrInvalidInput", err)
	}
	if _, err := New(ctx, cfg([]byte("short"))); !errors.Is(err, blackboard.ErrInvalidInput) {
		t.Errorf("short key: %v, want blackboard.ErrInvalidInput", err)
	}
	tools[1].Masked = []string{"amount"} // bound at_most
	if _, err := New(ctx, cfg(testMaskKey)); !errors.Is(err, blackboard.ErrInvalidInput) {
		t.Errorf("at_most on a masked argument: %v, want blackboard.ErrInvalidInput", err)
	}
	tools[1].Masked = []string{"order_id"}
	g, err := New(ctx, cfg(testMaskKey))
	if err != nil {
		t.Fatalf("with a key: %v", err)
	}
	g.Close()
}

// The store holds only hashes, so an effect that must start after the
// call's process is gone cannot get the real value: Execute after an
// approval runs nothing and records nothing (MASKED_UNAVAILABLE; nor does
// Recover), and Resume with the real arguments still can, and an attempt a crash left is EFFECT_UNKNOWN
// rather than re-driven with a hash, although the tool is idempotent.
func TestMaskedAfterCrashFailsClosed(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t", secretOrder, 700)
		d.approve("t", wait.ActionID, "alice", time.Hour)
		before := len(d.records())
		wantOutcome(t, "Execute without the arguments", d.execute(wait.ActionID), audit.OutcomeRefused, reason.MaskedUnavailable)
		d.clock.Advance(2 * defaultLease) // old enough for Recover to drive it
		got, err := d.g.Recover(d.ctx)
		if err != nil || len(got) != 1 || got[0].Code != reason.MaskedUnavailable {
			t.Fatalf("Recover: %+v %v, want the action left MASKED_UNAVAILABLE", got, err)
		}
		if after := len(d.records()); after != before {
			t.Errorf("%d records written by Execute and Recover without the real values, want none", after-before)
		}
		if n := len(d.invocations("issue_refund")); n != 0 {
			t.Fatalf("ran %d times with a hash", n)
		}
		real, _ := json.Marshal(map[string]any{"order_id": secretOrder, "amount": 700})
		res, err := d.g.Resume(d.ctx, "t", wait.ActionID, real)
		if err != nil {
			t.Fatal(err)
		}
		wantOutcome(t, "Resume with them", res, audit.OutcomeExecuted, reason.EffectSucceeded)
	}, withMasking)
	onStores(t, func(t *testing.T, d *desk) {
		d.ground("t", secretOrder)
		ctx, cancel := context.WithCancel(d.ctx)
		d.setEffect("issue_refund", func(context.Context, Invocation) (blackboard.Payload, error) {
			cancel() // the process dies during the effect
			return nil, Retryable(errors.New("connection reset"))
		})
		args, _ := json.Marshal(map[string]any{"order_id": secretOrder, "amount": 100})
		res, err := d.g.Call(ctx, Call{Tool: "issue_refund", Args: args, Caller: "support", TraceID: "t"})
		if err == nil || res.ActionID == "" {
			t.Fatalf("crashed call: %+v %v", res, err)
		}
		d.setEffect("issue_refund", nil)
		d.clock.Advance(2 * defaultLease)
		wantOutcome(t, "re-drive without the real value", d.execute(res.ActionID), audit.OutcomeFailed, reason.EffectUnknown)
		if n := len(d.invocations("issue_refund")); n != 1 {
			t.Fatalf("effect started %d times, want 1", n)
		}
		d.noSecret(t, secretOrder)
	}, withMasking)
}

// No span attribute or event of the gate or its kernel holds a masked
// value.
func TestMaskedNotInSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	d := newDesk(t, memstore.New(), withMasking, func(su *setup) {
		su.cfg.Kernel.TracerProvider = tp
	})
	wait := d.pendingRefund("t", secretOrder, 700)
	d.approve("t", wait.ActionID, "alice", time.Hour)
	given, _ := json.Marshal(map[string]any(wait.Args))
	if _, err := d.g.Resume(d.ctx, "t", wait.ActionID, given); err != nil {
		t.Fatal(err)
	}
	d.refund("t", "ORD-OTHER", 1)
	spans := rec.Ended()
	if len(spans) < 5 {
		t.Fatalf("%d spans recorded", len(spans))
	}
	for _, s := range spans {
		for _, a := range s.Attributes() {
			if strings.Contains(a.Value.String(), secretOrder) {
				t.Errorf("span %s attribute %s holds the masked value", s.Name(), a.Key)
			}
		}
		for _, ev := range s.Events() {
			for _, a := range ev.Attributes {
				if strings.Contains(a.Value.String(), secretOrder) {
					t.Errorf("span %s event %s attribute %s holds the masked value", s.Name(), ev.Name, a.Key)
				}
			}
		}
		if strings.Contains(s.Status().Description, secretOrder) {
			t.Errorf("span %s status holds the masked value", s.Name())
		}
	}
}

// A call repeated under its retry key after its approval runs with the
// real values it carries (the store has only their hashes).
func TestMaskedRetryKeyRunsWithRealValues(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		d.ground("t", secretOrder)
		call := Call{Tool: "issue_refund", RetryKey: "k1", Args: json.RawMessage(`{"order_id":"` + secretOrder + `","amount":700}`), Caller: "support", TraceID: "t"}
		first, err := d.g.Call(d.ctx, call)
		if err != nil {
			t.Fatal(err)
		}
		wantOutcome(t, "first", first, audit.OutcomePendingApproval, reason.ApprovalRequired)
		d.approve("t", first.ActionID, "alice", time.Hour)
		again, err := d.g.Call(d.ctx, call)
		if err != nil {
			t.Fatal(err)
		}
		wantOutcome(t, "repeated", again, audit.OutcomeExecuted, reason.EffectSucceeded)
		if got := d.invocations("issue_refund"); len(got) != 1 || got[0].Args["order_id"] != secretOrder {
			t.Fatalf("refund effect got %+v", got)
		}
		d.noSecret(t, secretOrder)
	}, withMasking)
}

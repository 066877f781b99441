package toolgate

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/kernelhook"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store/memstore"
)

// withIntents configures the desk's intents.
func withIntents(su *setup) {
	su.intents = map[string][]string{
		"refund":   {"lookup_order", "issue_refund"},
		"question": {"lookup_order", "search_kb"},
	}
}

// refusedBeforeKernel checks a refusal the gate made before the kernel's
// pipeline: its code, a hint, its decision record, and that it stored
// nothing else.
func refusedBeforeKernel(t *testing.T, d *desk, what string, c Call, code reason.Code, hintHas string) Result {
	t.Helper()
	before := len(d.records())
	res, err := d.g.Call(d.ctx, c)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	wantOutcome(t, what, res, audit.OutcomeRefused, code)
	if res.RootCause.Code != code || res.RootCause.Detail == "" || !strings.Contains(res.Hint, hintHas) {
		t.Errorf("%s: root %+v hint %q, want root %s and a hint with %q", what, res.RootCause, res.Hint, code, hintHas)
	}
	after := d.records()
	if len(after) != before+1 {
		t.Fatalf("%s stored %d records, want its decision record only", what, len(after)-before)
	}
	var dr *audit.Entry
	for r := range audit.List(d.ctx, d.g.Kernel().Reader(), audit.Query{TraceID: c.TraceID}) {
		if r.ID == res.DecisionID {
			dr = &r
		}
	}
	if dr == nil || dr.Outcome != audit.OutcomeRefused || dr.Code != code || dr.Context["tool"] != recordedTool(c.Tool) || dr.Context["caller"] != c.Caller ||
		c.ID != "" && dr.Context["call_id"] != c.ID {
		t.Errorf("%s: decision record %+v", what, dr)
	}
	return res
}

func TestRoleContract(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		d.ground("t", "A1")
		refusedBeforeKernel(t, d, "support searches the knowledge base",
			Call{ID: "c1", Tool: "search_kb", Args: json.RawMessage(`{"query":"refund policy"}`), Caller: "support", TraceID: "t"},
			reason.ToolNotPermitted, "not available to you")
		refusedBeforeKernel(t, d, "researcher refunds",
			Call{ID: "c2", Tool: "issue_refund", Args: json.RawMessage(`{"order_id":"A1","amount":10}`), Caller: "researcher", TraceID: "t"},
			reason.ToolNotPermitted, "not available to you")
		refusedBeforeKernel(t, d, "a caller with no contract",
			Call{Tool: "lookup_order", Args: json.RawMessage(`{"order_id":"A1"}`), Caller: "intruder", TraceID: "t"},
			reason.ToolNotPermitted, "not available to you")
		if n := len(d.invocations("issue_refund")) + len(d.invocations("search_kb")); n != 0 {
			t.Errorf("%d effects ran", n)
		}
		if res := d.call("t", "researcher", "", "search_kb", `{"query":"refund policy"}`); res.Outcome != audit.OutcomeExecuted {
			t.Errorf("researcher searches: %+v", res)
		}
		// Past the gate, a planner as the researcher's writer cannot
		// propose the refund either: the gate reserves a tool's action
		// type to the callers whose contracts list it.
		dec, err := d.k.Proposer(blackboard.RolePlanner, audit.CallerWriter("researcher")).Submit(d.ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: "issue_refund",
			Payload: blackboard.Payload{"order_id": "A1", "amount": 10.0, "requires_beliefs": []string{"refund_due"}}})
		if !errors.Is(err, blackboard.ErrPermission) || dec.Committed() {
			t.Errorf("the kernel alone: %v %v, want PERMISSION_DENIED (the action type is the gate's)", dec.Code, err)
		}
	})
}

func TestIntent(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		d.ground("t", "A1")
		refund := json.RawMessage(`{"order_id":"A1","amount":10}`)
		refusedBeforeKernel(t, d, "refund for a question",
			Call{Tool: "issue_refund", Args: refund, Caller: "support", TraceID: "t", Intent: "question"},
			reason.ToolNotForIntent, "does not serve")
		refusedBeforeKernel(t, d, "no intent",
			Call{Tool: "issue_refund", Args: refund, Caller: "support", TraceID: "t"},
			reason.ToolNotForIntent, "does not serve")
		refusedBeforeKernel(t, d, "unknown intent",
			Call{Tool: "issue_refund", Args: refund, Caller: "support", TraceID: "t", Intent: "anything"},
			reason.ToolNotForIntent, "does not serve")
		// The caller check comes first: a tool outside the contract is
		// TOOL_NOT_PERMITTED whatever the intent.
		refusedBeforeKernel(t, d, "search for a question by support",
			Call{Tool: "search_kb", Args: json.RawMessage(`{"query":"x"}`), Caller: "support", TraceID: "t", Intent: "question"},
			reason.ToolNotPermitted, "not available")
		if n := len(d.invocations("issue_refund")); n != 0 {
			t.Errorf("%d refunds ran", n)
		}
		if res := d.call("t", "support", "refund", "issue_refund", string(refund)); res.Outcome != audit.OutcomeExecuted {
			t.Errorf("refund for a refund: %+v", res)
		}
	}, withIntents)
}

func TestUnknownTool(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		refusedBeforeKernel(t, d, "hallucinated tool",
			Call{ID: "c9", Tool: "delete_account", Args: json.RawMessage(`{}`), Caller: "support", TraceID: "t"},
			reason.ToolUnknown, "Call only the tools")
		refusedBeforeKernel(t, d, "no tool name", Call{Caller: "support", TraceID: "t"}, reason.ToolUnknown, "Call only the tools")
		// Whatever the model makes up is recorded escaped, made to fit.
		res := refusedBeforeKernel(t, d, "a long name that is not UTF-8",
			Call{Tool: strings.Repeat("x", 1000) + "\xff", Args: json.RawMessage(`{"a":1}`), Caller: "support", TraceID: "t"},
			reason.ToolUnknown, "Call only the tools")
		recs := d.decisions(audit.Query{TraceID: "t", Outcome: audit.OutcomeRefused})
		if last := recs[len(recs)-1]; last.ID != res.DecisionID || len(last.Kind) > 300 || last.Context["args_raw"] != `{"a":1}` {
			t.Errorf("record %+v", last)
		}
	})
}

func TestInvalidArguments(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		d.ground("t", "A1")
		for _, tc := range []struct {
			name, args, field string
		}{
			{"not JSON", `{"order_id":`, ""},
			{"not an object", `["A1", 10]`, ""},
			{"two values", `{} {}`, ""},
			{"missing amount", `{"order_id":"A1"}`, "amount"},
			{"amount as a string", `{"order_id":"A1","amount":"ten"}`, "amount"},
			{"order id as a number", `{"order_id":7,"amount":10}`, "order_id"},
			{"reason outside its enum", `{"order_id":"A1","amount":10,"reason":"whim"}`, "reason"},
			{"undeclared argument", `{"order_id":"A1","amount":10,"note":"x"}`, "note"},
			// The model may not choose the action's grounding, type or a
			// flag the kernel derives.
			{"its own grounding", `{"order_id":"A1","amount":10,"requires_beliefs":[]}`, "requires_beliefs"},
			{"its own type", `{"order_id":"A1","amount":10,"type":"lookup_order"}`, "type"},
			{"a derived flag", `{"order_id":"A1","amount":10,"uses_stale_data":false}`, "uses_stale_data"},
		} {
			res := refusedBeforeKernel(t, d, tc.name,
				Call{Tool: "issue_refund", Args: json.RawMessage(tc.args), Caller: "support", TraceID: "t"},
				reason.InvalidArguments, "call issue_refund again")
			if tc.field != "" && !strings.Contains(res.Hint, `"`+tc.field+`"`) {
				t.Errorf("%s: hint %q does not name %s", tc.name, res.Hint, tc.field)
			}
		}
		// No arguments at all is an empty object: fine for a tool without
		// required ones, missing order_id here.
		res := refusedBeforeKernel(t, d, "empty arguments", Call{Tool: "lookup_order", Caller: "support", TraceID: "t"},
			reason.InvalidArguments, `"order_id"`)
		if !strings.Contains(res.RootCause.Detail, "order_id") {
			t.Errorf("root cause %+v", res.RootCause)
		}
		if n := len(d.invocations("issue_refund")); n != 0 {
			t.Errorf("%d refunds ran", n)
		}
		// Without the schema check the kernel would commit a refund with
		// no amount (through the gate's own caller writer, the only one it
		// admits for a tool's action): it gates evidence, not argument
		// shapes.
		dec, err := d.k.Governor().Submit(d.ctx, audit.CallerWriter("support"), kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: "issue_refund",
			Payload: blackboard.Payload{"order_id": "A1", "requires_beliefs": []string{"refund_due"}}}, nil)
		if err != nil || !dec.Committed() {
			t.Errorf("the kernel alone: %v %v, want the malformed refund committed", dec.Code, err)
		}
	})
}

func TestKernelRefusals(t *testing.T) {
	t.Run("stale evidence", func(t *testing.T) {
		onStores(t, func(t *testing.T, d *desk) {
			d.ground("t", "A1")
			// The order system now reports the order stale.
			d.setEffect("lookup_order", func(_ context.Context, inv Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"order_id": inv.Args["order_id"], "amount": 900.0, "stale": true}, nil
			})
			if res := d.call("t", "support", "", "lookup_order", `{"order_id":"A1"}`); res.Outcome != audit.OutcomeExecuted {
				t.Fatalf("second lookup: %+v", res)
			}
			before := len(d.records())
			res := d.refund("t", "A1", 10)
			wantOutcome(t, "refund on a stale order", res, audit.OutcomeRefused, reason.StaleEvidence)
			stale := d.kinds(blackboard.Percepts, "order")[1]
			if res.RootCause.Code != reason.StaleEvidence || res.RootCause.Record != stale.ID {
				t.Errorf("root cause %+v, want STALE_EVIDENCE on %s", res.RootCause, stale.ID)
			}
			if !strings.Contains(res.Hint, "Call lookup_order again") {
				t.Errorf("hint %q", res.Hint)
			}
			if n := len(d.invocations("issue_refund")); n != 0 || d.committedActions("issue_refund") != 0 {
				t.Errorf("%d refunds ran, %d committed", n, d.committedActions("issue_refund"))
			}
			// The kernel stores the refused proposal and its decision record,
			// nothing else: no attempt, no result.
			if got := len(d.records()) - before; got != 2 {
				t.Errorf("the refusal stored %d records, want the proposal and its decision record", got)
			}
			if dr := d.decisions(audit.Query{TraceID: "t", Tool: "issue_refund", Outcome: audit.OutcomeRefused}); len(dr) != 1 || dr[0].Code != reason.StaleEvidence || dr[0].ID != res.DecisionID {
				t.Errorf("decision records %+v", dr)
			}
		})
	})
	t.Run("expired result", func(t *testing.T) {
		onStores(t, func(t *testing.T, d *desk) {
			d.ground("t", "A1")
			d.clock.Advance(2 * time.Hour)
			res := d.refund("t", "A1", 10)
			wantOutcome(t, "refund on an expired order", res, audit.OutcomeRefused, reason.StaleEvidence)
			if !strings.Contains(res.Hint, "Call lookup_order again") {
				t.Errorf("hint %q", res.Hint)
			}
			// Refreshing the order is what the hint asks; then it goes through.
			if r := d.call("t", "support", "", "lookup_order", `{"order_id":"A1"}`); r.Outcome != audit.OutcomeExecuted {
				t.Fatalf("refresh: %+v", r)
			}
			if _, err := d.analyst.Submit(d.ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Beliefs, Kind: "refund_due",
				Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}}); err != nil {
				t.Fatal(err)
			}
			wantOutcome(t, "refund after the refresh", d.refund("t", "A1", 10), audit.OutcomeExecuted, reason.EffectSucceeded)
		}, func(su *setup) { su.tools[0].ResultTTL = time.Hour })
	})
	t.Run("no belief", func(t *testing.T) {
		onStores(t, func(t *testing.T, d *desk) {
			res := d.refund("t", "A1", 10)
			wantOutcome(t, "refund without grounds", res, audit.OutcomeRefused, reason.NoCommittedBelief)
			if !strings.Contains(res.Hint, "not established") {
				t.Errorf("hint %q", res.Hint)
			}
		})
	})
	t.Run("duplicate", func(t *testing.T) {
		onStores(t, func(t *testing.T, d *desk) {
			d.ground("t", "A1")
			wantOutcome(t, "first refund", d.refund("t", "A1", 10), audit.OutcomeExecuted, reason.EffectSucceeded)
			res := d.refund("t", "A1", 10)
			wantOutcome(t, "second refund", res, audit.OutcomeRefused, reason.DuplicateAction)
			if res.Hint != "This action was already taken. Do not retry it." {
				t.Errorf("hint %q, want the executed holder's", res.Hint)
			}
			if n := len(d.invocations("issue_refund")); n != 1 {
				t.Errorf("%d refunds ran, want 1", n)
			}
		})
	})
}

func TestSurface(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		names := func(caller, trace, intent string) []string {
			t.Helper()
			specs, err := d.g.Surface(d.ctx, caller, trace, intent)
			if err != nil {
				t.Fatalf("Surface(%s, %s, %s): %v", caller, trace, intent, err)
			}
			out := []string{}
			for _, s := range specs {
				out = append(out, s.Name)
			}
			return out
		}
		check := func(what string, got []string, want ...string) {
			t.Helper()
			if !slices.Equal(got, append([]string{}, want...)) {
				t.Errorf("%s: surfaced %v, want %v", what, got, want)
			}
		}
		check("support before the order is known", names("support", "t", "refund"), "lookup_order")
		check("a question", names("support", "t", "question"), "lookup_order")
		check("no intent", names("support", "t", ""))
		check("researcher", names("researcher", "t", "question"), "search_kb")
		check("researcher asked to refund", names("researcher", "t", "refund"))
		// Surfacing is a courtesy: the refund the model was not shown is
		// still refused when called.
		wantOutcome(t, "refund not surfaced", d.refund("t", "A1", 10), audit.OutcomeRefused, reason.NoCommittedBelief)
		d.ground("t", "A1")
		check("support once refund_due holds", names("support", "t", "refund"), "lookup_order", "issue_refund")
		check("another trace", names("support", "t2", "refund"), "lookup_order")
		// A false belief does not surface the tool.
		if _, err := d.analyst.Submit(d.ctx, kernel.Entry{TraceID: "t3", Slot: blackboard.Beliefs, Kind: "refund_due",
			Payload: blackboard.Payload{"value": false, "depends_on": []string{"order"}}}); err != nil {
			t.Fatal(err)
		}
		check("refund_due false", names("support", "t3", "refund"), "lookup_order")
		specs, _ := d.g.Surface(d.ctx, "support", "t", "refund")
		if specs[1].Description != "Refund an order." || !json.Valid(specs[1].Parameters) || !strings.Contains(string(specs[1].Parameters), "amount") {
			t.Errorf("spec %+v", specs[1])
		}
		if _, err := d.g.Surface(d.ctx, "intruder", "t", "refund"); !errors.Is(err, blackboard.ErrInvalidInput) {
			t.Errorf("unknown caller: %v", err)
		}
		if _, err := d.g.Surface(d.ctx, "support", "t", "poetry"); !errors.Is(err, blackboard.ErrInvalidInput) {
			t.Errorf("unknown intent: %v", err)
		}
		if _, err := d.g.Surface(d.ctx, "support", "", "refund"); !errors.Is(err, blackboard.ErrInvalidInput) {
			t.Errorf("no trace: %v", err)
		}
	}, withIntents)
}

func TestSurfaceWithoutIntents(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		specs, err := d.g.Surface(d.ctx, "support", "t", "whatever")
		if err != nil || len(specs) != 1 || specs[0].Name != "lookup_order" {
			t.Errorf("Surface: %v %v", specs, err)
		}
		all := d.g.Tools()
		if len(all) != 3 || all[2].Name != "search_kb" || !json.Valid(all[2].Parameters) {
			t.Errorf("Tools: %+v", all)
		}
	})
}

func TestCallErrors(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		if _, err := d.g.Call(d.ctx, Call{Tool: "lookup_order", Caller: "support"}); !errors.Is(err, blackboard.ErrInvalidInput) {
			t.Errorf("no trace: %v", err)
		}
		ctx, cancel := context.WithCancel(d.ctx)
		cancel()
		if _, err := d.g.Call(ctx, Call{Tool: "lookup_order", Caller: "support", TraceID: "t", Args: json.RawMessage(`{"order_id":"A1"}`)}); !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled: %v", err)
		}
		if len(d.records()) != 0 {
			t.Error("a call that could not be made stored records")
		}
	})
}

func TestNewChecks(t *testing.T) {
	effect := func(context.Context, Invocation) (blackboard.Payload, error) { return nil, nil }
	lookup := Tool{Unscoped: true, Name: "lookup_order", Parameters: json.RawMessage(orderSchema), Result: "order", Effect: effect}
	refund := Tool{Unscoped: true, Name: "issue_refund", Parameters: json.RawMessage(refundSchema), Requires: []string{"refund_due"}, Bindings: orderBindings, Effect: effect}
	withBindings := func(t Tool, unbound bool, b ...Binding) Tool {
		t.Bindings, t.Unbound = b, unbound
		return t
	}
	fallback := []kernel.ActionSpec{{Type: "call_a_human", SafeFallback: true}}
	refundDue := []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}}
	for _, tc := range []struct {
		name string
		cfg  Config
		want error
	}{
		{"fine", Config{Tools: []Tool{lookup, refund}, Contracts: map[string][]string{"support": {"lookup_order"}}}, nil},
		{"no tools", Config{}, nil},
		{"tool type also a kernel spec", Config{Tools: []Tool{lookup, refund}, Kernel: kernel.Config{ActionSpecs: []kernel.ActionSpec{{Type: "issue_refund", MinBeliefs: []string{"refund_due"}}}}}, blackboard.ErrInvalidInput},
		{"tool type given as a kernel spec before", Config{Kernel: kernel.Config{ActionSpecs: []kernel.ActionSpec{{Type: "lookup_order", SafeFallback: true}}}, Tools: []Tool{lookup}}, blackboard.ErrInvalidInput},
		{"tool type is the fallback", Config{Tools: []Tool{{Unscoped: true, Name: kernel.FallbackQueueForReview, Effect: effect}}}, blackboard.ErrInvalidInput},
		{"fallback not registered", Config{Tools: []Tool{lookup}, Fallback: "call_a_human"}, blackboard.ErrInvalidInput},
		{"fallback registered", Config{Tools: []Tool{lookup}, Fallback: "call_a_human", Kernel: kernel.Config{ActionSpecs: fallback}}, nil},
		{"fallback a tool's", Config{Tools: []Tool{refund}, Fallback: "issue_refund"}, blackboard.ErrInvalidInput},
		{"fallback a read-only tool's", Config{Tools: []Tool{lookup}, Fallback: "lookup_order"}, blackboard.ErrInvalidInput},
		{"bad kernel option", Config{Tools: []Tool{lookup}, Kernel: kernel.Config{MinConfidence: 2}}, blackboard.ErrInvalidInput},
		{"approval rule does not compile", Config{Tools: []Tool{withApproval(refund, "amount >")}}, blackboard.ErrInvalidInput},
		{"approval rule not a bool", Config{Tools: []Tool{withApproval(refund, "amount + 1")}}, blackboard.ErrInvalidInput},
		{"grounded tool declaring no bindings", Config{Tools: []Tool{withBindings(refund, false)}}, blackboard.ErrInvalidInput},
		{"grounded tool declared unbound", Config{Tools: []Tool{withBindings(refund, true)}}, nil},
		{"bindings and unbound", Config{Tools: []Tool{withBindings(refund, true, orderBindings...)}}, blackboard.ErrInvalidInput},
		{"bindings on a read-only tool", Config{Tools: []Tool{withBindings(lookup, false, orderBindings...)}}, blackboard.ErrInvalidInput},
		{"binding without an operator", Config{Tools: []Tool{withBindings(refund, false, Binding{Arg: "amount", Percept: "order"})}}, blackboard.ErrInvalidInput},
		{"binding of an undeclared argument", Config{Tools: []Tool{withBindings(refund, false, Binding{Arg: "total", Percept: "order", Op: "at_most"})}}, blackboard.ErrInvalidInput},
		{"binding without a percept", Config{Tools: []Tool{withBindings(refund, false, Binding{Arg: "amount", Op: "at_most"})}}, blackboard.ErrInvalidInput},
		{"no effect: caller-driven", Config{Tools: []Tool{{Unscoped: true, Name: "lookup_order", Result: "order"}}}, nil},
		{"no name", Config{Tools: []Tool{{Unscoped: true, Effect: effect}}}, blackboard.ErrInvalidInput},
		{"twice", Config{Tools: []Tool{lookup, lookup}}, blackboard.ErrInvalidInput},
		{"reserved property", Config{Tools: []Tool{withParams(lookup, `{"type":"object","properties":{"requires_beliefs":{"type":"array"}}}`)}}, blackboard.ErrInvalidInput},
		{"schema not an object", Config{Tools: []Tool{withParams(lookup, `{"type":"array"}`)}}, blackboard.ErrInvalidInput},
		{"unknown property type", Config{Tools: []Tool{withParams(lookup, `{"type":"object","properties":{"x":{"type":"float"}}}`)}}, blackboard.ErrInvalidInput},
		{"undeclared required", Config{Tools: []Tool{withParams(lookup, `{"type":"object","required":["x"]}`)}}, blackboard.ErrInvalidInput},
		{"reserved result kind", Config{Tools: []Tool{{Unscoped: true, Name: "lookup_order", Result: audit.KindAttempt, Effect: effect}}}, blackboard.ErrInvalidInput},
		{"bad retry", Config{Tools: []Tool{{Unscoped: true, Name: "lookup_order", Effect: effect, Retry: RetryPolicy{MaxAttempts: -1}}}}, blackboard.ErrInvalidInput},
		{"bad once-key", Config{Tools: []Tool{withOnce(refund, &kernel.OnceKey{})}}, blackboard.ErrInvalidInput},
		{"caller lists an unknown tool", Config{Tools: []Tool{lookup}, Contracts: map[string][]string{"support": {"issue_refund"}}}, blackboard.ErrInvalidInput},
		{"intent lists an unknown tool", Config{Tools: []Tool{lookup}, Intents: map[string][]string{"refund": {"issue_refund"}}}, blackboard.ErrInvalidInput},
		{"caller without a name", Config{Tools: []Tool{lookup}, Contracts: map[string][]string{"": nil}}, blackboard.ErrInvalidInput},
		{"bad lease", Config{Tools: []Tool{lookup}, Lease: -time.Second}, blackboard.ErrInvalidInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cfg.Kernel.BeliefSpecs == nil {
				tc.cfg.Kernel.BeliefSpecs = refundDue
			}
			g, err := New(context.Background(), tc.cfg)
			var cerr *kernel.ConfigError
			if tc.want == nil && err != nil || tc.want != nil && (!errors.Is(err, tc.want) || !errors.As(err, &cerr)) {
				t.Errorf("New: %v, want %v (a *kernel.ConfigError)", err, tc.want)
			}
			if err == nil {
				g.Close()
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New(ctx, Config{Tools: []Tool{lookup}}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
}

func withApproval(t Tool, rule string) Tool   { t.Approval = rule; return t }
func withParams(t Tool, schema string) Tool   { t.Parameters = json.RawMessage(schema); return t }
func withOnce(t Tool, o *kernel.OnceKey) Tool { t.Once = o; return t }

// TestToolsRegisteredOnce: the gate registers each tool's action type
// with the kernel it builds, and the kernel keeps the owner's options.
func TestToolsRegisteredOnce(t *testing.T) {
	tools := deskTools(func(string) EffectFunc {
		return func(context.Context, Invocation) (blackboard.Payload, error) { return nil, nil }
	})
	tools[1].Once = &kernel.OnceKey{Fields: []string{"order_id"}, Limit: 2}
	s := memstore.New()
	cfg := Config{Kernel: kernel.Config{Store: s, Namespace: "desk",
		BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}}}, Tools: tools}
	g, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The kernel configuration the gate builds its kernel from.
	_, kc, err := cfg.compile(true)
	if err != nil {
		t.Fatal(err)
	}
	tools[1].Once.Fields[0] = "changed" // the gate keeps its own copy
	if ns := kernelhook.Namespace(g.Kernel()); ns != "desk" {
		t.Errorf("namespace %q: the kernel configuration was not applied", ns)
	}
	spec := func(typ string) (kernel.ActionSpec, bool) {
		i := slices.IndexFunc(kc.ActionSpecs, func(s kernel.ActionSpec) bool { return s.Type == typ })
		if i < 0 {
			return kernel.ActionSpec{}, false
		}
		return kc.ActionSpecs[i], true
	}
	if s, ok := spec("lookup_order"); !ok || !s.SafeFallback || !s.Repeatable || len(s.MinBeliefs) != 0 || s.Once != nil {
		t.Errorf("read-only spec %+v, %v", s, ok)
	}
	if s, ok := spec("issue_refund"); !ok || s.SafeFallback || s.Repeatable || !slices.Equal(s.MinBeliefs, []string{"refund_due"}) ||
		s.Once == nil || !slices.Equal(s.Once.Fields, []string{"order_id"}) || s.Once.Limit != 2 {
		t.Errorf("grounded spec %+v, %v", s, ok)
	}
	if s, ok := spec("search_kb"); !ok || !s.SafeFallback {
		t.Errorf("search spec %+v, %v", s, ok)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(context.Background(), "x"); errors.Is(err, blackboard.ErrClosed) {
		t.Error("closing the gate closed a store the owner gave")
	}
	g, err = New(context.Background(), Config{Tools: []Tool{tools[0]}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Kernel().Reader().View(context.Background(), "t", false); !errors.Is(err, blackboard.ErrClosed) {
		t.Errorf("the store the kernel created is open after Close: %v", err)
	}
}

package toolgate

import (
	"context"
	"slices"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/internal/kernelhook"
	"github.com/blackboardkernel/bk/internal/telemetry"
	"github.com/blackboardkernel/bk/kernel"
)

// Gate is the tool-call gate: every tool call of an agent passes through
// it as a governed kernel action. Build it with [New]. A Gate is immutable
// after New and safe for concurrent use by any number of goroutines, and
// several processes may run gates over one store: the store's once-keys
// order them. It starts no goroutines.
type Gate struct {
	k         *kernel.Kernel
	tools     map[string]*entry // by name, which is the tool's action type
	order     []*entry
	contracts map[string]*contract
	intents   map[string]map[string]bool // nil: no intents configured
	lease     time.Duration
	fallback  string
	planner   governed         // submits fallbacks
	reader    kernel.Handle    // reads records
	gov       *kernel.Governor // retires actions, reads once-keys, rechecks
	x         *executor        // runs the calls and drives their effects
	tracer    telemetry.Tracer
	metrics   *gateMetrics  // nil: metrics off
	budget    *budget.Run   // the run every call is charged to ([Config.Budget]); nil for none
	guard     *budget.Guard // the loop guard of every call ([Config.Guard]); nil for none
	mask      *masker       // hashes masked fields ([Config.MaskKey], [Config.MaskKeys]); nil without a key
	// The policy snapshot: its JSON, its hash (boxed once, as decision
	// records hold it) and the id of the record that holds it.
	policyJSON  []byte
	policyHash  string
	policyValue any
	policyID    string
}

// entry is a registered tool with what New compiled for it.
type entry struct {
	Tool
	spec    Spec
	schema  *schema
	policy  *policy
	once    bool     // the action spec has a once-key
	handle  governed // writes the tool's attempts and results; set once the kernel is built
	derives []derivation
	deriver governed // proposes the derived beliefs; set once the kernel is built
	// requires is the tool's belief kinds as an action's requires_beliefs
	// holds them, boxed once: never changed, and the kernel copies it.
	requires any
	// nameValue is the tool's name boxed once, as records hold it.
	nameValue any
	spanName  string // the name of a call's own span: "execute_tool " and the name
}

type contract struct {
	name    string
	value   any // name, boxed once, as records hold it
	tools   map[string]bool
	planner governed
}

// Kernel returns the kernel the gate built and governs, for the handles of
// the agent's workers and approvers, an orchestrator, inspection. Safe for
// concurrent use.
func (g *Gate) Kernel() *kernel.Kernel { return g.k }

// CallerDriven reports whether the gate holds the tool named name
// without an effect: its caller runs it, handing the gate each call's
// effect ([Call.Effect]). It is false for a tool the gate does not hold.
func (g *Gate) CallerDriven(name string) bool {
	e := g.tools[name]
	return e != nil && e.Effect == nil
}

// Close closes what the gate opened, and only that: its kernel and, when
// no store was given (Config.Kernel.Store nil), the memory store the
// kernel opened for it. A store the caller passed stays the caller's: it
// stays open, and the caller closes it after the gate, which is what
// writes a SQLite store's last records from its -wal file into the
// database file. Stop what uses the gate first (a supervisor's Close
// waits for its effects); with defer, close in the opposite order of
// opening: defer the store's Close, then the gate's, then the
// supervisor's, and they run the other way round. The gate must not be
// used after.
func (g *Gate) Close() error { return g.k.Close() }

// Tools returns the specs of every registered tool, in registration order.
func (g *Gate) Tools() []Spec {
	out := make([]Spec, len(g.order))
	for i, e := range g.order {
		out[i] = e.spec.clone()
	}
	return out
}

func (s Spec) clone() Spec {
	s.Parameters = slices.Clone(s.Parameters)
	return s
}

// Surface returns the specs of the tools a model calling as caller may be shown for
// the trace and intent, in registration order: those the contract
// lists, that the intent allows (when intents are configured; with
// intents configured and none named, nothing is surfaced), that the
// trace's run controls allow ([Gate.Controls]: not prohibited, and not
// effectful in a read-only trace), and that are
// situationally possible now: every belief the tool requires is committed
// and true in the trace's current view (a tool that requires none always is).
//
// Surfacing is a courtesy to the model, so that it is not offered what it
// cannot use: a refused capability is absent from its tool list rather
// than only rejected at execution. It is not the enforcement: the trace
// may change between Surface and a call, and a model may call a tool it
// was not shown. [Gate.Call] checks every call again.
//
// An unknown caller or an intent that is not configured is
// [blackboard.ErrInvalidInput], and so is a bad trace id (the kernel's).
func (g *Gate) Surface(ctx context.Context, caller, traceID, intent string) ([]Spec, error) {
	r := g.contracts[caller]
	if r == nil {
		return nil, invalidCall("unknown caller %q", caller)
	}
	var allowed map[string]bool
	if g.intents != nil && intent != "" {
		if allowed = g.intents[intent]; allowed == nil {
			return nil, invalidCall("unknown intent %q", intent)
		}
	}
	v, err := g.k.Reader().View(ctx, traceID, false)
	if err != nil {
		return nil, err
	}
	ctl, err := g.Controls(ctx, traceID)
	if err != nil {
		return nil, err
	}
	out := []Spec{}
	for _, e := range g.order {
		if !r.tools[e.Name] || g.intents != nil && !allowed[e.Name] {
			continue
		}
		if slices.Contains(ctl.Prohibited, e.Name) || ctl.ReadOnly && e.effectful() {
			continue
		}
		possible := true
		for _, kind := range e.Requires {
			if b, ok := v.Committed[blackboard.Beliefs][kind]; !ok || !b.Bool("value") {
				possible = false
				break
			}
		}
		if possible {
			out = append(out, e.spec.clone())
		}
	}
	return out, nil
}

// Call puts one tool call through the gate and answers with a [Result]:
//
//  1. The tool must be registered (TOOL_UNKNOWN), listed by the caller's
//     contract (TOOL_NOT_PERMITTED) and, when intents are configured,
//     by the call's intent (TOOL_NOT_FOR_INTENT); its arguments must fit
//     its schema (INVALID_ARGUMENTS). A call refused here stores nothing
//     but its decision record.
//  2. The call becomes an action proposal of the caller's planner, with the
//     arguments as payload and the tool's beliefs as requires_beliefs, and
//     the kernel decides it: evidence, rules, constraints, once-keys. Its
//     decision record lands in the same batch. A kernel refusal keeps the
//     kernel's code (STALE_EVIDENCE, DUPLICATE_ACTION, ...).
//  3. A committed action whose approval policy applies waits:
//     [audit.OutcomePendingApproval], with the action id to approve. Any other is executed
//     at once, exactly once per action (see [Gate.Execute]): Executed
//     with the effect's output, or Failed.
//
// Before these checks, a call that has budgets (its own [Call.Budget] and
// [Call.Guard], and the gate's [Config.Budget] and [Config.Guard], which
// compose: all apply) passes their loop
// guards and then their runs' tool-call budgets. A call refused there is BUDGET_EXCEEDED or LOOP_DETECTED, with
// a decision record holding the reason and a snapshot of the budget, and
// its hint is the reason's. Every call the gate receives is counted,
// whatever the later checks decide: each is a step of the model's loop.
// Every later decision record of an admitted call carries the budget's
// snapshot in its context (under "budget").
//
// A call with a [Call.RetryKey] used before in its trace is answered,
// before its budget is charged, with what the first call under the key
// came to (see docs/effects.md, "Retries of one call"): its recorded
// refusal or result, its wait for approval (or, approved, its execution),
// CALL_RUNNING while another driver runs it, or RETRY_KEY_CONFLICT when
// the tool, caller or arguments differ.
//
// A refusal is a Result, not an error, with the code, the root cause and a
// hint for the model, so that the agent loop can hand it back as the
// tool's result and go on. Call returns an error only when the loop cannot
// go on: an invalid trace id ([blackboard.ErrInvalidInput]), a cancelled context, a
// store failure. On an error after the action committed, the Result still
// names it (ActionID): [Gate.Execute] or [Gate.Recover] finishes it.
func (g *Gate) Call(ctx context.Context, c Call) (res Result, err error) {
	ctx, _ = kernelhook.WithReceipts(ctx, audit.Kind)
	ctx, sp := g.x.startCall(ctx, c)
	defer func() { g.x.ended(ctx, sp, toolLabel(c.Tool), &res, err) }()
	c.span = sp
	res, j, err := g.x.propose(ctx, c)
	if err != nil || j == nil {
		return res, err
	}
	j.fresh = true
	return g.x.run(ctx, j)
}

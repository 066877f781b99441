package toolgate

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

// The tests drive a support desk: a support caller that looks up orders and
// issues refunds (a refund over 500 needs approval, and rests on the
// refund_due belief, which rests on the order percept lookup_order
// records), and a researcher caller that searches a knowledge base.

// stores lists the stores every test runs on, as kernel/attack_test.go
// does.
var stores = []struct {
	name string
	open func(t *testing.T) store.Store
}{
	{"memstore", func(*testing.T) store.Store { return memstore.New() }},
	{"sqlite", func(t *testing.T) store.Store {
		s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "bk.db"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
}

// clock is a clock tests move by hand.
type clock struct{ ms atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ms.Store(time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC).UnixMilli())
	return c
}

func (c *clock) Now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *clock) Advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// setup is what a test may change about the desk before it is built.
type setup struct {
	tools     []Tool
	contracts map[string][]string
	intents   map[string][]string
	cfg       Config // the rest of the gate's configuration, and its kernel's
}

// desk is a gate over a kernel on one store, with a fake clock and effects
// whose behaviour a test sets and whose calls it counts.
type desk struct {
	t         testing.TB
	ctx       context.Context
	store     store.Store
	clock     *clock
	k         *kernel.Kernel
	g         *Gate
	analyst   *kernel.Proposer // proposes beliefs
	tools     []Tool           // as registered
	contracts map[string][]string
	kcfg      kernel.Config // the kernel's configuration, for another gate over the store

	mu     sync.Mutex
	breaks string // why the test breaks the invariants on purpose ("": it does not)
	behave map[string]EffectFunc
	calls  map[string][]Invocation
}

// onStores runs fn with a fresh desk on each store.
func onStores(t *testing.T, fn func(t *testing.T, d *desk), mods ...func(*setup)) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			t.Cleanup(func() { s.Close() })
			fn(t, newDesk(t, s, mods...))
		})
	}
}

const (
	orderSchema  = `{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"],"additionalProperties":false}`
	refundSchema = `{"type":"object","properties":{"order_id":{"type":"string"},"amount":{"type":"number"},` +
		`"reason":{"type":"string","enum":["damaged","late","other"]}},"required":["order_id","amount"],"additionalProperties":false}`
	searchSchema = `{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`
)

// orderBindings bind a refund to the order its refund_due belief rests
// on: the same order, at most its amount.
var orderBindings = []Binding{
	{Arg: "order_id", Percept: "order", Op: "equal"},
	{Arg: "amount", Percept: "order", Op: "at_most"},
}

// deskTools are the desk's tools; effect dispatches to the desk. Its
// refund API honours the idempotency key (Idempotent), so that a crashed
// attempt is re-driven; unkeyed_test.go takes that away.
func deskTools(effect func(tool string) EffectFunc) []Tool {
	return []Tool{
		{Name: "lookup_order", Description: "Look up an order by id.", ReadOnly: true, Parameters: json.RawMessage(orderSchema),
			Result: "order", Effect: effect("lookup_order")},
		{Unscoped: true, Name: "issue_refund", Description: "Refund an order.", Parameters: json.RawMessage(refundSchema),
			Requires: []string{"refund_due"}, Bindings: orderBindings, Result: "refund", Approval: "amount > 500",
			Idempotent: true,
			Retry:      RetryPolicy{MaxAttempts: 3, Backoff: time.Millisecond},
			Effect:     effect("issue_refund")},
		{Unscoped: true, Name: "search_kb", Description: "Search the knowledge base.", Parameters: json.RawMessage(searchSchema),
			Effect: effect("search_kb")},
	}
}

func newDesk(t testing.TB, s store.Store, mods ...func(*setup)) *desk {
	t.Helper()
	d := &desk{t: t, ctx: context.Background(), store: s, clock: newClock(),
		behave: map[string]EffectFunc{}, calls: map[string][]Invocation{}}
	su := setup{
		tools: deskTools(func(tool string) EffectFunc {
			return func(ctx context.Context, inv Invocation) (blackboard.Payload, error) { return d.effect(ctx, tool, inv) }
		}),
		contracts: map[string][]string{
			"support":    {"lookup_order", "issue_refund"},
			"researcher": {"search_kb"},
		},
	}
	for _, m := range mods {
		m(&su)
	}
	d.kcfg = su.cfg.Kernel
	d.kcfg.Store, d.kcfg.Clock = s, d.clock.Now
	d.kcfg.BeliefSpecs = append([]kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}}, d.kcfg.BeliefSpecs...)
	d.tools, d.contracts = su.tools, su.contracts
	cfg := su.cfg
	cfg.Tools, cfg.Contracts, cfg.Intents = su.tools, su.contracts, su.intents
	d.g = d.gate(cfg)
	d.k = d.g.Kernel()
	d.analyst = d.k.Proposer(blackboard.RolePlanner, "analyst")
	d.checkAtEnd()
	return d
}

// checkStore runs the invariant checker (package invariant) over a
// store. The checker imports this package, so the external test package
// sets it (invariant_hook_test.go).
var checkStore func(testing.TB, store.Store)

// checkAtEnd checks the invariants of the desk's store when the test
// ends, before the store is closed, unless the test said it breaks them
// on purpose ([desk.unchecked]). A benchmark's store, which grows with
// b.N, is not checked.
func (d *desk) checkAtEnd() {
	t, ok := d.t.(*testing.T)
	if !ok {
		return
	}
	if checkStore == nil {
		t.Fatal("no invariant checker registered (invariant_hook_test.go)")
	}
	t.Cleanup(func() {
		d.mu.Lock()
		why := d.breaks
		d.mu.Unlock()
		if why != "" {
			t.Logf("invariants not checked: %s", why)
			return
		}
		checkStore(t, d.store)
	})
}

// checkStoreAtEnd checks the invariants of s when the test ends, before
// a cleanup registered earlier closes it.
func checkStoreAtEnd(t *testing.T, s store.Store) {
	t.Helper()
	if checkStore == nil {
		t.Fatal("no invariant checker registered (invariant_hook_test.go)")
	}
	t.Cleanup(func() { checkStore(t, s) })
}

// unchecked says that the test breaks the invariants on purpose (why),
// through the gate's internals: its store is not checked.
func (d *desk) unchecked(why string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.breaks = why
}

// gate builds a gate over the desk's store, with the desk's kernel
// configuration and cfg's other fields, as another process would.
func (d *desk) gate(cfg Config) *Gate {
	d.t.Helper()
	cfg.Kernel = d.kcfg
	g, err := New(d.ctx, cfg)
	if err != nil {
		d.t.Fatalf("toolgate.New: %v", err)
	}
	return g
}

// effect records the invocation and runs the behaviour the test set (by
// default: the order, or a refund receipt).
func (d *desk) effect(ctx context.Context, tool string, inv Invocation) (blackboard.Payload, error) {
	d.mu.Lock()
	d.calls[tool] = append(d.calls[tool], inv)
	fn := d.behave[tool]
	d.mu.Unlock()
	if fn != nil {
		return fn(ctx, inv)
	}
	switch tool {
	case "lookup_order":
		return blackboard.Payload{"order_id": inv.Args["order_id"], "amount": 900.0, "refundable": true}, nil
	case "issue_refund":
		return blackboard.Payload{"refund_id": "re_" + inv.Args["order_id"].(string), "amount": inv.Args["amount"]}, nil
	}
	return blackboard.Payload{"hits": []any{"how to refund"}}, nil
}

// setEffect sets a tool's behaviour.
func (d *desk) setEffect(tool string, fn EffectFunc) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.behave[tool] = fn
}

// invocations returns the effect calls of a tool so far.
func (d *desk) invocations(tool string) []Invocation {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.calls[tool])
}

// call makes a tool call, failing the test on an error.
func (d *desk) call(trace, caller, intent, tool, args string) Result {
	d.t.Helper()
	res, err := d.g.Call(d.ctx, Call{ID: "call_" + tool, Tool: tool, Args: json.RawMessage(args), Caller: caller, TraceID: trace, Intent: intent})
	if err != nil {
		d.t.Fatalf("Call %s: %v", tool, err)
	}
	return res
}

// ground looks the order up and commits refund_due on it.
func (d *desk) ground(trace, order string) {
	d.t.Helper()
	if res := d.call(trace, "support", "refund", "lookup_order", `{"order_id":"`+order+`"}`); res.Outcome != audit.OutcomeExecuted {
		d.t.Fatalf("lookup_order: %+v", res)
	}
	dec, err := d.analyst.Submit(d.ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}})
	if err != nil || !dec.Committed() {
		d.t.Fatalf("belief refund_due: %v %v", dec.Code, err)
	}
}

// refund asks for a refund of amount on order.
func (d *desk) refund(trace, order string, amount float64) Result {
	d.t.Helper()
	args, _ := json.Marshal(map[string]any{"order_id": order, "amount": amount})
	return d.call(trace, "support", "refund", "issue_refund", string(args))
}

// execute runs Execute, failing the test on an error.
func (d *desk) execute(actionID string) Result {
	d.t.Helper()
	res, err := d.g.Execute(d.ctx, actionID)
	if err != nil {
		d.t.Fatalf("Execute %s: %v", actionID, err)
	}
	return res
}

// approve approves an action as identity, failing the test on an error.
func (d *desk) approve(trace, actionID, identity string, ttl time.Duration) blackboard.Record {
	d.t.Helper()
	digest := d.digest(actionID)
	rec, err := d.g.Approver(identity).Decide(d.ctx, audit.Approval{TraceID: trace, ActionID: actionID, Digest: digest, Decision: audit.Approved, Note: "ok", TTL: ttl})
	if err != nil {
		d.t.Fatalf("Approve: %v", err)
	}
	return rec
}

// digest is the ArgsDigest of a committed action.
func (d *desk) digest(actionID string) string {
	d.t.Helper()
	act, err := d.store.Get(d.ctx, actionID)
	if err != nil {
		d.t.Fatal(err)
	}
	digest, err := ArgsDigest(act.Payload)
	if err != nil {
		d.t.Fatal(err)
	}
	return digest
}

// decisions lists the gate's decision records that match f.
func (d *desk) decisions(f audit.Query) []audit.Entry {
	d.t.Helper()
	var out []audit.Entry
	for r, err := range audit.List(d.ctx, d.g.Kernel().Reader(), f) {
		if err != nil {
			d.t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// records lists every record of the store.
func (d *desk) records() []blackboard.Record {
	d.t.Helper()
	var out []blackboard.Record
	for _, slot := range blackboard.AllSlots() {
		for r, err := range d.store.ListSlot(d.ctx, slot, store.Filter{}) {
			if err != nil {
				d.t.Fatal(err)
			}
			if audit.IsPolicyTrace(r.Provenance.TraceID) {
				continue // written by New, not by a call
			}
			out = append(out, r)
		}
	}
	return out
}

// kinds lists the records of a slot and kind in the store.
func (d *desk) kinds(slot blackboard.Slot, kind string) []blackboard.Record {
	d.t.Helper()
	var out []blackboard.Record
	for r, err := range d.store.ListSlot(d.ctx, slot, store.Filter{}) {
		if err != nil {
			d.t.Fatal(err)
		}
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

// committedActions counts the committed actions of a type.
func (d *desk) committedActions(kind string) int {
	n := 0
	for _, r := range d.kinds(blackboard.Actions, kind) {
		if r.Mode == blackboard.ModeCommit {
			n++
		}
	}
	return n
}

// wantOutcome fails the test unless res has the outcome and code.
func wantOutcome(t *testing.T, what string, res Result, outcome audit.Outcome, code reason.Code) {
	t.Helper()
	if res.Outcome != outcome || res.Code != code {
		t.Errorf("%s: %s %s (root %+v, hint %q), want %s %s", what, res.Outcome, res.Code, res.RootCause, res.Hint, outcome, code)
	}
}

// errFlaky is a retryable failure.
var errFlaky = errors.New("503 service unavailable")

// job returns the job that would run the committed action actionID, as a
// driver builds it, for tests that play one step of the executor by hand.
func (d *desk) job(actionID string) *job {
	d.t.Helper()
	act, e, gd, err := d.g.x.gated(d.ctx, actionID)
	if err != nil {
		d.t.Fatal(err)
	}
	j, err := d.g.x.newJob(d.ctx, e, act, gd.Context)
	if err != nil {
		d.t.Fatal(err)
	}
	return j
}

// writeResult gathers Governor.Write's results.
func writeResult(id string, appended []string, err error) (wrote, error) {
	return wrote{ID: id, Appended: appended}, err
}

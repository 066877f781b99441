package adaptertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/reply"
	"github.com/blackboardkernel/bk/invariant/invarianttest"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/toolgate"
)

// The names the suite's gate uses.
const (
	Caller  = "agent"        // the contract the adapter calls under
	TraceID = "adaptertest"  // the trace every call belongs to
	Lookup  = "lookup_order" // read-only; its result is an "order" percept
	Refund  = "issue_refund" // rests on refund_due; approval above 500; once per order
	Close   = "close_account"
)

// Adapter is what an adapter provides to the suite: the framework's view
// of the gate, as a model's client uses it.
type Adapter interface {
	// ListTools lists the names of the tools the framework shows the
	// model for the suite's caller and trace.
	ListTools(ctx context.Context) ([]string, error)
	// CallTool calls the tool through the framework with the model's
	// arguments (a JSON object) under the framework's call id, the key
	// under which the framework may deliver one call twice, and returns
	// what the model is shown. An error is a failure of the framework
	// itself (a protocol error): a refusal is a Reply with IsError.
	CallTool(ctx context.Context, name string, args json.RawMessage, callID string) (Reply, error)
}

// Reply is what a model is shown of a call: the structured content of
// [toolgate.Result.ForModel] (its JSON decoded) and its error flag, as the
// adapter's framework carried them.
type Reply struct {
	IsError bool
	Content reply.Content
}

// Approval is what a person is asked to approve: the call's tool, the
// action, and the committed arguments with their [toolgate.ArgsDigest].
type Approval struct {
	Tool     string
	ActionID string
	Digest   string
	Args     map[string]any
}

// Decision is a person's answer to an [Approval]: whether to approve, and
// the digest of the arguments they approve (an adapter passes it to the
// gate as given).
type Decision struct {
	Approve bool
	Digest  string
}

// FrameworkTool is a tool the framework runs itself (an integrator's
// Eino tool, an ADK function tool), as [RunFramework] gives it to the
// adapter: the adapter makes it a tool of its framework, and the gate
// holds it caller-driven, with no effect of its own.
type FrameworkTool struct {
	Name        string
	Description string
	Parameters  json.RawMessage // a JSON Schema object
	// Run is the tool's code, as the framework calls it with the model's
	// arguments. The refund reads its idempotency key from its context
	// ([toolgate.InvocationFrom]), so the context the gate runs the
	// call's effect in must reach it.
	Run func(ctx context.Context, args map[string]any) (map[string]any, error)
}

// Env is one case's gate and the person who decides its approvals.
type Env struct {
	Gate    *toolgate.Gate
	Caller  string
	TraceID string
	// Approver is the identity an adapter approves under: not the caller.
	Approver string
	// Tools are, in a case of [RunFramework], the tools the framework
	// runs itself; the gate holds each without an effect. Nil in a case
	// of [Run], where the gate holds every tool with its effect.
	Tools []FrameworkTool

	mu       sync.Mutex
	decide   func(Approval) Decision
	asked    []Approval
	runs     int             // refund effect calls
	lookups  int             // lookup effect calls
	paid     map[string]bool // refunds made, by idempotency key
	crash    bool            // the next refund result record is lost
	lookedUp []trace.SpanContext
}

// Decide is the person: the adapter asks it when a call needs approval.
// Unless the case says otherwise it denies what it is shown.
func (e *Env) Decide(_ context.Context, a Approval) Decision {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.asked = append(e.asked, a)
	if e.decide == nil {
		return Decision{Digest: a.Digest}
	}
	return e.decide(a)
}

func (e *Env) setDecide(f func(Approval) Decision) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.decide = f
}

// Lease is the suite gate's lease ([toolgate.Config.Lease]): a call whose
// effect ran but whose result was not recorded is driven again after it.
const Lease = 200 * time.Millisecond

// errCrash is the store failure that stands for a process dying between
// an effect and its result record.
var errCrash = errors.New("adaptertest: the process died before the result was recorded")

// crashStore loses the first batch that records a refund result after
// the case arms it.
type crashStore struct {
	store.Store
	env *Env
}

func (s *crashStore) Apply(ctx context.Context, b store.Batch) error {
	s.env.mu.Lock()
	crash := s.env.crash && slices.ContainsFunc(b.Appends, func(r blackboard.Record) bool { return r.Kind == "refund" })
	if crash {
		s.env.crash = false
	}
	s.env.mu.Unlock()
	if crash {
		return errCrash
	}
	return s.Store.Apply(ctx, b)
}

// Lookups reports how many times the lookup effect ran.
func (e *Env) Lookups() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lookups
}

// Runs reports how many times the refund effect ran.
func (e *Env) Runs() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.runs
}

func (e *Env) questions() []Approval {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.asked)
}

// NewEnv builds the suite's gate (closed with t.Cleanup, its store checked
// by the invariant checker before) and its Env:
// the gate holds every tool with its effect.
func NewEnv(t testing.TB) *Env { return newEnv(t, false) }

// NewFrameworkEnv builds the Env of a case of [RunFramework]: the gate
// holds the lookup and the refund caller-driven, and [Env.Tools] are the
// framework's own tools that run them.
func NewFrameworkEnv(t testing.TB) *Env { return newEnv(t, true) }

func newEnv(t testing.TB, framework bool) *Env {
	t.Helper()
	env := &Env{Caller: Caller, TraceID: TraceID, Approver: "human:reviewer", paid: map[string]bool{}}
	amounts := map[string]float64{"A1": 700, "B2": 100}
	lookup := func(ctx context.Context, args map[string]any) (map[string]any, error) {
		env.mu.Lock()
		env.lookups++
		env.lookedUp = append(env.lookedUp, trace.SpanContextFromContext(ctx))
		env.mu.Unlock()
		id, _ := args["order_id"].(string)
		amount, ok := amounts[id]
		if !ok {
			return nil, errors.New("no such order")
		}
		return map[string]any{"order_id": id, "amount": amount}, nil
	}
	refund := func(key string, args map[string]any) map[string]any {
		env.mu.Lock()
		defer env.mu.Unlock()
		env.runs++
		env.paid[key] = true // the payment API pays a key once
		return map[string]any{"refund_id": "re_" + fmt.Sprint(args["order_id"]), "amount": args["amount"]}
	}
	tools := []toolgate.Tool{
		{Unscoped: true,
			Name:        Lookup,
			Description: "Look up an order by id.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`),
			Result:      "order",
			Effect: func(ctx context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				return lookup(ctx, inv.Args)
			},
		},
		{Unscoped: true,
			Name:        Refund,
			Description: "Refund an order.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"},"amount":{"type":"number"}},` +
				`"required":["order_id","amount"]}`),
			Requires: []string{"refund_due"},
			Bindings: []toolgate.Binding{
				{Arg: "order_id", Percept: "order", Op: "equal"},
				{Arg: "amount", Percept: "order", Op: "at_most"},
			},
			Once:     &kernel.OnceKey{Fields: []string{"order_id"}},
			Result:   "refund",
			Approval: "amount > 500",
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				return refund(inv.Key, inv.Args), nil
			},
		},
		{Unscoped: true,
			Name:        Close,
			Description: "Close the customer's account.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{}}`),
			Effect: func(context.Context, toolgate.Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"closed": true}, nil
			},
		},
	}
	if framework {
		for i := range tools[:2] {
			env.Tools = append(env.Tools, FrameworkTool{Name: tools[i].Name, Description: tools[i].Description, Parameters: tools[i].Parameters})
			tools[i].Effect = nil
		}
		env.Tools[0].Run = lookup
		n := 0
		env.Tools[1].Run = func(ctx context.Context, args map[string]any) (map[string]any, error) {
			inv, ok := toolgate.InvocationFrom(ctx)
			if !ok {
				// No key reached the tool: each run pays anew.
				env.mu.Lock()
				n++
				inv.Key = fmt.Sprint("no key ", n)
				env.mu.Unlock()
			}
			return refund(inv.Key, args), nil
		}
	}
	store := &crashStore{Store: memstore.New(), env: env}
	g, err := toolgate.New(t.Context(), toolgate.Config{
		Kernel: kernel.Config{
			Store:       store,
			BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}},
		},
		Tools:     tools,
		Lease:     Lease,
		Contracts: map[string][]string{Caller: {Lookup, Refund}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	// Checked when the case ends, before the gate closes the store.
	invarianttest.Cleanup(t, store.Store)
	env.Gate = g
	return env
}

// Run runs the suite on the gate's own effects: each case is a subtest
// with a new [Env] ([NewEnv]) and the adapter newAdapter builds on it.
func Run(t *testing.T, newAdapter func(t *testing.T, env *Env) Adapter) {
	t.Helper()
	run(t, NewEnv, newAdapter)
}

// RunFramework runs the suite on tools the framework runs itself: each
// case's Env ([NewFrameworkEnv]) has the gate hold the tools without an
// effect, and newAdapter gives [Env.Tools] to its framework as the
// framework's own tools. The same cases then show that the framework's
// tool runs once per allowed call and never on a refusal, once after an
// approval and resume (the adapter calls again under the call id with
// the tool as the call's effect: the gate has no effect to run), once
// per key after a crash between its run and its record, and never on a
// tampered retry.
func RunFramework(t *testing.T, newAdapter func(t *testing.T, env *Env) Adapter) {
	t.Helper()
	run(t, NewFrameworkEnv, newAdapter)
}

func run(t *testing.T, newEnv func(testing.TB) *Env, newAdapter func(t *testing.T, env *Env) Adapter) {
	t.Helper()
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			env := newEnv(t)
			c.run(t, &fixture{env: env, a: newAdapter(t, env)})
		})
	}
}

type testCase struct {
	name string
	run  func(t *testing.T, f *fixture)
}

func cases() []testCase {
	return []testCase{
		{"RefusedWithHint", testRefused},
		{"RunsOncePerCall", testRunsOnce},
		{"Surfacing", testSurfacing},
		{"ApproveAndResume", testApprove},
		{"Deny", testDeny},
		{"TamperedApproval", testTamperedApproval},
		{"TamperedRetry", testTamperedRetry},
		{"Duplicate", testDuplicate},
		{"SameCallID", testSameCallID},
		{"CrashBeforeRecord", testCrash},
		{"TraceContext", testTraceContext},
	}
}

type fixture struct {
	env *Env
	a   Adapter
}

func (f *fixture) call(t *testing.T, tool, args, callID string) Reply {
	t.Helper()
	r, err := f.a.CallTool(t.Context(), tool, json.RawMessage(args), callID)
	if err != nil {
		t.Fatalf("CallTool %s %s: a refusal must be a result, not an error: %v", tool, args, err)
	}
	return r
}

// ready looks the order up through the adapter and has a planner conclude
// that its refund is due.
func (f *fixture) ready(t *testing.T, order string) {
	t.Helper()
	if r := f.call(t, Lookup, `{"order_id":"`+order+`"}`, "lookup-"+order); r.IsError || r.Content.Outcome != "executed" {
		t.Fatalf("lookup_order %s: %+v", order, r)
	}
	if _, err := f.env.Gate.Kernel().Proposer(blackboard.RolePlanner, "analyst").Submit(t.Context(), kernel.Entry{TraceID: f.env.TraceID, Slot: blackboard.Beliefs,
		Kind: "refund_due", Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}}); err != nil {
		t.Fatal(err)
	}
}

func wantRefused(t *testing.T, r Reply, code reason.Code) {
	t.Helper()
	if !r.IsError || r.Content.Code != code {
		t.Fatalf("reply %+v, want an error result with code %s", r, code)
	}
	if r.Content.Hint == "" {
		t.Fatalf("refusal %s carries no hint for the model", code)
	}
}

func (f *fixture) wantRuns(t *testing.T, n int) {
	t.Helper()
	if got := f.env.Runs(); got != n {
		t.Fatalf("refund effect ran %d times, want %d", got, n)
	}
}

// A refusal is a tool result marked as an error, with the gate's code and
// hint, never a protocol error.
func testRefused(t *testing.T, f *fixture) {
	wantRefused(t, f.call(t, Refund, `{"order_id":"A1","amount":100}`, "c1"), reason.NoCommittedBelief)
	wantRefused(t, f.call(t, Close, `{}`, "c2"), reason.ToolNotPermitted)
	wantRefused(t, f.call(t, "no_such_tool", `{}`, "c3"), reason.ToolUnknown)
	f.wantRuns(t, 0)
}

// An allowed call runs its tool once, the same call retried runs it no
// more, and a refused call never runs it.
func testRunsOnce(t *testing.T, f *fixture) {
	for range 2 {
		if r := f.call(t, Lookup, `{"order_id":"A1"}`, "c1"); r.IsError || r.Content.Output["amount"] != 700.0 {
			t.Fatalf("lookup: %+v", r)
		}
	}
	if n := f.env.Lookups(); n != 1 {
		t.Fatalf("the lookup ran %d times for one call, want 1", n)
	}
	wantRefused(t, f.call(t, Refund, `{"order_id":"A1","amount":100}`, "c2"), reason.NoCommittedBelief)
	wantRefused(t, f.call(t, Refund, `{"order_id":"A1"}`, "c3"), reason.InvalidArguments)
	f.wantRuns(t, 0)
}

// The tool list is the gate's surface for the caller: never a tool outside
// the contract, and a tool whose beliefs are not established only once
// they are.
func testSurfacing(t *testing.T, f *fixture) {
	list := func() []string {
		names, err := f.a.ListTools(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(names)
		return names
	}
	if got := list(); !slices.Equal(got, []string{Lookup}) {
		t.Fatalf("tools before the belief: %v, want [%s]", got, Lookup)
	}
	f.ready(t, "A1")
	if got := list(); !slices.Equal(got, []string{Refund, Lookup}) {
		t.Fatalf("tools after the belief: %v, want [%s %s]", got, Refund, Lookup)
	}
}

func approveAsShown(a Approval) Decision { return Decision{Approve: true, Digest: a.Digest} }

// A call that needs approval asks the person, with the arguments and
// their digest, and runs once approved; retried, it runs no more.
func testApprove(t *testing.T, f *fixture) {
	f.ready(t, "A1")
	f.env.setDecide(approveAsShown)
	args := `{"order_id":"A1","amount":700}`
	r := f.call(t, Refund, args, "c1")
	if r.IsError || r.Content.Outcome != "executed" || r.Content.Output["refund_id"] != "re_A1" {
		t.Fatalf("approved refund: %+v", r)
	}
	asked := f.env.questions()
	want, err := toolgate.ArgsDigest(blackboard.Payload{"order_id": "A1", "amount": 700.0})
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0].Tool != Refund || asked[0].Digest != want || asked[0].Args["amount"] != 700.0 || asked[0].ActionID == "" {
		t.Fatalf("the person was asked %+v, want one question about %s with digest %s", asked, args, want)
	}
	if r := f.call(t, Refund, args, "c1"); r.IsError || r.Content.Output["refund_id"] != "re_A1" {
		t.Fatalf("retried approved refund: %+v", r)
	}
	f.wantRuns(t, 1)
}

// A denied call does not run, and its retry does not either.
func testDeny(t *testing.T, f *fixture) {
	f.ready(t, "A1")
	args := `{"order_id":"A1","amount":700}`
	r := f.call(t, Refund, args, "c1")
	if !r.IsError || r.Content.Outcome == "executed" {
		t.Fatalf("denied refund: %+v", r)
	}
	if len(f.env.questions()) != 1 {
		t.Fatalf("the person was asked %d times, want 1", len(f.env.questions()))
	}
	if r := f.call(t, Refund, args, "c1"); !r.IsError {
		t.Fatalf("retried denied refund: %+v", r)
	}
	f.wantRuns(t, 0)
}

// An approval of other arguments than the committed ones runs nothing:
// the call still waits for an approval of its own.
func testTamperedApproval(t *testing.T, f *fixture) {
	f.ready(t, "A1")
	other, err := toolgate.ArgsDigest(blackboard.Payload{"order_id": "A1", "amount": 1.0})
	if err != nil {
		t.Fatal(err)
	}
	f.env.setDecide(func(Approval) Decision { return Decision{Approve: true, Digest: other} })
	if r := f.call(t, Refund, `{"order_id":"A1","amount":700}`, "c1"); r.Content.Outcome == "executed" || r.Content.Output != nil {
		t.Fatalf("refund approved for other arguments: %+v", r)
	}
	f.wantRuns(t, 0)
}

// The same call id with other arguments is refused, and learns nothing of
// the first call.
func testTamperedRetry(t *testing.T, f *fixture) {
	f.ready(t, "B2")
	if r := f.call(t, Refund, `{"order_id":"B2","amount":100}`, "c1"); r.IsError {
		t.Fatalf("refund: %+v", r)
	}
	r := f.call(t, Refund, `{"order_id":"B2","amount":90}`, "c1")
	wantRefused(t, r, reason.RetryKeyConflict)
	if r.Content.Output != nil {
		t.Fatalf("conflicting retry shown the first call's output: %+v", r)
	}
	f.wantRuns(t, 1)
}

// A second refund of one order, under another call id, is a duplicate.
func testDuplicate(t *testing.T, f *fixture) {
	f.ready(t, "B2")
	if r := f.call(t, Refund, `{"order_id":"B2","amount":100}`, "c1"); r.IsError {
		t.Fatalf("refund: %+v", r)
	}
	wantRefused(t, f.call(t, Refund, `{"order_id":"B2","amount":50}`, "c2"), reason.DuplicateAction)
	f.wantRuns(t, 1)
}

// The same call delivered twice gets the first answer and runs once.
func testSameCallID(t *testing.T, f *fixture) {
	f.ready(t, "B2")
	args := `{"order_id":"B2","amount":100}`
	first := f.call(t, Refund, args, "c1")
	second := f.call(t, Refund, args, "c1")
	if first.IsError || second.IsError || first.Content.Output["refund_id"] != "re_B2" || second.Content.Output["refund_id"] != "re_B2" {
		t.Fatalf("first %+v, retried %+v", first, second)
	}
	f.wantRuns(t, 1)
}

// A process that dies after the effect and before its result is recorded
// leaves the call to its retry: under the same call id, once the lease is
// over, the effect is called again with the same idempotency key, and the
// refund is made once.
func testCrash(t *testing.T, f *fixture) {
	f.ready(t, "B2")
	f.env.mu.Lock()
	f.env.crash = true
	f.env.mu.Unlock()
	args := `{"order_id":"B2","amount":100}`
	if r, err := f.a.CallTool(t.Context(), Refund, json.RawMessage(args), "c1"); err == nil && !r.IsError && r.Content.Outcome == "executed" {
		t.Fatalf("a call whose result was not recorded reported %+v", r)
	}
	time.Sleep(Lease + Lease/2)
	r := f.call(t, Refund, args, "c1")
	if r.IsError || r.Content.Outcome != "executed" || r.Content.Output["refund_id"] != "re_B2" {
		t.Fatalf("retry after the crash: %+v", r)
	}
	f.env.mu.Lock()
	paid, runs := len(f.env.paid), f.env.runs
	f.env.mu.Unlock()
	if paid != 1 || runs != 2 {
		t.Fatalf("effect called %d times for %d keys, want twice for one key", runs, paid)
	}
}

// The caller's tracing context reaches the effect: the effect runs in the
// trace of the span the call was made in.
func testTraceContext(t *testing.T, f *fixture) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0xbb, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
		SpanID: trace.SpanID{0xbb, 1, 2, 3, 4, 5, 6, 7}, TraceFlags: trace.FlagsSampled})
	ctx := trace.ContextWithSpanContext(t.Context(), sc)
	if r, err := f.a.CallTool(ctx, Lookup, json.RawMessage(`{"order_id":"A1"}`), "c1"); err != nil || r.IsError {
		t.Fatalf("lookup: %+v, %v", r, err)
	}
	f.env.mu.Lock()
	seen := slices.Clone(f.env.lookedUp)
	f.env.mu.Unlock()
	if len(seen) != 1 || seen[0].TraceID() != sc.TraceID() {
		t.Fatalf("the effect ran in traces %v, want %s", seen, sc.TraceID())
	}
}

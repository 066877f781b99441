package adaptertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
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
// [toolgate.Result.ForModel] and its error flag, as the adapter's
// framework carried them.
type Reply struct {
	IsError bool
	Content toolgate.ReplyContent
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

// Env is one case's gate and the person who decides its approvals.
type Env struct {
	Gate    *toolgate.Gate
	Caller  string
	TraceID string
	// Approver is the identity an adapter approves under: not the caller.
	Approver string

	mu     sync.Mutex
	decide func(Approval) Decision
	asked  []Approval
	runs   int
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

// NewEnv builds the suite's gate (closed with t.Cleanup) and its Env.
func NewEnv(t testing.TB) *Env {
	t.Helper()
	env := &Env{Caller: Caller, TraceID: TraceID, Approver: "human:reviewer"}
	amounts := map[string]float64{"A1": 700, "B2": 100}
	tools := []toolgate.Tool{
		{
			Name:        Lookup,
			Description: "Look up an order by id.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`),
			Result:      "order",
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				id, _ := inv.Args["order_id"].(string)
				amount, ok := amounts[id]
				if !ok {
					return nil, errors.New("no such order")
				}
				return blackboard.Payload{"order_id": id, "amount": amount}, nil
			},
		},
		{
			Name:        Refund,
			Description: "Refund an order.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"},"amount":{"type":"number"}},` +
				`"required":["order_id","amount"]}`),
			Requires: []string{"refund_due"},
			Bindings: []toolgate.Binding{
				{Arg: "order_id", Percept: "order", Op: toolgate.Equal},
				{Arg: "amount", Percept: "order", Op: toolgate.AtMost},
			},
			Once:     toolgate.OnceBy("order_id"),
			Result:   "refund",
			Approval: toolgate.ApprovalPolicy{When: "amount > 500"},
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				env.mu.Lock()
				defer env.mu.Unlock()
				env.runs++
				return blackboard.Payload{"refund_id": "re_" + fmt.Sprint(inv.Args["order_id"]), "amount": inv.Args["amount"]}, nil
			},
		},
		{
			Name:        Close,
			Description: "Close the customer's account.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{}}`),
			Effect: func(context.Context, toolgate.Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"closed": true}, nil
			},
		},
	}
	g, err := toolgate.New(t.Context(), toolgate.WithTools(tools...),
		toolgate.WithKernel(kernel.WithBeliefSpecs(kernel.BeliefSpec{Kind: "refund_due", DependsOn: []string{"order"}})),
		toolgate.WithContracts(toolgate.Contract{Name: Caller, Tools: []string{Lookup, Refund}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	env.Gate = g
	return env
}

// Run runs the suite: each case is a subtest with a new [Env] and the
// adapter newAdapter builds on it.
func Run(t *testing.T, newAdapter func(t *testing.T, env *Env) Adapter) {
	t.Helper()
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			env := NewEnv(t)
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
		{"Surfacing", testSurfacing},
		{"ApproveAndResume", testApprove},
		{"Deny", testDeny},
		{"TamperedApproval", testTamperedApproval},
		{"TamperedRetry", testTamperedRetry},
		{"Duplicate", testDuplicate},
		{"SameCallID", testSameCallID},
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
	if _, err := f.env.Gate.Kernel().Planner("analyst").Submit(t.Context(), kernel.Entry{TraceID: f.env.TraceID, Slot: blackboard.Beliefs,
		Kind: "refund_due", Payload: blackboard.Payload{kernel.KeyValue: true, kernel.KeyDependsOn: []string{"order"}}}); err != nil {
		t.Fatal(err)
	}
}

func wantRefused(t *testing.T, r Reply, code blackboard.Code) {
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
	wantRefused(t, f.call(t, Refund, `{"order_id":"A1","amount":100}`, "c1"), blackboard.CodeNoCommittedBelief)
	wantRefused(t, f.call(t, Close, `{}`, "c2"), toolgate.CodeToolNotPermitted)
	wantRefused(t, f.call(t, "no_such_tool", `{}`, "c3"), toolgate.CodeToolUnknown)
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
	wantRefused(t, r, toolgate.CodeRetryKeyConflict)
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
	wantRefused(t, f.call(t, Refund, `{"order_id":"B2","amount":50}`, "c2"), blackboard.CodeDuplicateAction)
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

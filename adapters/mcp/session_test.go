package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blackboardkernel/bk/adapters/mcp"
	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/reply"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/toolgate"
)

type orderArgs struct {
	OrderID string `json:"order_id"`
}

type order struct {
	OrderID string  `json:"order_id"`
	Amount  float64 `json:"amount"`
}

type refundArgs struct {
	OrderID string  `json:"order_id"`
	Amount  float64 `json:"amount"`
}

type refund struct {
	RefundID string `json:"refund_id"`
}

// sessionGate is a gate whose lookup_order derives refund_due, which
// issue_refund (once per order, approval above 500) rests on; refunds
// counts its effect's runs.
func sessionGate(t *testing.T, refunds *atomic.Int32) *toolgate.Gate {
	t.Helper()
	lookup := toolgate.Func(toolgate.Tool{Unscoped: true, Name: "lookup_order", Result: "order",
		Derives: []toolgate.Derive{{Belief: "refund_due", Value: "result.amount > 0.0"}}},
		func(_ context.Context, _ toolgate.Invocation, a orderArgs) (order, error) {
			return order{OrderID: a.OrderID, Amount: 80}, nil
		})
	issue := toolgate.Func(toolgate.Tool{Unscoped: true, Name: "issue_refund", Result: "refund", Requires: []string{"refund_due"},
		Bindings: []toolgate.Binding{{Arg: "order_id", Percept: "order", Op: "equal"}},
		Once:     &kernel.OnceKey{Fields: []string{"order_id"}}, Approval: "amount > 500"},
		func(_ context.Context, _ toolgate.Invocation, a refundArgs) (refund, error) {
			refunds.Add(1)
			return refund{RefundID: "re_" + a.OrderID}, nil
		})
	g, err := toolgate.New(t.Context(), toolgate.Config{
		Tools:     []toolgate.Tool{lookup, issue},
		Contracts: map[string][]string{"support": {"lookup_order", "issue_refund"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// session connects one more client to server over in-memory transports.
func session(t *testing.T, server *sdk.Server) *sdk.ClientSession {
	t.Helper()
	return sessionWith(t, server, nil)
}

func sessionWith(t *testing.T, server *sdk.Server, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := server.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v1"}, opts).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func call(t *testing.T, cs *sdk.ClientSession, tool, args, key string) reply.Content {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: tool, Arguments: json.RawMessage(args), Meta: sdk.Meta{mcp.MetaRetryKey: key}})
	if err != nil {
		t.Fatal(err)
	}
	var got reply.Content
	if err := remarshal(res.StructuredContent, &got); err != nil {
		t.Fatal(err)
	}
	return got
}

func listed(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// Two sessions without session ids (in-memory, as stdio) are two traces
// by default: a belief one session's call derived does not ground the
// other's calls or surface its tools, and a retry key one session used is
// free in the other (the same key names another call, and replays
// nothing). The once-key spans sessions, as it spans traces: the order
// refunded in one session is a duplicate in the other.
func TestSessionsAreTraces(t *testing.T) {
	var refunds atomic.Int32
	g := sessionGate(t, &refunds)
	server := sdk.NewServer(&sdk.Implementation{Name: "support", Version: "v1"}, nil)
	if err := mcp.Govern(server, g, "support"); err != nil {
		t.Fatal(err)
	}
	a, b := session(t, server), session(t, server)

	if r := call(t, a, "lookup_order", `{"order_id":"A1"}`, "k1"); r.Outcome != audit.OutcomeExecuted {
		t.Fatalf("lookup in A: %+v", r)
	}
	if got := listed(t, a); !slices.Contains(got, "issue_refund") {
		t.Fatalf("A lists %v after its lookup, want issue_refund", got)
	}
	if got := listed(t, b); slices.Contains(got, "issue_refund") {
		t.Fatalf("B lists %v: it sees A's belief", got)
	}
	// B's refund under A's key: no belief of B's grounds it, and A's key
	// is no conflict in B.
	r := call(t, b, "issue_refund", `{"order_id":"A1","amount":50}`, "k1")
	if r.Outcome != audit.OutcomeRefused || r.Code == reason.RetryKeyConflict {
		t.Fatalf("refund in B resting on A's belief: %+v, want a refusal for the missing belief", r)
	}
	if r := call(t, a, "issue_refund", `{"order_id":"A1","amount":50}`, "r1"); r.Outcome != audit.OutcomeExecuted {
		t.Fatalf("refund in A: %+v", r)
	}
	// B grounds its own refund; A's retry key r1 replays nothing in B.
	if r := call(t, b, "lookup_order", `{"order_id":"A1"}`, "k2"); r.Outcome != audit.OutcomeExecuted {
		t.Fatalf("lookup in B: %+v", r)
	}
	r = call(t, b, "issue_refund", `{"order_id":"A1","amount":50}`, "r1")
	if r.Outcome != audit.OutcomeRefused || r.Code != reason.DuplicateAction {
		t.Fatalf("second refund of A1, in B under A's key: %+v, want DUPLICATE_ACTION (the once-key), not A's result", r)
	}
	if n := refunds.Load(); n != 1 {
		t.Fatalf("the refund ran %d times, want 1", n)
	}
}

// SessionTrace gives a session without an id one trace for its lifetime,
// and each such session its own.
func TestSessionTrace(t *testing.T) {
	server := sdk.NewServer(&sdk.Implementation{Name: "s", Version: "v1"}, nil)
	var seen []string
	for range 2 {
		st, ct := sdk.NewInMemoryTransports()
		ss, err := server.Connect(t.Context(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ss.Close()
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "c", Version: "v1"}, nil).Connect(t.Context(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		tr := mcp.SessionTrace(ss)
		if !strings.HasPrefix(tr, "mcp:") || len(tr) < len("mcp:")+16 || mcp.SessionTrace(ss) != tr {
			t.Fatalf("session trace %q, then %q: want one random trace per session", tr, mcp.SessionTrace(ss))
		}
		seen = append(seen, tr)
	}
	if seen[0] == seen[1] {
		t.Fatalf("two sessions share trace %q", seen[0])
	}
}

// A client in one session answers the approval of a call another session
// made (its client cannot show forms, so the call waits for its user): it
// names the other session's action and the digest of its arguments, which
// it can compute. The default trace keeps the sessions apart, so the gate
// takes no approval of an action outside the answering session's trace,
// and nothing runs.
func TestAttackApproveAnotherSessionsCall(t *testing.T) {
	var refunds atomic.Int32
	g := sessionGate(t, &refunds)
	server := sdk.NewServer(&sdk.Implementation{Name: "support", Version: "v1"}, nil)
	if err := mcp.Govern(server, g, "support", mcp.WithApprover("human:desk")); err != nil {
		t.Fatal(err)
	}
	victim := session(t, server)
	attacker := sessionWith(t, server, &sdk.ClientOptions{
		MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return nil, errors.New("not used")
		},
	})
	if r := call(t, victim, "lookup_order", `{"order_id":"A1"}`, "l1"); r.Outcome != audit.OutcomeExecuted {
		t.Fatalf("lookup: %+v", r)
	}
	args := `{"order_id":"A1","amount":700}`
	waiting := call(t, victim, "issue_refund", args, "c1")
	if waiting.Code != reason.ApprovalRequired || waiting.ApprovalID == "" {
		t.Fatalf("victim's refund: %+v, want APPROVAL_REQUIRED", waiting)
	}
	digest, err := toolgate.ArgsDigest(blackboard.Payload{"order_id": "A1", "amount": 700.0})
	if err != nil {
		t.Fatal(err)
	}
	res, err := attacker.CallTool(t.Context(), &sdk.CallToolParams{Name: "issue_refund", Arguments: json.RawMessage(args),
		RequestState:   waiting.ApprovalID,
		InputResponses: sdk.InputResponseMap{"approval": &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "digest": digest}}}})
	if n := refunds.Load(); n != 0 {
		t.Fatalf("the victim's refund ran %d times on another session's approval (%+v, %v)", n, res, err)
	}
	if err == nil && !res.IsError {
		t.Fatalf("the attacker's answer was taken: %+v", res)
	}
	// The victim's call still waits for its own user.
	if r := call(t, victim, "issue_refund", args, "c1"); r.Code != reason.ApprovalRequired || refunds.Load() != 0 {
		t.Fatalf("the victim's call, delivered again: %+v, want it still waiting", r)
	}
}

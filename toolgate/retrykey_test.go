package toolgate

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/reply"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// keyed makes a call under a retry key, failing the test on an error.
func (d *desk) keyed(g *Gate, key, caller, tool, args string) Result {
	d.t.Helper()
	res, err := g.Call(d.ctx, Call{ID: "fw-" + key, RetryKey: key, Tool: tool, Args: json.RawMessage(args), Caller: caller, TraceID: "t", Intent: "refund"})
	if err != nil {
		d.t.Fatalf("Call %s under %q: %v", tool, key, err)
	}
	return res
}

// A retry under the same key gets the first call's decision and result,
// from the same gate or another one over the store (another process): the
// effect ran once, whether the tool has a once-key (search_kb has none,
// lookup_order has none but a result kind, a keyed tool below) or not.
func TestRetryKeyReplaysTheResult(t *testing.T) {
	keyedTool := func(su *setup) {
		su.tools = append(su.tools, Tool{Unscoped: true, Name: "send_note", Parameters: json.RawMessage(orderSchema), Once: &kernel.OnceKey{Fields: []string{"order_id"}},
			Effect: func(context.Context, Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"sent": true}, nil
			}})
		su.contracts["support"] = append(su.contracts["support"], "send_note")
	}
	onStores(t, func(t *testing.T, d *desk) {
		first := d.keyed(d.g, "k1", "support", "lookup_order", `{"order_id":"A1"}`)
		wantOutcome(t, "first", first, audit.OutcomeExecuted, reason.EffectSucceeded)
		for i, g := range []*Gate{d.g, d.gate(Config{Tools: d.tools, Contracts: d.contracts})} {
			again := d.keyed(g, "k1", "support", "lookup_order", `{"order_id":"A1"}`)
			if again.Outcome != first.Outcome || again.ActionID != first.ActionID || again.DecisionID != first.DecisionID || again.Output["order_id"] != "A1" {
				t.Errorf("retry %d: %+v, want the first call's %+v", i, again, first)
			}
		}
		if n := len(d.invocations("lookup_order")); n != 1 {
			t.Errorf("lookup_order ran %d times, want once", n)
		}
		if n := d.committedActions("lookup_order"); n != 1 {
			t.Errorf("%d actions committed, want 1", n)
		}
		// A tool with a once-key: the retry is its result, not DUPLICATE_ACTION.
		note := d.keyed(d.g, "k2", "support", "send_note", `{"order_id":"A1"}`)
		wantOutcome(t, "send_note", note, audit.OutcomeExecuted, reason.EffectSucceeded)
		if again := d.keyed(d.g, "k2", "support", "send_note", `{"order_id":"A1"}`); again.Outcome != audit.OutcomeExecuted || again.ActionID != note.ActionID {
			t.Errorf("retry of a once-keyed call: %+v", again)
		}
		// A new key is a new call: the once-key refuses it.
		wantOutcome(t, "a new key", d.keyed(d.g, "k3", "support", "send_note", `{"order_id":"A1"}`), audit.OutcomeRefused, reason.DuplicateAction)
	}, keyedTool)
}

// A call the kernel refused is answered with the same refusal, without a
// new decision; a call without a key is decided anew each time.
func TestRetryKeyReplaysARefusal(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		first := d.keyed(d.g, "r1", "support", "issue_refund", `{"order_id":"A1","amount":100}`)
		wantOutcome(t, "refund before lookup", first, audit.OutcomeRefused, reason.NoCommittedBelief)
		d.ground("t", "A1")
		again := d.keyed(d.g, "r1", "support", "issue_refund", `{"order_id":"A1","amount":100}`)
		if again.Outcome != first.Outcome || again.Code != first.Code || again.DecisionID != first.DecisionID || again.RootCause != first.RootCause || again.Hint != first.Hint {
			t.Errorf("retry %+v, want the recorded refusal %+v", again, first)
		}
		if n := len(d.invocations("issue_refund")); n != 0 {
			t.Errorf("the refund ran %d times", n)
		}
	})
}

// A call waiting for approval carries the committed arguments and their
// digest; its retry says it still waits, and once approved, a retry runs
// it, once.
func TestRetryKeyWaitsThenRunsOnce(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		d.ground("t", "A1")
		args := `{"order_id":"A1","amount":700}`
		wait := d.keyed(d.g, "a1", "support", "issue_refund", args)
		wantOutcome(t, "refund", wait, audit.OutcomePendingApproval, reason.ApprovalRequired)
		if wait.ArgsDigest != d.digest(wait.ActionID) || wait.Args["amount"] != 700.0 || wait.Args["order_id"] != "A1" || len(wait.Args) != 2 {
			t.Errorf("pending result: digest %q args %v, want %q and the committed arguments", wait.ArgsDigest, wait.Args, d.digest(wait.ActionID))
		}
		again := d.keyed(d.g, "a1", "support", "issue_refund", args)
		if again.Outcome != audit.OutcomePendingApproval || again.ActionID != wait.ActionID || again.ArgsDigest != wait.ArgsDigest || again.Args["amount"] != 700.0 {
			t.Errorf("retry while waiting: %+v", again)
		}
		if ex := d.execute(wait.ActionID); ex.ArgsDigest != wait.ArgsDigest {
			t.Errorf("Execute while waiting: digest %q, want %q", ex.ArgsDigest, wait.ArgsDigest)
		}
		d.approve("t", wait.ActionID, "human:alice", time.Hour)
		for i := range 2 {
			res := d.keyed(d.g, "a1", "support", "issue_refund", args)
			if res.Outcome != audit.OutcomeExecuted || res.ActionID != wait.ActionID || res.Output["refund_id"] != "re_A1" {
				t.Errorf("retry %d after approval: %+v", i, res)
			}
		}
		if n := len(d.invocations("issue_refund")); n != 1 {
			t.Errorf("the refund ran %d times, want once", n)
		}
	})
}

// While another driver runs the effect, a retry says so (CALL_RUNNING,
// not a failure) and starts nothing; after, it gets the result.
func TestRetryKeyWhileRunning(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		started, release := make(chan struct{}), make(chan struct{})
		d.setEffect("search_kb", func(ctx context.Context, inv Invocation) (blackboard.Payload, error) {
			close(started)
			<-release
			return blackboard.Payload{"hits": []any{"x"}}, nil
		})
		var first Result
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			first, _ = d.g.Call(d.ctx, Call{RetryKey: "s1", Tool: "search_kb", Args: json.RawMessage(`{"query":"q"}`), Caller: "researcher", TraceID: "t"})
		}()
		<-started
		running, err := d.g.Call(d.ctx, Call{RetryKey: "s1", Tool: "search_kb", Args: json.RawMessage(`{"query":"q"}`), Caller: "researcher", TraceID: "t"})
		if err != nil || running.Outcome != audit.OutcomeCommitted || running.Code != reason.CallRunning || running.ActionID == "" || running.Hint == "" {
			t.Errorf("retry while running: %+v %v", running, err)
		}
		if _, failed := running.Failure(); failed {
			t.Error("a running call is typed as a failure")
		}
		if reply.IsError(running.Outcome) {
			t.Errorf("a running call renders as an error: %s", running.ForModel())
		}
		close(release)
		wg.Wait()
		after, err := d.g.Call(d.ctx, Call{RetryKey: "s1", Tool: "search_kb", Args: json.RawMessage(`{"query":"q"}`), Caller: "researcher", TraceID: "t"})
		if err != nil || after.Outcome != audit.OutcomeExecuted || after.ActionID != first.ActionID || after.ActionID != running.ActionID {
			t.Errorf("retry after: %+v %v; first %+v", after, err, first)
		}
		if n := len(d.invocations("search_kb")); n != 1 {
			t.Errorf("search_kb ran %d times, want once", n)
		}
	})
}

// Concurrent calls under one key, through two gates over the store: one
// action, one effect, the same result for all.
func TestRetryKeyConcurrent(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		other := d.gate(Config{Tools: d.tools, Contracts: d.contracts})
		const n = 6
		results := make([]Result, n)
		var wg sync.WaitGroup
		for i := range n {
			g := d.g
			if i%2 == 1 {
				g = other
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := g.Call(d.ctx, Call{RetryKey: "c1", Tool: "search_kb", Args: json.RawMessage(`{"query":"q"}`), Caller: "researcher", TraceID: "t"})
				if err != nil {
					t.Errorf("call %d: %v", i, err)
				}
				results[i] = res
			}()
		}
		wg.Wait()
		for i, res := range results {
			if res.ActionID != results[0].ActionID || res.ActionID == "" || res.Code != reason.EffectSucceeded && res.Code != reason.CallRunning {
				t.Errorf("call %d: %+v, first %+v", i, res, results[0])
			}
		}
		if got := len(d.invocations("search_kb")); got != 1 {
			t.Errorf("search_kb ran %d times, want once", got)
		}
	})
}

// TestAttackRetryKeyReuse: a call that reuses another call's retry key
// (another caller, other arguments, another tool) never gets the first
// call's result, output or action, and runs nothing: RETRY_KEY_CONFLICT,
// typed, not retryable, with a record.
func TestAttackRetryKeyReuse(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		d.ground("t", "A1")
		first := d.keyed(d.g, "x1", "support", "issue_refund", `{"order_id":"A1","amount":100}`)
		wantOutcome(t, "refund", first, audit.OutcomeExecuted, reason.EffectSucceeded)
		for _, tc := range []struct{ name, caller, tool, args string }{
			{"other arguments", "support", "issue_refund", `{"order_id":"A1","amount":400}`},
			{"arguments that do not parse", "support", "issue_refund", `{"order_id":`},
			{"another caller", "researcher", "issue_refund", `{"order_id":"A1","amount":100}`},
			{"another tool", "support", "lookup_order", `{"order_id":"A1"}`},
			{"an unknown tool", "support", "nope", `{}`},
		} {
			res := d.keyed(d.g, "x1", tc.caller, tc.tool, tc.args)
			wantOutcome(t, tc.name, res, audit.OutcomeRefused, reason.RetryKeyConflict)
			if res.ActionID != "" || res.Output != nil || strings.Contains(res.ForModel(), "re_A1") {
				t.Errorf("%s: the conflict shows the first call: %+v", tc.name, res)
			}
			if f, ok := res.Failure(); !ok || f.Retryable() {
				t.Errorf("%s: failure %v %v, want a failure that is not retryable", tc.name, f, ok)
			}
		}
		if n := len(d.invocations("issue_refund")); n != 1 {
			t.Errorf("the refund ran %d times, want once", n)
		}
		if n := len(d.invocations("lookup_order")); n != 1 {
			t.Errorf("lookup_order ran %d times, want once (the grounding)", n)
		}
		if recs := d.decisions(audit.Query{TraceID: "t", Outcome: audit.OutcomeRefused}); len(recs) != 5 || recs[0].Context["retry_key"] != "x1" {
			t.Errorf("%d refusal records, want 5 naming the key: %+v", len(recs), recs)
		}
	})
}

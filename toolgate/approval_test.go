package toolgate

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// pendingRefund grounds order in trace and asks for a refund that needs
// approval.
func (d *desk) pendingRefund(trace, order string, amount float64) Result {
	d.t.Helper()
	d.ground(trace, order)
	res := d.refund(trace, order, amount)
	if res.Outcome != audit.OutcomePendingApproval || res.Code != reason.ApprovalRequired || res.ActionID == "" {
		d.t.Fatalf("refund of %v: %+v, want it waiting for approval", amount, res)
	}
	return res
}

func TestApprovalFlow(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t", "A1", 700)
		if n := len(d.invocations("issue_refund")); n != 0 {
			t.Fatalf("the refund ran before approval (%d calls)", n)
		}
		if !strings.Contains(wait.Hint, wait.ActionID) {
			t.Errorf("hint %q does not name the approval id", wait.Hint)
		}
		// Execute before anyone decided: still waiting, nothing runs.
		wantOutcome(t, "execute before approval", d.execute(wait.ActionID), audit.OutcomePendingApproval, reason.ApprovalRequired)
		pending, err := d.g.Pending(d.ctx, "t")
		if err != nil || len(pending) != 1 {
			t.Fatalf("Pending: %+v %v", pending, err)
		}
		p := pending[0]
		if p.ActionID != wait.ActionID || p.Tool != "issue_refund" || p.Caller != "support" || p.CallID != "call_issue_refund" ||
			p.Args["amount"] != 700.0 || p.Digest != d.digest(wait.ActionID) || !strings.Contains(p.Reason, "amount > 500") {
			t.Errorf("pending %+v", p)
		}
		approval := d.approve("t", wait.ActionID, "human:alice", time.Hour)
		res := d.execute(wait.ActionID)
		wantOutcome(t, "execute after approval", res, audit.OutcomeExecuted, reason.EffectSucceeded)
		if res.Output["refund_id"] != "re_A1" || res.ActionID != wait.ActionID {
			t.Errorf("result %+v", res)
		}
		calls := d.invocations("issue_refund")
		if len(calls) != 1 || calls[0].Attempt != 1 || calls[0].Key == "" || calls[0].ActionID != wait.ActionID {
			t.Fatalf("effect calls %+v", calls)
		}
		// Single use: the approval was consumed by the first attempt, and
		// a second Execute returns the recorded result without running
		// the effect again.
		if holder, err := d.k.Governor().ClaimedBy(d.ctx, approvalKey(approval.ID)); err != nil || !strings.HasPrefix(holder, "percepts:t:") {
			t.Errorf("approval %s consumed by %q (%v), want the first attempt", approval.ID, holder, err)
		}
		again := d.execute(wait.ActionID)
		if again.Outcome != audit.OutcomeExecuted || again.DecisionID != res.DecisionID || again.Output["refund_id"] != "re_A1" {
			t.Errorf("second execute %+v, want the recorded result %+v", again, res)
		}
		if n := len(d.invocations("issue_refund")); n != 1 {
			t.Errorf("the effect ran %d times, want once", n)
		}
		if pending, _ := d.g.Pending(d.ctx, "t"); len(pending) != 0 {
			t.Errorf("still pending: %+v", pending)
		}
		// The result's decision record names the approval.
		recs := d.decisions(audit.Query{TraceID: "t", Tool: "issue_refund", Outcome: audit.OutcomeExecuted})
		if len(recs) != 1 || len(recs[0].Approvals) != 1 || recs[0].Approvals[0] != approval.ID || recs[0].Kind != "issue_refund" {
			t.Errorf("executed records %+v", recs)
		}
		// A small refund needs no approval.
		d.ground("t2", "B2")
		wantOutcome(t, "small refund", d.refund("t2", "B2", 100), audit.OutcomeExecuted, reason.EffectSucceeded)
	})
}

func TestApprovalBinding(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t", "A1", 700)
		d.approve("t", wait.ActionID, "human:alice", time.Hour)
		// The agent resumes with a changed amount: the approval binds the
		// digest of 700, so 7000 does not run.
		before := len(d.invocations("issue_refund"))
		res, err := d.g.Resume(d.ctx, "t", wait.ActionID, json.RawMessage(`{"order_id":"A1","amount":7000}`))
		if err != nil {
			t.Fatal(err)
		}
		wantOutcome(t, "resume with a changed amount", res, audit.OutcomeRefused, reason.ApprovalMismatch)
		if !strings.Contains(res.Hint, "new approval") {
			t.Errorf("hint %q", res.Hint)
		}
		if len(d.invocations("issue_refund")) != before {
			t.Error("the changed refund ran")
		}
		// What the check stops: the changed arguments have another digest,
		// and nothing else in the action would have told them apart.
		changed, _ := ArgsDigest(blackboard.Payload{"order_id": "A1", "amount": 7000.0})
		if changed == d.digest(wait.ActionID) {
			t.Fatal("digests of different amounts agree")
		}
		if _, err := d.g.Resume(d.ctx, "other", wait.ActionID, json.RawMessage(`{"order_id":"A1","amount":700}`)); !errors.Is(err, kernel.ErrInvalidReference) {
			t.Errorf("resume in another trace: %v", err)
		}
		// Resumed with the approved arguments it runs, once.
		res, err = d.g.Resume(d.ctx, "t", wait.ActionID, json.RawMessage(`{"amount":700,"order_id":"A1"}`))
		if err != nil {
			t.Fatal(err)
		}
		wantOutcome(t, "resume with the approved arguments", res, audit.OutcomeExecuted, reason.EffectSucceeded)
		if n := len(d.invocations("issue_refund")); n != 1 || d.invocations("issue_refund")[0].Args["amount"] != 700.0 {
			t.Errorf("effect calls %+v", d.invocations("issue_refund"))
		}
		// Once it has run, a changed resume is still refused, not
		// answered with the result of other arguments.
		res, _ = d.g.Resume(d.ctx, "t", wait.ActionID, json.RawMessage(`{"order_id":"A1","amount":1}`))
		wantOutcome(t, "changed resume after the run", res, audit.OutcomeRefused, reason.ApprovalMismatch)
	})
}

func TestApprovalOfAnotherAction(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		a := d.pendingRefund("t1", "A1", 700)
		b := d.pendingRefund("t2", "A1", 700) // same order and amount: the same digest
		d.approve("t1", a.ActionID, "human:alice", time.Hour)
		// A's approval does nothing for B: approvals name their action.
		wantOutcome(t, "execute B with A approved", d.execute(b.ActionID), audit.OutcomePendingApproval, reason.ApprovalRequired)
		if n := len(d.invocations("issue_refund")); n != 0 {
			t.Errorf("B ran on A's approval")
		}
		// Nor can A's approval be recorded for B: the kernel takes the
		// action from the trace the approval is written in.
		if _, err := d.g.Approver("human:alice").Decide(d.ctx, audit.Approval{TraceID: "t2", ActionID: a.ActionID, Digest: d.digest(a.ActionID), Decision: audit.Approved, Note: ""}); !errors.Is(err, kernel.ErrInvalidReference) {
			t.Errorf("A's approval in B's trace: %v", err)
		}
		wantOutcome(t, "execute A", d.execute(a.ActionID), audit.OutcomeExecuted, reason.EffectSucceeded)
	})
}

func TestApprovalExpiry(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t", "A1", 700)
		d.approve("t", wait.ActionID, "human:alice", time.Hour)
		d.clock.Advance(2 * time.Hour)
		res := d.execute(wait.ActionID)
		wantOutcome(t, "execute after the approval expired", res, audit.OutcomeRefused, reason.ApprovalExpired)
		checkEscalated(t, d, wait, res, reason.ApprovalExpired)
	})
}

func TestApprovalDenied(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t", "A1", 700)
		if _, err := d.g.Approver("human:bob").Decide(d.ctx, audit.Approval{TraceID: "t", ActionID: wait.ActionID, Digest: d.digest(wait.ActionID), Decision: audit.Denied, Note: "customer is abusing refunds"}); err != nil {
			t.Fatal(err)
		}
		res := d.execute(wait.ActionID)
		wantOutcome(t, "execute after a denial", res, audit.OutcomeRefused, reason.ApprovalDenied)
		if res.RootCause.Detail != "customer is abusing refunds" {
			t.Errorf("root cause %+v, want the denial's note", res.RootCause)
		}
		checkEscalated(t, d, wait, res, reason.ApprovalDenied)
	})
}

// checkEscalated checks an escalation: no effect, the fallback committed
// once with the code as reason, a decision record with outcome escalated,
// and the same answer on every later Execute.
func checkEscalated(t *testing.T, d *desk, wait, res Result, code reason.Code) {
	t.Helper()
	if n := len(d.invocations("issue_refund")); n != 0 {
		t.Errorf("the refund ran %d times", n)
	}
	if !strings.Contains(res.Hint, "queued for review") {
		t.Errorf("hint %q", res.Hint)
	}
	fallbacks := 0
	for _, r := range d.kinds(blackboard.Actions, kernel.FallbackQueueForReview) {
		if r.Mode != blackboard.ModeCommit {
			continue
		}
		fallbacks++
		if r.ID != res.FallbackID || r.Payload["reason"] != string(code) || r.Payload["escalates"] != wait.ActionID {
			t.Errorf("fallback %+v (result names %s)", r, res.FallbackID)
		}
	}
	if fallbacks != 1 {
		t.Errorf("%d fallbacks committed, want 1", fallbacks)
	}
	recs := d.decisions(audit.Query{TraceID: "t", Tool: "issue_refund", Outcome: audit.OutcomeEscalated})
	if len(recs) != 1 || recs[0].Code != code || recs[0].ID != res.DecisionID || recs[0].Kind != "issue_refund" || len(recs[0].Approvals) != 1 {
		t.Errorf("escalation records %+v", recs)
	}
	again := d.execute(wait.ActionID)
	if again.Outcome != audit.OutcomeRefused || again.Code != code || again.FallbackID != res.FallbackID {
		t.Errorf("second execute %+v, want %+v", again, res)
	}
	// A later approval cannot revive it: the escalation is its result
	// and the safe fallback follows it (the action is retired too, its
	// once-key slot freed), so it takes no decision at all.
	before := len(d.records())
	_, err := d.g.Approver("human:carol").Decide(d.ctx, audit.Approval{TraceID: "t", ActionID: wait.ActionID, Digest: d.digest(wait.ActionID), Decision: audit.Approved, Note: ""})
	if de := (*decidedError)(nil); !errors.As(err, &de) || de.Why != settledFallback || de.ActionID != wait.ActionID {
		t.Errorf("approval of an escalated action: %v, want ErrDecided (fallback)", err)
	}
	if n := len(d.records()); n != before {
		t.Errorf("a refused approval wrote %d records", n-before)
	}
	if again := d.execute(wait.ActionID); again.Code != code || len(d.invocations("issue_refund")) != 0 {
		t.Errorf("execute after a new approval: %+v", again)
	}
	if n := d.committedActions(kernel.FallbackQueueForReview); n != 1 {
		t.Errorf("%d fallbacks after retries, want 1", n)
	}
}

func TestSelfApproval(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t", "A1", 700)
		// The caller's own writer cannot approve its call.
		if _, err := d.g.Approver(audit.CallerWriter("support")).Decide(d.ctx, audit.Approval{TraceID: "t", ActionID: wait.ActionID, Digest: d.digest(wait.ActionID), Decision: audit.Approved, Note: "fine by me"}); !errors.Is(err, blackboard.ErrPermission) {
			t.Errorf("self-approval: %v, want ErrPermission", err)
		}
		wantOutcome(t, "execute after the refused self-approval", d.execute(wait.ActionID), audit.OutcomePendingApproval, reason.ApprovalRequired)
		if n := len(d.invocations("issue_refund")); n != 0 {
			t.Errorf("the refund ran")
		}
	})
}

// TestApproverRefusesTheCallerByName: an approver named as the gate
// caller that proposed the action (whose writer is audit.CallerWriter of that
// name) cannot decide it either; nothing is recorded and nothing runs.
func TestApproverRefusesTheCallerByName(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t", "A1", 700)
		for _, v := range []audit.Verdict{audit.Approved, audit.Denied} {
			if _, err := d.g.Approver("support").Decide(d.ctx, audit.Approval{TraceID: "t", ActionID: wait.ActionID, Digest: d.digest(wait.ActionID), Decision: v, Note: "mine"}); !errors.Is(err, blackboard.ErrPermission) {
				t.Errorf("the caller deciding its own call: %v, want ErrPermission", err)
			}
		}
		wantOutcome(t, "execute after the refused decisions", d.execute(wait.ActionID), audit.OutcomePendingApproval, reason.ApprovalRequired)
		if n := len(d.invocations("issue_refund")); n != 0 {
			t.Errorf("the refund ran")
		}
	})
}

func TestApprovalIdentityRequired(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t", "A1", 700)
		if _, err := d.g.Approver("").Decide(d.ctx, audit.Approval{TraceID: "t", ActionID: wait.ActionID, Digest: d.digest(wait.ActionID), Decision: audit.Approved, Note: ""}); !errors.Is(err, blackboard.ErrInvalidInput) {
			t.Errorf("anonymous approval: %v, want ErrInvalidInput", err)
		}
		wantOutcome(t, "execute", d.execute(wait.ActionID), audit.OutcomePendingApproval, reason.ApprovalRequired)
	})
}

func TestApprovalPolicies(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		d.ground("t", "A1")
		// The rule reads reason, which the call may leave out: a rule that
		// cannot be evaluated needs approval (fails closed).
		res := d.call("t", "support", "", "issue_refund", `{"order_id":"A1","amount":10}`)
		wantOutcome(t, "rule on a missing argument", res, audit.OutcomePendingApproval, reason.ApprovalRequired)
		recs := d.decisions(audit.Query{TraceID: "t", Tool: "issue_refund", Outcome: audit.OutcomePendingApproval})
		if len(recs) != 1 || !strings.Contains(recs[0].Context["approval_reason"].(string), "fails closed") {
			t.Errorf("pending records %+v", recs)
		}
		d.ground("t2", "A2")
		wantOutcome(t, "rule false", d.call("t2", "support", "", "issue_refund", `{"order_id":"A2","amount":10,"reason":"late"}`),
			audit.OutcomeExecuted, reason.EffectSucceeded)
		d.ground("t3", "A3")
		wantOutcome(t, "rule true", d.call("t3", "support", "", "issue_refund", `{"order_id":"A3","amount":10,"reason":"other"}`),
			audit.OutcomePendingApproval, reason.ApprovalRequired)
		// "true": every search needs approval.
		wantOutcome(t, "always", d.call("t", "researcher", "", "search_kb", `{"query":"x"}`), audit.OutcomePendingApproval, reason.ApprovalRequired)
	}, func(su *setup) {
		su.tools[1].Approval = `reason == "other" || args.amount > 500`
		su.tools[2].Approval = "true"
	})
}

func TestExecuteUnknown(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		d.ground("t", "A1")
		for _, id := range []string{"actions:t:999", "percepts:t:1"} {
			if _, err := d.g.Execute(d.ctx, id); !errors.Is(err, kernel.ErrInvalidReference) {
				t.Errorf("Execute(%s): %v, want kernel.ErrInvalidReference", id, err)
			}
		}
		// A refund committed past the gate (by the owner's own Governor,
		// as the caller's writer: a planner cannot, the action type is
		// the gate's) is not the gate's to run.
		dec, err := d.k.Governor().Submit(d.ctx, audit.CallerWriter("support"), kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: "issue_refund",
			Payload: blackboard.Payload{"order_id": "A1", "amount": 10.0, "requires_beliefs": []string{"refund_due"}}}, nil)
		if err != nil || !dec.Committed() {
			t.Fatal(dec.Code, err)
		}
		if _, err := d.g.Execute(d.ctx, dec.CommittedID); !errors.Is(err, kernel.ErrInvalidReference) {
			t.Errorf("Execute of an action the gate did not commit: %v", err)
		}
		ctx, cancel := context.WithCancel(d.ctx)
		cancel()
		if _, err := d.g.Execute(ctx, dec.CommittedID); !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled: %v", err)
		}
	})
}

// A caller that loses a tool while its call waits for approval does not get
// it run: the refusal is recorded for good, and Recover leaves it alone.
func TestRoleRevokedBeforeExecution(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t", "A1", 700)
		d.approve("t", wait.ActionID, "human:alice", time.Hour)
		revoked := d.gate(Config{Tools: d.tools, Contracts: map[string][]string{"support": {"lookup_order"}}})
		res, err := revoked.Execute(d.ctx, wait.ActionID)
		if err != nil {
			t.Fatal(err)
		}
		wantOutcome(t, "execute after the caller lost the tool", res, audit.OutcomeRefused, reason.ToolNotPermitted)
		d.clock.Advance(time.Hour)
		if rec, err := revoked.Recover(d.ctx); err != nil || len(rec) != 0 {
			t.Errorf("Recover: %+v %v", rec, err)
		}
		// Even the old configuration cannot run it now.
		wantOutcome(t, "execute with the old contracts", d.execute(wait.ActionID), audit.OutcomeRefused, reason.ToolNotPermitted)
		if n := len(d.invocations("issue_refund")); n != 0 {
			t.Errorf("the refund ran %d times", n)
		}
		if recs := d.decisions(audit.Query{TraceID: "t", Tool: "issue_refund", Outcome: audit.OutcomeRefused}); len(recs) != 1 {
			t.Errorf("%d refusal records, want 1", len(recs))
		}
	})
}

// The digest an approval binds: bookkeeping keys are not arguments, and
// numbers compare by value (0 and -0, 2 and 2.0 are one argument).
func TestArgsDigest(t *testing.T) {
	base := blackboard.Payload{"amount": 100.0, "order_id": "A1", "requires_beliefs": []string{"refund_due"}}
	d1, err := ArgsDigest(base)
	if err != nil {
		t.Fatal(err)
	}
	same := blackboard.Payload{"order_id": "A1", "amount": 100, "uses_stale_data": false, "type": "issue_refund"}
	if d2, _ := ArgsDigest(same); d2 != d1 {
		t.Errorf("digest changed with bookkeeping keys: %s vs %s", d2, d1)
	}
	if d3, _ := ArgsDigest(blackboard.Payload{"amount": 999.0, "order_id": "A1"}); d3 == d1 {
		t.Error("digest did not change with the amount")
	}
	pos, err1 := ArgsDigest(blackboard.Payload{"amount": 0.0, "n": 2.0})
	neg, err2 := ArgsDigest(blackboard.Payload{"amount": math.Copysign(0, -1), "n": 2})
	if err1 != nil || err2 != nil || pos != neg {
		t.Errorf("ArgsDigest of amount 0 and -0 (n 2.0 and 2): %q %v, %q %v; want one digest", pos, err1, neg, err2)
	}
	if _, err := ArgsDigest(blackboard.Payload{"bad": math.NaN()}); !errors.Is(err, blackboard.ErrInvalidPayload) {
		t.Errorf("digest of NaN: %v, want ErrInvalidPayload", err)
	}
}

// Approve and Deny refuse what does not bind one committed action of the
// trace, as one identity, for a bounded time, and write nothing then; what
// they write decodes as the approval it is, and Approvals lists it.
func TestApproverChecks(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t", "A1", 700)
		digest := d.digest(wait.ActionID)
		other, _ := ArgsDigest(blackboard.Payload{"order_id": "A1", "amount": 999.0})
		order, err := d.k.Reader().Find(d.ctx, "t", blackboard.Percepts, "order")
		if err != nil {
			t.Fatal(err)
		}
		before := len(d.records())
		alice := d.g.Approver("human:alice")
		for _, c := range []struct {
			name, trace, action, digest string
			ttl                         time.Duration
			want                        error
		}{
			{"changed arguments", "t", wait.ActionID, other, time.Hour, blackboard.ErrInvalidInput},
			{"another trace", "u", wait.ActionID, digest, time.Hour, kernel.ErrInvalidReference},
			{"not an action", "t", order.ID, digest, time.Hour, kernel.ErrInvalidReference},
			{"no such action", "t", "actions:t:99", digest, time.Hour, kernel.ErrInvalidReference},
			{"negative TTL", "t", wait.ActionID, digest, -time.Second, blackboard.ErrInvalidInput},
			{"TTL too long", "t", wait.ActionID, digest, audit.MaxApprovalTTL + time.Second, blackboard.ErrInvalidInput},
		} {
			if _, err := alice.Decide(d.ctx, audit.Approval{TraceID: c.trace, ActionID: c.action, Digest: c.digest, Decision: audit.Denied, Note: "", TTL: c.ttl}); !errors.Is(err, c.want) {
				t.Errorf("%s: %v, want %v", c.name, err, c.want)
			}
		}
		if n := len(d.records()); n != before {
			t.Errorf("refused approvals stored %d records", n-before)
		}
		rec, err := alice.Decide(d.ctx, audit.Approval{TraceID: "t", ActionID: wait.ActionID, Digest: digest, Decision: audit.Approved, Note: "ok for 700"})
		if err != nil {
			t.Fatal(err)
		}
		a, ok := audit.ApprovalOf(rec)
		if !ok || a.Approver != "human:alice" || a.Decision != audit.Approved || a.Digest != digest ||
			a.ActionID != wait.ActionID || a.Note != "ok for 700" || a.TTL != time.Hour || rec.Provenance.Role != blackboard.RoleApprover {
			t.Errorf("approval %+v (%+v)", a, rec)
		}
		var got []string
		for r, err := range d.g.x.approvals(d.ctx, "t", wait.ActionID) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, r.ID)
		}
		if len(got) != 1 || got[0] != rec.ID {
			t.Errorf("Approvals %v, want %s", got, rec.ID)
		}
	})
}

// An approval record that Approve would refuse (here by the action's own
// proposer, written through the Governor as a bug or a forger with the
// owner's capability would) is refused again when the action would run:
// the effect does not run.
func TestAttackApprovalByTheProposerAtExecution(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t", "A1", 700)
		f, err := audit.Approval{TraceID: "t", ActionID: wait.ActionID, Digest: d.digest(wait.ActionID), Decision: audit.Approved,
			Approver: audit.CallerWriter("support"), TTL: time.Hour}.Follow()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.k.Governor().Append(d.ctx, f); err != nil {
			t.Fatal(err)
		}
		wantOutcome(t, "execute on the proposer's approval", d.execute(wait.ActionID), audit.OutcomeRefused, reason.ApprovalMismatch)
		if n := len(d.invocations("issue_refund")); n != 0 {
			t.Errorf("the refund ran %d times", n)
		}
	})
}

// Pending with no trace lists the waiting actions of every trace,
// each with its own trace id, so that an approver can approve it there.
func TestPendingApprovalsOfAllTraces(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		want := map[string]string{} // action -> trace
		for _, trace := range []string{"t1", "t2"} {
			d.ground(trace, "A1")
			res := d.refund(trace, "A1", 600)
			wantOutcome(t, trace, res, audit.OutcomePendingApproval, reason.ApprovalRequired)
			want[res.ActionID] = trace
		}
		d.ground("t3", "A3")
		wantOutcome(t, "t3", d.refund("t3", "A3", 10), audit.OutcomeExecuted, reason.EffectSucceeded)
		pending, err := d.g.Pending(d.ctx, "")
		if err != nil || len(pending) != len(want) {
			t.Fatalf("Pending(\"\"): %+v %v, want %d", pending, err, len(want))
		}
		for _, p := range pending {
			if p.TraceID != want[p.ActionID] {
				t.Errorf("%s: trace %q, want %q", p.ActionID, p.TraceID, want[p.ActionID])
			}
			if _, err := d.g.Approver("alice").Decide(d.ctx, audit.Approval{TraceID: p.TraceID, ActionID: p.ActionID, Digest: p.Digest, Decision: audit.Approved, Note: "ok"}); err != nil {
				t.Errorf("Approve %s in %q: %v", p.ActionID, p.TraceID, err)
			}
			wantOutcome(t, "approved "+p.ActionID, d.execute(p.ActionID), audit.OutcomeExecuted, reason.EffectSucceeded)
		}
		if pending, err := d.g.Pending(d.ctx, ""); err != nil || len(pending) != 0 {
			t.Errorf("after execution: %+v %v, want none", pending, err)
		}
		if pending, err := d.g.Pending(d.ctx, "t2"); err != nil || len(pending) != 0 {
			t.Errorf("t2 after execution: %+v %v, want none", pending, err)
		}
	})
}

package toolgate

import (
	"errors"
	"sync"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// approvalsOf counts the approval records of an action.
func (d *desk) approvalsOf(trace, actionID string) int {
	d.t.Helper()
	n := 0
	for _, err := range d.g.x.approvals(d.ctx, trace, actionID) {
		if err != nil {
			d.t.Fatal(err)
		}
		n++
	}
	return n
}

// TestResolveApproveRunsOnce: an approval through Resolve runs the action
// at once and returns its result; a retried Resolve, sequential or
// concurrent, records nothing more and runs nothing again.
func TestResolveApproveRunsOnce(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t", "A1", 700)
		alice := d.g.Approver("human:alice")
		res, err := alice.Resolve(d.ctx, audit.Approval{TraceID: "t", ActionID: wait.ActionID, Digest: d.digest(wait.ActionID), Decision: audit.Approved, Note: "checked the order"})
		if err != nil {
			t.Fatal(err)
		}
		wantOutcome(t, "resolve approved", res, audit.OutcomeExecuted, reason.EffectSucceeded)
		if res.Output["refund_id"] != "re_A1" || res.ActionID != wait.ActionID {
			t.Errorf("result %+v", res)
		}
		var wg sync.WaitGroup
		again := make([]Result, 3)
		for i := range again {
			wg.Go(func() {
				r, err := alice.Resolve(d.ctx, audit.Approval{TraceID: "t", ActionID: wait.ActionID, Digest: d.digest(wait.ActionID), Decision: audit.Approved, Note: ""})
				if err != nil {
					t.Error(err)
				}
				again[i] = r
			})
		}
		wg.Wait()
		for _, r := range again {
			if r.Outcome != audit.OutcomeExecuted || r.DecisionID != res.DecisionID {
				t.Errorf("retried resolve %+v, want the recorded result %+v", r, res)
			}
		}
		if n := len(d.invocations("issue_refund")); n != 1 {
			t.Errorf("the effect ran %d times, want once", n)
		}
		if n := d.approvalsOf("t", wait.ActionID); n != 1 {
			t.Errorf("%d approval records, want 1", n)
		}
		recs := d.decisions(audit.Query{TraceID: "t", Tool: "issue_refund", Outcome: audit.OutcomeExecuted})
		if len(recs) != 1 || len(recs[0].Approvals) != 1 {
			t.Errorf("executed records %+v", recs)
		}
	})
}

// TestResolveDenyEscalates: a denial through Resolve escalates at once:
// no effect, the fallback committed, the note as root cause; a retry
// returns the same escalation.
func TestResolveDenyEscalates(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t", "A1", 700)
		bob := d.g.Approver("human:bob")
		res, err := bob.Resolve(d.ctx, audit.Approval{TraceID: "t", ActionID: wait.ActionID, Digest: d.digest(wait.ActionID), Decision: audit.Denied, Note: "customer is abusing refunds"})
		if err != nil {
			t.Fatal(err)
		}
		wantOutcome(t, "resolve denied", res, audit.OutcomeRefused, reason.ApprovalDenied)
		if res.RootCause.Detail != "customer is abusing refunds" {
			t.Errorf("root cause %+v, want the denial's note", res.RootCause)
		}
		again, err := bob.Resolve(d.ctx, audit.Approval{TraceID: "t", ActionID: wait.ActionID, Digest: d.digest(wait.ActionID), Decision: audit.Denied, Note: ""})
		if err != nil || again.Code != reason.ApprovalDenied || again.FallbackID != res.FallbackID {
			t.Errorf("retried denial %+v %v, want %+v", again, err, res)
		}
		// Approving after the escalation records nothing and runs nothing.
		late, err := d.g.Approver("human:carol").Resolve(d.ctx, audit.Approval{TraceID: "t", ActionID: wait.ActionID, Digest: d.digest(wait.ActionID), Decision: audit.Approved, Note: ""})
		if err != nil || late.Code != reason.ApprovalDenied {
			t.Errorf("approval after the escalation %+v %v", late, err)
		}
		if n := d.approvalsOf("t", wait.ActionID); n != 1 {
			t.Errorf("%d approval records, want 1", n)
		}
		checkEscalated(t, d, wait, res, reason.ApprovalDenied)
	})
}

// TestAttackResolveStaleDigest: a person approves what they were shown;
// a digest that does not match the action's committed arguments (other
// arguments, or a digest of a tampered retry) is refused, records nothing
// and runs nothing, before or after the action ran.
func TestAttackResolveStaleDigest(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t", "A1", 700)
		shown, err := ArgsDigest(blackboard.Payload{"order_id": "A1", "amount": 70.0})
		if err != nil {
			t.Fatal(err)
		}
		alice := d.g.Approver("human:alice")
		for _, decision := range []audit.Verdict{audit.Approved, audit.Denied} {
			if res, err := alice.Resolve(d.ctx, audit.Approval{TraceID: "t", ActionID: wait.ActionID, Digest: shown, Decision: decision, Note: ""}); !errors.Is(err, blackboard.ErrInvalidInput) || res.Outcome != "" {
				t.Errorf("%s with a stale digest: %+v %v, want ErrInvalidInput", decision, res, err)
			}
		}
		if n := d.approvalsOf("t", wait.ActionID); n != 0 {
			t.Errorf("%d approval records after a stale digest", n)
		}
		if n := len(d.invocations("issue_refund")); n != 0 {
			t.Errorf("the refund ran %d times on a stale digest", n)
		}
		wantOutcome(t, "execute after a stale digest", d.execute(wait.ActionID), audit.OutcomePendingApproval, reason.ApprovalRequired)
		// The digest shown runs it; a stale one on a retry is still refused.
		if res, err := alice.Resolve(d.ctx, audit.Approval{TraceID: "t", ActionID: wait.ActionID, Digest: d.digest(wait.ActionID), Decision: audit.Approved, Note: ""}); err != nil || res.Outcome != audit.OutcomeExecuted {
			t.Fatalf("resolve: %+v %v", res, err)
		}
		if _, err := alice.Resolve(d.ctx, audit.Approval{TraceID: "t", ActionID: wait.ActionID, Digest: shown, Decision: audit.Approved, Note: ""}); !errors.Is(err, blackboard.ErrInvalidInput) {
			t.Errorf("retry with a stale digest: %v, want ErrInvalidInput", err)
		}
	})
}

// TestResolveChecks: a decision other than approved or denied, an
// anonymous approver, the proposer, another trace or an id that is no
// action: each a typed error, nothing recorded, nothing run.
func TestResolveChecks(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t", "A1", 700)
		digest := d.digest(wait.ActionID)
		for _, c := range []struct {
			name          string
			approver      string
			trace, action string
			decision      audit.Verdict
			want          error
		}{
			{"unknown decision", "human:alice", "t", wait.ActionID, "maybe", blackboard.ErrInvalidInput},
			{"anonymous", "", "t", wait.ActionID, audit.Approved, blackboard.ErrInvalidInput},
			{"the proposer", audit.CallerWriter("support"), "t", wait.ActionID, audit.Approved, blackboard.ErrPermission},
			{"another trace", "human:alice", "other", wait.ActionID, audit.Approved, kernel.ErrInvalidReference},
			{"no action", "human:alice", "t", "actions:t:nope", audit.Approved, kernel.ErrInvalidReference},
		} {
			if _, err := d.g.Approver(c.approver).Resolve(d.ctx, audit.Approval{TraceID: c.trace, ActionID: c.action, Digest: digest, Decision: c.decision, Note: ""}); !errors.Is(err, c.want) {
				t.Errorf("%s: %v, want %v", c.name, err, c.want)
			}
		}
		if n := d.approvalsOf("t", wait.ActionID); n != 0 || len(d.invocations("issue_refund")) != 0 {
			t.Errorf("%d approvals recorded, refund ran %d times", n, len(d.invocations("issue_refund")))
		}
		wantOutcome(t, "execute", d.execute(wait.ActionID), audit.OutcomePendingApproval, reason.ApprovalRequired)
	})
}

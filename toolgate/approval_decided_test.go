package toolgate

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
)

// wantDecided fails the test unless err is a decidedError about actionID
// for why, naming record (when record is not "").
func wantDecided(t *testing.T, what string, err error, actionID string, why settled, record string) {
	t.Helper()
	var de *decidedError
	if !errors.As(err, &de) || !errors.Is(err, ErrDecided) || de.ActionID != actionID || de.Why != why || (record != "" && de.Record != record) {
		t.Errorf("%s: %v (%+v), want ErrDecided %s by %q", what, err, de, why, record)
	}
}

// TestReapproval: an approval that expired before it was used is
// superseded by a new decision, which names it; the action runs once,
// on the new approval, and the old one can no longer be used by an
// attempt. A decision while the new one is in force, and after it was
// used, is refused.
func TestReapproval(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t", "A1", 700)
		old := d.approve("t", wait.ActionID, "human:alice", time.Hour)
		d.clock.Advance(2 * time.Hour)
		fresh, err := d.g.Approver("human:bob").Decide(d.ctx, audit.Approval{TraceID: "t", ActionID: wait.ActionID, Digest: d.digest(wait.ActionID), Decision: audit.Approved, Note: "still due"})
		if err != nil {
			t.Fatalf("approval after the first expired unused: %v", err)
		}
		if refs := fresh.Provenance.InputRefs; len(refs) != 2 || refs[0] != wait.ActionID || refs[1] != old.ID {
			t.Errorf("the new approval's refs %v, want the action and the approval it supersedes", refs)
		}
		// The expired approval's use is claimed by the decision that
		// superseded it: a driver that read it as valid a moment before
		// it expired cannot start the effect on it.
		j := d.job(wait.ActionID)
		j.approval = old.ID
		if _, err := d.g.x.startAttempt(d.ctx, j, 1, blackboard.Record{}, nil); !errors.Is(err, blackboard.ErrDuplicateKey) {
			// Fatal: an attempt left without a result would hold Execute
			// until its lease ends, which the test's clock never reaches.
			t.Fatalf("an attempt on the superseded approval: %v, want ErrDuplicateKey", err)
		}
		before := len(d.records())
		_, err = d.g.Approver("human:carol").Decide(d.ctx, audit.Approval{TraceID: "t", ActionID: wait.ActionID, Digest: d.digest(wait.ActionID), Decision: audit.Denied, Note: ""})
		wantDecided(t, "a denial while the new approval is in force", err, wait.ActionID, settledApproved, fresh.ID)
		if n := len(d.records()); n != before {
			t.Errorf("a refused decision wrote %d records", n-before)
		}
		res := d.execute(wait.ActionID)
		wantOutcome(t, "execute on the new approval", res, audit.OutcomeExecuted, reason.EffectSucceeded)
		recs := d.decisions(audit.Query{TraceID: "t", Tool: "issue_refund", Outcome: audit.OutcomeExecuted})
		if len(recs) != 1 || !slices.Equal(recs[0].Approvals, []string{fresh.ID}) {
			t.Errorf("executed records %+v, want the new approval %s", recs, fresh.ID)
		}
		if n := len(d.invocations("issue_refund")); n != 1 {
			t.Errorf("the refund ran %d times, want once", n)
		}
		// Used: expired or not, it cannot be given again.
		d.clock.Advance(2 * time.Hour)
		_, err = d.g.Approver("human:carol").Decide(d.ctx, audit.Approval{TraceID: "t", ActionID: wait.ActionID, Digest: d.digest(wait.ActionID), Decision: audit.Approved, Note: ""})
		wantDecided(t, "an approval after the approval was used", err, wait.ActionID, settledUsed, "")
		if n := d.approvalsOf("t", wait.ActionID); n != 2 {
			t.Errorf("%d approval records, want 2", n)
		}
	})
}

// TestNoReapproval: a new decision is refused, with nothing written,
// after a denial (even once it is past its TTL), after an approval that
// was used (even once it expired), and once the safe fallback of an
// expired approval was committed.
func TestNoReapproval(t *testing.T) {
	cases := []struct {
		name string
		// settle brings the waiting action to its state and returns the
		// record that settles it ("" when the test need not know it).
		settle func(t *testing.T, d *desk, wait Result) string
		why    settled
	}{
		{"denied", func(t *testing.T, d *desk, wait Result) string {
			rec, err := d.g.Approver("human:alice").Decide(d.ctx, audit.Approval{TraceID: "t", ActionID: wait.ActionID, Digest: d.digest(wait.ActionID), Decision: audit.Denied, Note: "no", TTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			d.clock.Advance(time.Hour)
			return rec.ID
		}, settledDenied},
		{"used", func(t *testing.T, d *desk, wait Result) string {
			d.approve("t", wait.ActionID, "human:alice", time.Minute)
			wantOutcome(t, "execute", d.execute(wait.ActionID), audit.OutcomeExecuted, reason.EffectSucceeded)
			d.clock.Advance(time.Hour)
			return ""
		}, settledUsed},
		{"fallback committed", func(t *testing.T, d *desk, wait Result) string {
			d.approve("t", wait.ActionID, "human:alice", time.Minute)
			d.clock.Advance(time.Hour)
			res := d.execute(wait.ActionID)
			wantOutcome(t, "execute after expiry", res, audit.OutcomeRefused, reason.ApprovalExpired)
			if res.FallbackID == "" {
				t.Fatalf("no fallback: %+v", res)
			}
			return ""
		}, settledFallback},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			onStores(t, func(t *testing.T, d *desk) {
				wait := d.pendingRefund("t", "A1", 700)
				by := c.settle(t, d, wait)
				runs := len(d.invocations("issue_refund"))
				before := len(d.records())
				for _, v := range []audit.Verdict{audit.Approved, audit.Denied} {
					_, err := d.g.Approver("human:bob").Decide(d.ctx, audit.Approval{TraceID: "t", ActionID: wait.ActionID, Digest: d.digest(wait.ActionID), Decision: v})
					wantDecided(t, "a new decision", err, wait.ActionID, c.why, by)
				}
				if n := len(d.records()); n != before {
					t.Errorf("refused decisions wrote %d records", n-before)
				}
				d.execute(wait.ActionID)
				if n := len(d.invocations("issue_refund")); n != runs {
					t.Errorf("the refund ran %d more times", n-runs)
				}
			})
		})
	}
}

// TestResolveAfterExpiry: an adapter's Resolve on an action whose
// approval expired unused records the new decision and carries it out.
func TestResolveAfterExpiry(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t", "A1", 700)
		d.approve("t", wait.ActionID, "human:alice", time.Minute)
		d.clock.Advance(time.Hour)
		res, err := d.g.Approver("human:bob").Resolve(d.ctx, audit.Approval{TraceID: "t", ActionID: wait.ActionID, Digest: d.digest(wait.ActionID), Decision: audit.Approved, Note: "again"})
		if err != nil {
			t.Fatal(err)
		}
		wantOutcome(t, "resolve after expiry", res, audit.OutcomeExecuted, reason.EffectSucceeded)
		if n := d.approvalsOf("t", wait.ActionID); n != 2 {
			t.Errorf("%d approval records, want 2", n)
		}
	})
}

// TestAttackEscalationBesideReapproval: a driver reads the action's latest
// decision, an approval that has just expired, and goes to escalate it;
// meanwhile a person approves again. The escalation must not be written
// beside the fresh approval: it loses to the decision that superseded the
// approval, writes nothing, and the action runs once on the new approval.
func TestAttackEscalationBesideReapproval(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t", "A1", 700)
		old := d.approve("t", wait.ActionID, "human:alice", time.Hour)
		d.clock.Advance(2 * time.Hour)
		j := d.job(wait.ActionID) // the driver, with the expired approval as the latest decision
		if _, err := d.g.Approver("human:bob").Decide(d.ctx, audit.Approval{TraceID: "t", ActionID: wait.ActionID, Digest: d.digest(wait.ActionID), Decision: audit.Approved, Note: "still due"}); err != nil {
			t.Fatal(err)
		}
		before := len(d.records())
		if _, err := d.g.x.escalate(d.ctx, j, reason.ApprovalExpired, old); !errors.Is(err, errSuperseded) {
			t.Fatalf("the stale driver's escalation: %v, want errSuperseded", err)
		}
		if n := len(d.records()); n != before {
			t.Fatalf("the stale escalation wrote %d records beside the fresh approval", n-before)
		}
		res := d.execute(wait.ActionID)
		wantOutcome(t, "execute on the fresh approval", res, audit.OutcomeExecuted, reason.EffectSucceeded)
		if n := len(d.invocations("issue_refund")); n != 1 {
			t.Errorf("the refund ran %d times, want once", n)
		}
	})
}

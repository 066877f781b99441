package toolgate

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// onceRefunds keys issue_refund by its order (one refund per order, for
// ever).
func onceRefunds(su *setup) {
	for i := range su.tools {
		if su.tools[i].Name == "issue_refund" {
			su.tools[i].Once = &kernel.OnceKey{Fields: []string{"order_id"}}
		}
	}
}

// Route 13 of the second review: a refund the supervisor denies holds its
// order's once-key only until the denial is recorded; the next ticket
// about that order refunds once. A model is never told a refund was taken
// that did not run: while the first waits for approval, the refusal of a
// second says so.
func TestAttackDeniedRefundFreesOnceKey(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t1", "A1", 700)

		d.ground("t2", "A1")
		dup := d.refund("t2", "A1", 700)
		wantOutcome(t, "a second ticket's refund while the first waits", dup, audit.OutcomeRefused, reason.DuplicateAction)
		if strings.Contains(dup.Hint, "already taken") || !strings.Contains(dup.Hint, "approval") {
			t.Errorf("hint while the holder waits for approval: %q; want it pending, not taken", dup.Hint)
		}

		if _, err := d.g.Approver("human:bob").Decide(d.ctx, audit.Approval{TraceID: "t1", ActionID: wait.ActionID, Digest: d.digest(wait.ActionID), Decision: audit.Denied, Note: "not eligible"}); err != nil {
			t.Fatal(err)
		}
		denied := d.execute(wait.ActionID)
		wantOutcome(t, "execute after the denial", denied, audit.OutcomeRefused, reason.ApprovalDenied)
		if strings.Contains(denied.Hint, "already taken") {
			t.Errorf("hint after a denial: %q", denied.Hint)
		}

		d.ground("t3", "A1")
		res := d.refund("t3", "A1", 100)
		wantOutcome(t, "a new ticket's refund after the denial", res, audit.OutcomeExecuted, reason.EffectSucceeded)
		if n := len(d.invocations("issue_refund")); n != 1 {
			t.Errorf("the refund ran %d times, want 1", n)
		}

		d.ground("t4", "A1")
		again := d.refund("t4", "A1", 100)
		wantOutcome(t, "a refund after the order was refunded", again, audit.OutcomeRefused, reason.DuplicateAction)
		if !strings.Contains(again.Hint, "already taken") {
			t.Errorf("hint once the holder executed: %q; want it taken", again.Hint)
		}
		if n := len(d.invocations("issue_refund")); n != 1 {
			t.Errorf("the refund ran %d times, want 1", n)
		}
	}, onceRefunds)
}

// An escalated action whose first attempt started anyway (a driver that
// read the approval before it expired) is not retired: its key stays
// held, since its effect may have run.
func TestRetireRefusedAfterAnAttempt(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t1", "A1", 700)
		approval := d.approve("t1", wait.ActionID, "human:alice", time.Hour)
		j := d.job(wait.ActionID)
		// The attempt is recorded without the approval, so that the
		// escalation's claim of the approval does not stop it first.
		d.unchecked("an attempt of an action that waits for approval is recorded without one")
		// Attempt 1 is recorded; then the escalation lands.
		if _, err := d.g.x.startAttempt(d.ctx, j, 1, blackboard.Record{}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := d.g.x.writeEscalation(d.ctx, j, reason.ApprovalExpired, approval); err != nil {
			t.Fatal(err)
		}
		d.execute(wait.ActionID) // reads the escalation, tries to retire
		d.ground("t2", "A1")
		res := d.refund("t2", "A1", 100)
		wantOutcome(t, "a refund while an attempt of the first may have run", res, audit.OutcomeRefused, reason.DuplicateAction)
		if strings.Contains(res.Hint, "already taken") || strings.Contains(res.Hint, "did not run") {
			t.Errorf("hint %q claims what is not known", res.Hint)
		}
	}, onceRefunds)
}

// A crash between a never-ran result (an escalation, a refusal for good)
// and the retirement of the action leaves the key held; Recover retires
// it.
func TestRecoverRetiresAfterACrash(t *testing.T) {
	for _, how := range []string{"escalated", "refused for good"} {
		t.Run(how, func(t *testing.T) {
			onStores(t, func(t *testing.T, d *desk) {
				wait := d.pendingRefund("t1", "A1", 700)
				denial, err := d.g.Approver("human:bob").Decide(d.ctx, audit.Approval{TraceID: "t1", ActionID: wait.ActionID, Digest: d.digest(wait.ActionID), Decision: audit.Denied, Note: "no"})
				if err != nil {
					t.Fatal(err)
				}
				j := d.job(wait.ActionID)
				// The result lands; the process dies before anything else.
				if how == "escalated" {
					_, err = d.g.x.writeEscalation(d.ctx, j, reason.ApprovalDenied, denial)
				} else {
					_, err = j.e.handle.Write(d.ctx, kernel.Entry{TraceID: j.trace, Slot: blackboard.Percepts, Kind: audit.KindFailed,
						Payload: payload(j.effect(audit.StatusRefused, 0, reason.ToolNotPermitted)), InputRefs: []string{j.act.ID}, OnceKeys: []string{j.resultKey()}}, nil)
				}
				if err != nil {
					t.Fatal(err)
				}
				d.ground("t2", "A1")
				wantOutcome(t, "a refund before recovery", d.refund("t2", "A1", 100), audit.OutcomeRefused, reason.DuplicateAction)
				if _, err := d.g.Recover(d.ctx); err != nil {
					t.Fatal(err)
				}
				d.ground("t3", "A1")
				wantOutcome(t, "a refund after recovery", d.refund("t3", "A1", 100), audit.OutcomeExecuted, reason.EffectSucceeded)
			}, onceRefunds)
		})
	}
}

// The DUPLICATE_ACTION hint says what became of the holder: running (an
// attempt without a result), failed, or taken.
func TestDuplicateHintSaysWhatHappened(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		// A1: refunded once, the effect failed for good.
		d.ground("t1", "A1")
		d.setEffect("issue_refund", func(context.Context, Invocation) (blackboard.Payload, error) {
			return nil, errors.New("card network says no")
		})
		failed := d.refund("t1", "A1", 100)
		wantOutcome(t, "a refund whose effect fails", failed, audit.OutcomeFailed, reason.EffectFailed)
		d.ground("t2", "A1")
		res := d.refund("t2", "A1", 100)
		wantOutcome(t, "a refund after a failed one", res, audit.OutcomeRefused, reason.DuplicateAction)
		if !strings.Contains(res.Hint, "failed") || strings.Contains(res.Hint, "already taken") {
			t.Errorf("hint after a failed holder: %q", res.Hint)
		}

		d.setEffect("issue_refund", nil)
		d.ground("u1", "B2")
		// B2: approved, attempt 1 started, no result yet.
		wait := d.pendingRefund("u0", "B2", 700)
		approval := d.approve("u0", wait.ActionID, "human:alice", time.Hour)
		j := d.job(wait.ActionID)
		j.approval = approval.ID
		if _, err := d.g.x.startAttempt(d.ctx, j, 1, blackboard.Record{}, nil); err != nil {
			t.Fatal(err)
		}
		res = d.refund("u1", "B2", 100)
		wantOutcome(t, "a refund while another runs", res, audit.OutcomeRefused, reason.DuplicateAction)
		if !strings.Contains(res.Hint, "running") || strings.Contains(res.Hint, "already taken") {
			t.Errorf("hint while the holder runs: %q", res.Hint)
		}
	}, onceRefunds)
}

package toolgate

import (
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// A refund waits for approval; the order is looked up again, which
// supersedes the lookup the refund rests on; the approval comes, and the
// gate's recheck refuses the refund for good before any attempt (or the
// trace became read-only meanwhile, and the run controls refuse it). Its
// refusal claims the first attempt's key, the fence the retirement used to
// claim again: the order's once-key stayed held by an action that never
// ran, and every later refund of the order was DUPLICATE_ACTION for ever.
// The retirement now takes a fence of its own when the refusal holds the
// first attempt's key: a later refund of the order in another trace runs
// once, and the invariant checker, run over the store at the end, finds
// no once-key held by an action that never ran.
func TestAttackRecheckRefusalFreesOnceKey(t *testing.T) {
	routes := []struct {
		name   string
		change func(t *testing.T, d *desk)
		code   reason.Code
	}{
		{"recheck", func(t *testing.T, d *desk) {
			if res := d.call("t1", "support", "refund", "lookup_order", `{"order_id":"A1"}`); res.Outcome != audit.OutcomeExecuted {
				t.Fatalf("second lookup: %+v", res)
			}
		}, reason.SupersededEvidence},
		// The run controls' refusal claims the first attempt's key too.
		{"read-only trace", func(t *testing.T, d *desk) {
			if err := d.g.Restrict(d.ctx, "t1", Controls{ReadOnly: true}); err != nil {
				t.Fatal(err)
			}
		}, reason.ReadOnlyMode},
	}
	for _, r := range routes {
		t.Run(r.name, func(t *testing.T) {
			onStores(t, func(t *testing.T, d *desk) {
				wait := d.pendingRefund("t1", "A1", 700)
				r.change(t, d)
				d.approve("t1", wait.ActionID, "human:alice", time.Hour)
				for _, what := range []string{"execute after the approval", "execute again"} {
					wantOutcome(t, what, d.execute(wait.ActionID), audit.OutcomeRefused, r.code)
				}
				if n := len(d.invocations("issue_refund")); n != 0 {
					t.Fatalf("the refused refund ran %d times", n)
				}

				d.ground("t2", "A1")
				res := d.refund("t2", "A1", 100)
				wantOutcome(t, "a new ticket's refund after the refusal", res, audit.OutcomeExecuted, reason.EffectSucceeded)
				d.ground("t3", "A1")
				again := d.refund("t3", "A1", 100)
				wantOutcome(t, "a refund after the order was refunded", again, audit.OutcomeRefused, reason.DuplicateAction)
				if n := len(d.invocations("issue_refund")); n != 1 {
					t.Errorf("the refund ran %d times, want 1", n)
				}
				if res, err := d.g.Recover(d.ctx); err != nil || len(res) != 0 {
					t.Errorf("Recover drove %+v (%v)", res, err)
				}
			}, onceRefunds)
		})
	}
}

// A refusal for good that does not hold the first attempt's key, read
// after an attempt started (a driver that read the approval meanwhile):
// the attempt holds the fence, the retirement is refused and the order's
// key stays held, since the effect may have run. The retirement's own
// fence is taken only when the refusal itself holds the first attempt's
// key.
func TestRetireRecheckRefusalAfterAnAttempt(t *testing.T) {
	onStores(t, func(t *testing.T, d *desk) {
		wait := d.pendingRefund("t1", "A1", 700)
		d.approve("t1", wait.ActionID, "human:alice", time.Hour)
		j := d.job(wait.ActionID)
		d.unchecked("an attempt of an action that waits for approval is recorded without one, and a refusal beside it")
		if _, err := d.g.x.startAttempt(d.ctx, j, 1, blackboard.Record{}, nil); err != nil {
			t.Fatal(err)
		}
		w, err := j.e.handle.Write(d.ctx, kernel.Entry{TraceID: j.trace, Slot: blackboard.Percepts, Kind: audit.KindFailed,
			Payload: payload(j.effect(audit.StatusRefused, 0, reason.SupersededEvidence)), InputRefs: []string{j.act.ID}, OnceKeys: []string{j.resultKey()}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.g.x.retire(d.ctx, j, w.rec); err != nil {
			t.Fatal(err)
		}
		d.ground("t2", "A1")
		dup := d.refund("t2", "A1", 100)
		wantOutcome(t, "a refund while an attempt of the first may have run", dup, audit.OutcomeRefused, reason.DuplicateAction)
		if n := len(d.invocations("issue_refund")); n != 0 {
			t.Errorf("the refund ran %d times, want 0", n)
		}
	}, onceRefunds)
}

package kernel_test

import (
	"errors"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
)

// A governed Submit claims its entry's once-keys in the decision's batch:
// by the committed record, or by the refused proposal. A key already
// claimed fails the Submit with ErrDuplicateKey and writes nothing, not
// even the decision record.
func TestGovernedSubmitClaimsKeys(t *testing.T) {
	attack(t, func(t *testing.T, a *arena) {
		a.groundRefund("t", "A1")
		gov := a.k.Governor()
		submit := func(key string, reqs ...string) (kernel.Decision, error) {
			return gov.Submit(a.ctx, "llm", kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: "issue_refund",
				Payload: action(reqs...), OnceKeys: []string{key}}, decisionRecord("t", "issue_refund", nil))
		}
		refused, err := submit("call/refused", "refund_due", "other_belief")
		if err != nil || refused.Committed() {
			t.Fatalf("refused refund: %v %v", refused.Code, err)
		}
		if holder, err := a.k.Governor().ClaimedBy(a.ctx, "call/refused"); err != nil || holder != refused.ProposalID {
			t.Errorf("the refused call's key is held by %q (%v), want the proposal %s", holder, err, refused.ProposalID)
		}
		ok, err := submit("call/ok", "refund_due")
		if err != nil || !ok.Committed() {
			t.Fatalf("refund: %v %v", ok.Code, err)
		}
		if holder, err := a.k.Governor().ClaimedBy(a.ctx, "call/ok"); err != nil || holder != ok.CommittedID {
			t.Errorf("the committed call's key is held by %q (%v), want the action %s", holder, err, ok.CommittedID)
		}
		before := len(records(t, a, audit.Query{TraceID: "t"}))
		for _, key := range []string{"call/ok", "call/refused"} {
			if d, err := submit(key, "refund_due"); !errors.Is(err, blackboard.ErrDuplicateKey) {
				t.Errorf("a second Submit claiming %s: %v %v, want ErrDuplicateKey", key, d.Code, err)
			}
		}
		if after := len(records(t, a, audit.Query{TraceID: "t"})); after != before {
			t.Errorf("%d decision records after the refused Submits, want %d", after, before)
		}
		if _, err := a.k.Proposer(blackboard.RolePlanner, "llm").Submit(a.ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: "issue_refund",
			Payload: action("refund_due"), OnceKeys: []string{"call/planner"}}); !errors.Is(err, blackboard.ErrPermission) {
			t.Errorf("a planner's Submit with a once-key: %v, want ErrPermission", err)
		}
	})
}

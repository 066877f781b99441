package invariant

import (
	"fmt"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/toolgate"
)

// approvals checks the approval the effect record r (of action act, at
// index i of t) ran under: an action that waited for approval runs only
// under an approval that approved it, for the digest of its committed
// arguments, written before the effect; and one approval lets one action
// run ([approvalBinding]). checked holds the (action, approval) pairs
// already judged in t.
func (c *checker) approvals(t *trace, r *blackboard.Record, i int, e audit.Effect, act *blackboard.Record, checked map[[2]string]bool) error {
	if mutApprovalBinding {
		return nil
	}
	return c.approvalBound(t, r, i, e, act, checked)
}

// approvalBound is approvals' check: the mutation switch
// mutApprovalBinding skips it.
func (c *checker) approvalBound(t *trace, r *blackboard.Record, i int, e audit.Effect, act *blackboard.Record, checked map[[2]string]bool) error {
	pair := [2]string{act.ID, e.Approval}
	if checked[pair] {
		return nil
	}
	checked[pair] = true
	bad := func(format string, args ...any) {
		c.report(approvalBinding, t.id, r.ID, "effect of "+e.Tool+" for "+act.ID+": "+fmt.Sprintf(format, args...))
	}
	if e.Approval == "" {
		if t.decided[act.ID].Outcome == audit.OutcomePendingApproval {
			bad("the action waited for approval and ran under none")
		}
		return nil
	}
	rec, at, found, err := c.record(t, e.Approval)
	if err != nil {
		return err
	}
	a, ok := audit.ApprovalOf(rec)
	want, derr := toolgate.ArgsDigest(act.Payload)
	switch {
	case !found || !ok:
		bad("%s is not an approval record", e.Approval)
	case at < 0 || at > i:
		bad("approval %s is not in the trace before the effect", e.Approval)
	case a.Decision != audit.Approved:
		bad("approval %s answers %q", a.ID, a.Decision)
	case a.ActionID != act.ID:
		bad("approval %s approves %s", a.ID, a.ActionID)
	case derr != nil || a.Digest != want:
		bad("approval %s binds digest %s, the arguments that ran have %s", a.ID, a.Digest, want)
	}
	if other, used := c.approvalUse[e.Approval]; used && other != act.ID {
		bad("approval %s also let %s run", e.Approval, other)
	} else {
		c.approvalUse[e.Approval] = act.ID
	}
	return nil
}

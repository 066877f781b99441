package main

import (
	"strings"
	"testing"
)

// The example prints the refusal, the surfacing, the confirmation and one
// run of the refund, though the model makes the call twice.
func TestRun(t *testing.T) {
	var b strings.Builder
	if err := run(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != want {
		t.Fatalf("the example printed\n%s\nwant\n%s", got, want)
	}
}

const want = `model is shown: [lookup_order]
call_1 issue_refund refused NO_COMMITTED_BELIEF The conditions for issue_refund are not established (no committed belief refund_due). Establish them first (look up what they rest on), or do not call it.
model is shown: [lookup_order]
call_2 lookup_order executed EFFECT_SUCCEEDED map[amount:700 order_id:A1]
model is shown: [lookup_order issue_refund]
call_3 issue_refund pending_approval APPROVAL_REQUIRED This call waits for a person's approval (actions:adk:desk/user/ticket-1:15). Tell the user it is pending; do not call the tool again for it.
asked to approve: issue_refund map[amount:700 order_id:A1]
refund effect runs
call_3 issue_refund executed EFFECT_SUCCEEDED map[amount:700 refund_id:re_A1]
model is shown: [lookup_order issue_refund]
call_3 issue_refund executed EFFECT_SUCCEEDED map[amount:700 refund_id:re_A1]
`

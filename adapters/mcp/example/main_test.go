package main

import (
	"strings"
	"testing"
)

// The example prints the refusal, the surfacing, the approval and one
// run of the refund, though the call is delivered twice.
func TestRun(t *testing.T) {
	var b strings.Builder
	if err := run(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != want {
		t.Fatalf("the example printed\n%s\nwant\n%s", got, want)
	}
}

const want = `tools: [lookup_order]
call_1 issue_refund isError=true {"outcome":"refused","code":"NO_COMMITTED_BELIEF","root_cause":"NO_COMMITTED_BELIEF","hint":"The conditions for issue_refund are not established (no committed belief refund_due). Establish them first (look up what they rest on), or do not call it."}
call_2 lookup_order isError=false {"outcome":"executed","code":"EFFECT_SUCCEEDED","output":{"amount":700,"order_id":"A1"}}
tools: [issue_refund lookup_order]
asked to approve: issue_refund map[amount:700 order_id:A1]
refund effect runs
call_3 issue_refund isError=false {"outcome":"executed","code":"EFFECT_SUCCEEDED","output":{"amount":700,"refund_id":"re_A1"}}
call_3 issue_refund isError=false {"outcome":"executed","code":"EFFECT_SUCCEEDED","output":{"amount":700,"refund_id":"re_A1"}}
`

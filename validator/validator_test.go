package validator_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/validator"
)

// refundKernel returns a kernel with a refund ceiling and a planner whose
// belief refund_due is committed in trace "t".
func refundKernel(t testing.TB, vs ...kernel.Validator) *kernel.Proposer {
	ctx := context.Background()
	k, err := kernel.New(kernel.Config{Validators: vs})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Handle(blackboard.RoleTool, "stripe").Write(ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Percepts, Kind: "charge", Payload: blackboard.Payload{"amount": 10}}); err != nil {
		t.Fatal(err)
	}
	p := k.Proposer(blackboard.RolePlanner, "agent")
	d, err := p.Submit(ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Beliefs, Kind: "refund_due", Payload: blackboard.Payload{"value": true, "depends_on": []string{"charge"}}})
	if err != nil || !d.Committed() {
		t.Fatalf("belief: %v %v", d.Code, err)
	}
	return p
}

func refund(t testing.TB, p *kernel.Proposer, payload blackboard.Payload) reason.Code {
	payload["requires_beliefs"] = []string{"refund_due"}
	d, err := p.Submit(context.Background(), kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: "issue_refund", Payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	return d.Code
}

func TestValidators(t *testing.T) {
	limit := validator.For(blackboard.Actions, "issue_refund", validator.All(
		validator.Require("amount"),
		validator.Max("amount", 500, ""),
	))
	for _, tc := range []struct {
		name    string
		payload blackboard.Payload
		want    reason.Code
	}{
		{"under the limit", blackboard.Payload{"amount": 149.99}, reason.Committed},
		{"at the limit", blackboard.Payload{"amount": 500}, reason.Committed},
		{"over the limit", blackboard.Payload{"amount": 500.01}, reason.OverLimit},
		{"not a number", blackboard.Payload{"amount": "1"}, reason.OverLimit},
		{"missing", blackboard.Payload{}, reason.MissingField},
		{"null", blackboard.Payload{"amount": nil}, reason.MissingField},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := refund(t, refundKernel(t, limit), tc.payload); got != tc.want {
				t.Errorf("code = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestForScopesToSlotAndKind(t *testing.T) {
	// A ceiling on another kind or slot must not touch issue_refund.
	other := validator.For(blackboard.Actions, "wire_transfer", validator.Max("amount", 1, ""))
	beliefs := validator.For(blackboard.Beliefs, "", validator.Require("never_present"))
	p := refundKernel(t, other)
	if got := refund(t, p, blackboard.Payload{"amount": 999}); got != reason.Committed {
		t.Errorf("other kind: code = %s", got)
	}
	k, err := kernel.New(kernel.Config{Validators: []kernel.Validator{beliefs}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := k.Handle(blackboard.RoleTool, "s").Write(ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Percepts, Kind: "charge"}); err != nil {
		t.Fatal(err)
	}
	d, err := k.Proposer(blackboard.RolePlanner, "p").Submit(ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Beliefs, Kind: "refund_due", Payload: blackboard.Payload{"value": true, "depends_on": []string{"charge"}}})
	if err != nil || d.Code != reason.MissingField {
		t.Errorf("empty kind should match every belief: %v %v", d.Code, err)
	}
}

func TestCustomCode(t *testing.T) {
	p := refundKernel(t, validator.Max("amount", 100, "REFUND_OVER_100"))
	if got := refund(t, p, blackboard.Payload{"amount": 101}); got != "REFUND_OVER_100" {
		t.Errorf("code = %s", got)
	}
}

func ExampleMax() {
	ctx := context.Background()
	k, err := kernel.New(kernel.Config{Validators: []kernel.Validator{validator.For(blackboard.Actions, "issue_refund", validator.Max("amount", 500, ""))}})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	if _, err := k.Handle(blackboard.RoleTool, "stripe").Write(ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Percepts, Kind: "charge"}); err != nil {
		fmt.Println("error:", err)
		return
	}
	planner := k.Proposer(blackboard.RolePlanner, "agent")
	if _, err := planner.Submit(ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"charge"}}}); err != nil {
		fmt.Println("error:", err)
		return
	}
	d, err := planner.Submit(ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: "issue_refund",
		Payload: blackboard.Payload{"amount": 900, "requires_beliefs": []string{"refund_due"}}})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(d.Code)
	// Output: OVER_LIMIT
}

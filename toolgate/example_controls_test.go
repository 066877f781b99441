package toolgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/toolgate"
)

// A run made read-only keeps its read-only tools: the refund is neither
// surfaced nor run, and the controls cannot be loosened again.
func ExampleGate_Restrict() {
	ctx := context.Background()
	refunds := 0
	_, g := supportDesk(&refunds)
	defer g.Close()
	if err := g.Restrict(ctx, "ticket-8", toolgate.Controls{ReadOnly: true}); err != nil {
		panic(err)
	}
	specs, _ := g.Surface(ctx, "support", "ticket-8", "")
	for _, s := range specs {
		fmt.Println("surfaced:", s.Name)
	}
	res, _ := g.Call(ctx, toolgate.Call{Tool: "issue_refund", Args: json.RawMessage(`{"order_id":"A1","amount":70}`), Caller: "support", TraceID: "ticket-8"})
	fmt.Println(res.Code, refunds)
	err := g.Restrict(ctx, "ticket-8", toolgate.Controls{})
	fmt.Println(errors.Is(err, blackboard.ErrPermission))
	// Output:
	// surfaced: lookup_order
	// READ_ONLY_MODE 0
	// true
}

// Every decision record names the policy snapshot in force, by its hash;
// the snapshot is recorded once per hash in the namespace, as JSON.
func ExampleGate_Policy() {
	refunds := 0
	_, g := supportDesk(&refunds)
	defer g.Close()
	p := g.Policy()
	var snap struct {
		Tools []struct {
			Name     string
			Requires []string
			Approval json.RawMessage
		}
		Fallback string
	}
	if err := json.Unmarshal(p.JSON, &snap); err != nil {
		panic(err)
	}
	for _, t := range snap.Tools {
		fmt.Println(t.Name, t.Requires, t.Approval != nil)
	}
	fmt.Println(strings.HasPrefix(p.Hash, "sha256:"), snap.Fallback)
	// Output:
	// lookup_order [] false
	// issue_refund [refund_due] true
	// true queue_for_review
}

package inspect_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store/sqlitestore"
	"github.com/blackboardkernel/bk/toolgate"
)

// TestMaskedValuesNotShown plays the desk with the order id masked
// (toolgate.Tool.Masked): a refund refused, a lookup, a refund waiting
// for approval. No bk command's output, text or JSON, holds the order id;
// bk export shows its masked form.
func TestMaskedValuesNotShown(t *testing.T) {
	const secret = "ORD-SECRET-4111"
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "desk.db")
	s, err := sqlitestore.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	tools := deskTools()
	for i := range tools {
		tools[i].Masked = []string{"order_id"}
	}
	g, err := toolgate.New(ctx, toolgate.WithTools(tools...), toolgate.WithMaskKey([]byte("0123456789abcdef0123456789abcdef")),
		toolgate.WithKernel(kernel.WithStore(s), kernel.WithNamespace("desk"),
			kernel.WithBeliefSpecs(kernel.BeliefSpec{Kind: "refund_due", DependsOn: []string{"order"}})),
		toolgate.WithContracts(toolgate.Contract{Name: "support", Tools: []string{"lookup_order", "issue_refund"}}))
	if err != nil {
		t.Fatal(err)
	}
	call := func(tool, args string) toolgate.Result {
		t.Helper()
		res, err := g.Call(ctx, toolgate.Call{Tool: tool, Args: json.RawMessage(args), Caller: "support", TraceID: "masked"})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	call("issue_refund", `{"order_id":"`+secret+`","amount":600}`)
	call("lookup_order", `{"order_id":"`+secret+`"}`)
	if _, err := g.Kernel().Planner("analyst").Submit(ctx, kernel.Entry{TraceID: "masked", Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{kernel.KeyValue: true, kernel.KeyDependsOn: []string{"order"}}}); err != nil {
		t.Fatal(err)
	}
	wait := call("issue_refund", `{"order_id":"`+secret+`","amount":650}`)
	if wait.Outcome != audit.OutcomePendingApproval {
		t.Fatalf("refund: %+v", wait)
	}
	g.Close()
	s.Close()

	for _, cmd := range []string{"export"} {
		if out := mustBK(t, "--db", db, cmd); !strings.Contains(out, toolgate.MaskPrefix) {
			t.Errorf("bk %s does not show the masked value:\n%s", cmd, out)
		}
	}
	for _, args := range [][]string{
		{"traces"}, {"timeline", "masked"}, {"timeline", "--steps", "masked"}, {"explain", wait.ActionID}, {"stats"}, {"approvals"}, {"effects"}, {"export"},
		{"--json", "approvals"}, {"--json", "timeline", "masked"}, {"--json", "explain", wait.ActionID},
	} {
		out := mustBK(t, append([]string{"--db", db}, args...)...)
		if strings.Contains(out, secret) {
			t.Errorf("bk %s shows the masked value:\n%s", strings.Join(args, " "), out)
		}
	}
}

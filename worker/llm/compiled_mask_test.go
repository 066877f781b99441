package llm_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/mask"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/toolgate"
	"github.com/blackboardkernel/bk/worker/llm"
)

// TestAttackCompiledContextHoldsMaskedOutput: a lookup whose output masks
// the customer's email. The compiled context of the next round, a
// record, shows the last result with the email's masked form; no record
// of the store holds the real email, and neither does the prompt the
// model is sent (it is the recorded one).
func TestAttackCompiledContextHoldsMaskedOutput(t *testing.T) {
	const email = "jane.secret@example.com"
	ctx := context.Background()
	lookup := func(_ context.Context, _ toolgate.Invocation, a orderArgs) (map[string]any, error) {
		return map[string]any{"order_id": a.OrderID, "amount": 40.0, "email": email}, nil
	}
	st := memstore.New()
	g, err := toolgate.New(ctx, toolgate.Config{
		Kernel: kernel.Config{Store: st},
		Tools: []toolgate.Tool{toolgate.Func(toolgate.Tool{Name: "lookup_order", Result: "order", ReadOnly: true, Description: "Read an order.",
			Masked: []string{"email"}}, lookup)},
		Contracts: map[string][]string{"support": {"lookup_order"}},
		MaskKey:   []byte("0123456789abcdef0123456789abcdef"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	f := newFake(t, func(n int, req request) reply {
		if n == 0 {
			return calling(call("c1", "lookup_order", `{"order_id": "A1"}`))
		}
		return answer("Looked it up.")
	})
	a, err := llm.NewAgent(client(t, f, nil), g, llm.WithCompiler(compiler(t)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(ctx, llm.Task{Caller: "support", TraceID: "t1", System: mission, User: "Look up order A1."})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Calls[0].Result.Output["email"]; got != email {
		t.Fatalf("the caller's result holds %v, want the real email", got)
	}
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	second := reqs[1].Body.Messages[0].Content
	if strings.Contains(second, email) || !strings.Contains(second, mask.Prefix) {
		t.Errorf("round 2's prompt shows the email as %q, want its masked form:\n%s", email, second)
	}
	for _, slot := range blackboard.AllSlots() {
		for r, err := range st.ListSlot(ctx, slot, store.Filter{}) {
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(r)
			if strings.Contains(string(b), email) {
				t.Errorf("record %s (%s %s) holds the masked email", r.ID, r.Slot, r.Kind)
			}
		}
	}
}

package toolgate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/toolgate"
)

// A tool masks the email it sends to: the effect gets the address, the
// store holds only its keyed hash, and the same address hashes the same.
func ExampleWithMaskKey() {
	ctx := context.Background()
	send := toolgate.Tool{
		Name:       "send_receipt",
		Parameters: json.RawMessage(`{"type":"object","properties":{"email":{"type":"string"}},"required":["email"]}`),
		Masked:     []string{"email"},
		Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
			fmt.Println("effect sends to", inv.Args["email"])
			return blackboard.Payload{"sent": true}, nil
		},
	}
	key := []byte("an example key of 32 bytes......") // from a secret store, never the blackboard's
	g, err := toolgate.New(ctx, toolgate.WithTools(send), toolgate.WithMaskKey(key),
		toolgate.WithContracts(toolgate.Contract{Name: "mailer", Tools: []string{"send_receipt"}}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close()
	res, err := g.Call(ctx, toolgate.Call{Tool: "send_receipt", Args: json.RawMessage(`{"email":"ada@example.com"}`), Caller: "mailer", TraceID: "t1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	act, err := g.Kernel().Tool("reader").Get(ctx, res.ActionID)
	if err != nil {
		fmt.Println(err)
		return
	}
	stored, _ := act.Payload["email"].(string)
	want, _ := g.Mask(ctx, "t1", "ada@example.com")
	fmt.Println(res.Code, strings.HasPrefix(stored, toolgate.MaskPrefix), stored == want)
	// Output:
	// effect sends to ada@example.com
	// EFFECT_SUCCEEDED true true
}

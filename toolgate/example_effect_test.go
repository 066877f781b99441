package toolgate_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/toolgate"
)

// A framework runs its own send_email tool; the gate holds it
// caller-driven (no Effect) and governs each call, whose effect is the
// framework's run of the tool. The approval a person gives is not used up
// by Resolve, which has no effect to run: the framework's call again,
// under the same retry key, with the tool, runs it once.
func ExampleCall_effect() {
	ctx := context.Background()
	g, err := toolgate.New(ctx, toolgate.Config{
		Tools: []toolgate.Tool{{Unscoped: true,
			Name:       "send_email",
			Parameters: json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"}},"required":["to"]}`),
			Idempotent: true,
			Approval:   "true",
		}},
		Contracts: map[string][]string{"agent": {"send_email"}},
	})
	if err != nil {
		panic(err)
	}
	defer g.Close()
	sent := 0
	frameworkSend := func(ctx context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
		sent++ // the framework's tool; inv.Key is its idempotency key
		return blackboard.Payload{"sent_to": inv.Args["to"]}, nil
	}
	call := toolgate.Call{RetryKey: "fc-1", Tool: "send_email", Args: json.RawMessage(`{"to":"ana@example.com"}`),
		Caller: "agent", TraceID: "chat-1", Effect: frameworkSend}

	res, err := g.Call(ctx, call)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Outcome)
	res, err = g.Approver("human:lead").Resolve(ctx, audit.Approval{TraceID: "chat-1", ActionID: res.ActionID, Digest: res.ArgsDigest, Decision: audit.Approved, Note: "ok"})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Code, "sent:", sent)
	res, err = g.Call(ctx, call) // the framework resumes the call
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Outcome, res.Output["sent_to"], "sent:", sent)
	// Output:
	// pending_approval
	// EFFECT_UNAVAILABLE sent: 0
	// executed ana@example.com sent: 1
}

package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blackboardkernel/bk/adapters/mcp"
	"github.com/blackboardkernel/bk/internal/reply"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/toolgate/adaptertest"
)

// A client that answers the approval form for the arguments shown and
// then sends other arguments with its answer runs nothing: the call
// resumes only with the arguments the approval's digest binds.
func TestAttackSwappedArgumentsWithApproval(t *testing.T) {
	env := adaptertest.NewEnv(t)
	server := sdk.NewServer(&sdk.Implementation{Name: "support", Version: "v1"}, nil)
	if err := mcp.Govern(server, env.Gate, env.Caller, mcp.WithApprover(env.Approver),
		mcp.WithTrace(func(*sdk.ServerSession) string { return env.TraceID })); err != nil {
		t.Fatal(err)
	}
	// The attacker's client runs the approval round itself.
	cl := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v1"}, &sdk.ClientOptions{
		MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return nil, errors.New("not used")
		},
	})
	st, ct := sdk.NewInMemoryTransports()
	ss, err := server.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := cl.Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: adaptertest.Lookup, Arguments: map[string]any{"order_id": "A1"}}); err != nil || res.IsError {
		t.Fatal(res, err)
	}
	submitDue(t, env)
	params := &sdk.CallToolParams{Name: adaptertest.Refund, Arguments: json.RawMessage(`{"order_id":"A1","amount":700}`),
		Meta: sdk.Meta{mcp.MetaRetryKey: "c1"}}
	res, err := cs.CallTool(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	ask, ok := res.InputRequests["approval"].(*sdk.ElicitParams)
	if !res.NeedsInput() || !ok {
		t.Fatalf("refund over 500: %+v, want an approval request", res)
	}
	digest := ask.Meta[mcp.MetaApproval].(map[string]any)["digest"]
	// The user approves what was shown; the client sends other arguments.
	params.Arguments = json.RawMessage(`{"order_id":"A1","amount":650}`)
	params.RequestState = res.RequestState
	params.InputResponses = sdk.InputResponseMap{"approval": &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "digest": digest}}}
	if res, err = cs.CallTool(t.Context(), params); err != nil {
		t.Fatal(err)
	}
	var got reply.Content
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !res.IsError || got.Code != reason.ApprovalMismatch {
		t.Fatalf("swapped arguments: isError=%v %+v, want APPROVAL_MISMATCH", res.IsError, got)
	}
	if n := env.Runs(); n != 0 {
		t.Fatalf("the refund ran %d times with swapped arguments", n)
	}
}

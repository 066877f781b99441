package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blackboardkernel/bk/adapters/mcp"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/toolgate/adaptertest"
)

// client is the suite's adapter: an MCP client session to a governed
// server over in-memory transports, whose user is the suite's person.
type client struct{ cs *sdk.ClientSession }

func connect(t *testing.T, env *adaptertest.Env, elicit bool, opts ...mcp.Option) *client {
	t.Helper()
	return connectAt(t, env, "", elicit, opts...)
}

// connectAt is connect with a client that asks for protocol version (the
// latest for "").
func connectAt(t *testing.T, env *adaptertest.Env, version string, elicit bool, opts ...mcp.Option) *client {
	t.Helper()
	server := sdk.NewServer(&sdk.Implementation{Name: "support", Version: "v1"}, nil)
	opts = append([]mcp.Option{mcp.WithApprover(env.Approver), mcp.WithTrace(func(*sdk.ServerSession) string { return env.TraceID })}, opts...)
	if err := mcp.Govern(server, env.Gate, env.Caller, opts...); err != nil {
		t.Fatal(err)
	}
	var copts sdk.ClientOptions
	if elicit {
		copts.ElicitationHandler = func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			var a adaptertest.Approval
			if err := remarshal(req.Params.Meta[mcp.MetaApproval], &struct {
				Tool     *string         `json:"tool"`
				ActionID *string         `json:"action_id"`
				Digest   *string         `json:"digest"`
				Args     *map[string]any `json:"args"`
			}{&a.Tool, &a.ActionID, &a.Digest, &a.Args}); err != nil {
				return nil, err
			}
			d := env.Decide(ctx, a)
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": d.Approve, "digest": d.Digest}}, nil
		}
	}
	st, ct := sdk.NewInMemoryTransports()
	ss, err := server.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cl := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v1"}, &copts)
	cl.AddSendingMiddleware(mcp.TraceContext)
	cs, err := cl.Connect(t.Context(), ct, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; version != "" && got != version {
		t.Fatalf("negotiated protocol %s, want %s", got, version)
	}
	return &client{cs}
}

func remarshal(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}

func (c *client) ListTools(ctx context.Context) ([]string, error) {
	res, err := c.cs.ListTools(ctx, nil)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, t := range res.Tools {
		names = append(names, t.Name)
	}
	return names, nil
}

func (c *client) CallTool(ctx context.Context, name string, args json.RawMessage, callID string) (adaptertest.Reply, error) {
	res, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args, Meta: sdk.Meta{mcp.MetaRetryKey: callID}})
	if err != nil {
		return adaptertest.Reply{}, err
	}
	r := adaptertest.Reply{IsError: res.IsError}
	if err := remarshal(res.StructuredContent, &r.Content); err != nil {
		return r, err
	}
	// The text content is the same answer, for a client that reads no
	// structured content.
	var text adaptertest.Reply
	if len(res.Content) != 1 {
		return r, errors.New("want one text content")
	}
	tc, ok := res.Content[0].(*sdk.TextContent)
	if !ok || json.Unmarshal([]byte(tc.Text), &text.Content) != nil || text.Content.Code != r.Content.Code || text.Content.Outcome != r.Content.Outcome {
		return r, errors.New("text content is not the structured content")
	}
	return r, nil
}

func TestConformance(t *testing.T) {
	adaptertest.Run(t, func(t *testing.T, env *adaptertest.Env) adaptertest.Adapter { return connect(t, env, true) })
}

// Clients of every older protocol version the SDK speaks, where a server
// elicits while it handles a call: the SDK turns the approval's input
// request into an elicitation, and the whole suite passes as on the
// latest protocol.
func TestConformanceOlderProtocol(t *testing.T) {
	for _, v := range []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"} {
		t.Run(v, func(t *testing.T) {
			adaptertest.Run(t, func(t *testing.T, env *adaptertest.Env) adaptertest.Adapter { return connectAt(t, env, v, true) })
		})
	}
}

func submitDue(t *testing.T, env *adaptertest.Env) {
	t.Helper()
	if _, err := env.Gate.Kernel().Proposer(blackboard.RolePlanner, "analyst").Submit(t.Context(), kernel.Entry{TraceID: env.TraceID, Slot: blackboard.Beliefs,
		Kind: "refund_due", Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}}); err != nil {
		t.Fatal(err)
	}
}

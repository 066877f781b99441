package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/blackboardkernel/bk/adapters/mcp"
	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/internal/reply"
	"github.com/blackboardkernel/bk/toolgate"
)

// remote is a plain MCP server with one tool, ship, that records the
// retry key and the trace each call carries; ship fails for order "X".
type remote struct {
	mu     sync.Mutex
	keys   []string
	traces []string
}

func (r *remote) session(t *testing.T) *sdk.ClientSession {
	return r.sessionAt(t, "")
}

// sessionAt connects to the remote server, which speaks only protocol
// version (any it supports for "").
func (r *remote) sessionAt(t *testing.T, version string) *sdk.ClientSession {
	t.Helper()
	var opts *sdk.ServerOptions
	if version != "" {
		opts = &sdk.ServerOptions{SupportedProtocolVersions: []string{version}}
	}
	server := sdk.NewServer(&sdk.Implementation{Name: "warehouse", Version: "v1"}, opts)
	server.AddTool(&sdk.Tool{Name: "ship", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			key, _ := req.Params.Meta[mcp.MetaRetryKey].(string)
			tp, _ := req.Params.Meta["traceparent"].(string)
			r.mu.Lock()
			r.keys = append(r.keys, key)
			r.traces = append(r.traces, tp)
			r.mu.Unlock()
			var args struct {
				Order string `json:"order_id"`
			}
			_ = json.Unmarshal(req.Params.Arguments, &args)
			if args.Order == "X" {
				return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "warehouse on fire"}}}, nil
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "shipped"}},
				StructuredContent: map[string]any{"shipment": "s_" + args.Order}}, nil
		})
	st, ct := sdk.NewInMemoryTransports()
	ss, err := server.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cl := sdk.NewClient(&sdk.Implementation{Name: "gate", Version: "v1"}, nil)
	cl.AddSendingMiddleware(mcp.TraceContext)
	cs, err := cl.Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; version != "" && got != version {
		t.Fatalf("negotiated protocol %s, want %s", got, version)
	}
	return cs
}

// A gate tool whose effect is a remote MCP tool: the remote server gets
// the committed arguments with the action's idempotency key and the
// caller's trace context, and the gate records its structured content; a
// remote error result fails the call without its text reaching the model.
func TestRemoteEffect(t *testing.T) {
	var r remote
	ship := toolgate.Tool{Unscoped: true, Name: "ship", Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`),
		Idempotent: true, Effect: mcp.RemoteEffect(r.session(t), "ship")}
	g, err := toolgate.New(t.Context(), toolgate.Config{
		Tools:     []toolgate.Tool{ship},
		Contracts: map[string][]string{"agent": {"ship"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0xcc, 1}, SpanID: trace.SpanID{0xcc, 1}, TraceFlags: trace.FlagsSampled})
	ctx := trace.ContextWithSpanContext(t.Context(), sc)
	res, err := g.Call(ctx, toolgate.Call{Tool: "ship", Args: json.RawMessage(`{"order_id":"A1"}`), Caller: "agent", TraceID: "t1"})
	if err != nil || res.Outcome != audit.OutcomeExecuted || res.Output["shipment"] != "s_A1" {
		t.Fatalf("ship: %+v, %v", res, err)
	}
	if len(r.keys) != 1 || r.keys[0] == "" || !strings.Contains(r.keys[0], res.ActionID) {
		t.Fatalf("remote saw retry keys %q, want the action's idempotency key (action %s)", r.keys, res.ActionID)
	}
	if !strings.Contains(r.traces[0], sc.TraceID().String()) {
		t.Fatalf("remote saw traceparent %q, want trace %s", r.traces[0], sc.TraceID())
	}

	res, err = g.Call(t.Context(), toolgate.Call{Tool: "ship", Args: json.RawMessage(`{"order_id":"X"}`), Caller: "agent", TraceID: "t1"})
	if err != nil || res.Outcome != audit.OutcomeFailed {
		t.Fatalf("failing remote: %+v, %v", res, err)
	}
	if text := res.ForModel(); !reply.IsError(res.Outcome) || strings.Contains(text, "fire") {
		t.Fatalf("the model was shown %s", text)
	}
}

// The gate's client against remote servers that speak only an older
// protocol version: the call, its retry key and its trace context (in
// _meta, which every version has) reach the server, its structured
// content is the output, and its error result fails the call unseen by
// the model.
func TestRemoteEffectOlderProtocols(t *testing.T) {
	for _, v := range []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"} {
		t.Run(v, func(t *testing.T) {
			var r remote
			ship := toolgate.Tool{Unscoped: true, Name: "ship", Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`),
				Idempotent: true, Effect: mcp.RemoteEffect(r.sessionAt(t, v), "ship")}
			g, err := toolgate.New(t.Context(), toolgate.Config{
				Tools:     []toolgate.Tool{ship},
				Contracts: map[string][]string{"agent": {"ship"}},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0xdd, 2}, SpanID: trace.SpanID{0xdd, 2}, TraceFlags: trace.FlagsSampled})
			res, err := g.Call(trace.ContextWithSpanContext(t.Context(), sc), toolgate.Call{Tool: "ship", Args: json.RawMessage(`{"order_id":"A1"}`), Caller: "agent", TraceID: "t1"})
			if err != nil || res.Outcome != audit.OutcomeExecuted {
				t.Fatalf("ship: %+v, %v", res, err)
			}
			if res.Output["shipment"] != "s_A1" {
				t.Fatalf("output %v, want the remote's structured content", res.Output)
			}
			if len(r.keys) != 1 || !strings.Contains(r.keys[0], res.ActionID) || !strings.Contains(r.traces[0], sc.TraceID().String()) {
				t.Fatalf("remote saw retry keys %q and traceparents %q, want the action's key and trace %s", r.keys, r.traces, sc.TraceID())
			}
			res, err = g.Call(t.Context(), toolgate.Call{Tool: "ship", Args: json.RawMessage(`{"order_id":"X"}`), Caller: "agent", TraceID: "t1"})
			if err != nil || res.Outcome != audit.OutcomeFailed || strings.Contains(res.ForModel(), "fire") {
				t.Fatalf("failing remote: %+v, %v", res, err)
			}
		})
	}
}

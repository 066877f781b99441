package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/toolgate"
)

// ErrRemote is the error of a remote tool call that failed: the remote
// tool's own error result, or a result that is not a JSON object.
var ErrRemote = errors.New("mcp: remote tool failed")

// RemoteEffect is the effect of a gate tool that calls the tool named
// tool on a remote MCP server, through session: the gate decides the call,
// and the remote server only ever sees committed, approved arguments. Each
// attempt passes the action's idempotency key ([toolgate.Invocation.Key])
// as the request's retry key ([MetaRetryKey]), so that a remote server
// that honours it (a governed one does) runs one action once however
// often the gate drives it; declare the gate tool Idempotent only for such
// a server. The context's trace context goes along when the session's
// client has the [TraceContext] middleware.
//
// The output is the result's structured content, which must be a JSON
// object; without structured content, the text content as {"text": ...}.
// A result with isError fails the call with [ErrRemote] (its text stays in
// the decision record, never shown to the model); a protocol error fails
// it as is. Neither is retried: the remote server's answer is its own.
func RemoteEffect(session *sdk.ClientSession, tool string) toolgate.EffectFunc {
	return func(ctx context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
		res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: map[string]any(inv.Args),
			Meta: sdk.Meta{MetaRetryKey: inv.Key}})
		if err != nil {
			return nil, fmt.Errorf("mcp: call %s: %w", tool, err)
		}
		text := texts(res)
		if res.IsError {
			return nil, fmt.Errorf("%w: %s: %s", ErrRemote, tool, text)
		}
		if res.StructuredContent == nil {
			return blackboard.Payload{"text": text}, nil
		}
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrRemote, tool, err)
		}
		var out blackboard.Payload
		if err := json.Unmarshal(b, &out); err != nil || out == nil {
			return nil, fmt.Errorf("%w: %s: structured content is not a JSON object", ErrRemote, tool)
		}
		return out, nil
	}
}

// texts joins a result's text contents.
func texts(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

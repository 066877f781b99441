package mcp

import (
	"context"
	"maps"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
)

// The W3C trace context travels in a request's _meta under the keys
// "traceparent" and "tracestate", as it does in HTTP headers.
var traceContext propagation.TraceContext

// metaCarrier reads and writes a request's _meta as a text map.
type metaCarrier map[string]any

func (m metaCarrier) Get(key string) string { s, _ := m[key].(string); return s }
func (m metaCarrier) Set(key, value string) { m[key] = value }
func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// extractTrace continues the client's trace, when the request carries
// one, so that the gate's spans and the effect run in it.
func extractTrace(ctx context.Context, meta map[string]any) context.Context {
	if meta == nil {
		return ctx
	}
	return traceContext.Extract(ctx, metaCarrier(meta))
}

// TraceContext is a sending middleware for an MCP client
// (sdk.Client.AddSendingMiddleware) that puts the span context of each
// request's context into the request's _meta (traceparent, tracestate),
// where a governed server takes it up: the call's spans and its effect
// then belong to the client's trace. It sets a copy of the _meta map on
// the request's params, leaving the caller's map as it was.
func TraceContext(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if p := req.GetParams(); p != nil {
			m := metaCarrier(maps.Clone(p.GetMeta()))
			if m == nil {
				m = metaCarrier{}
			}
			traceContext.Inject(ctx, m)
			if len(m) > 0 {
				p.SetMeta(m)
			}
		}
		return next(ctx, method, req)
	}
}

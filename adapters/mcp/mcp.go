package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/reply"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/toolgate"
)

// MetaRetryKey is the _meta key of a tools/call request that carries its
// retry key (a string): the id under which the client may send one call
// twice.
const MetaRetryKey = "blackboardkernel/retry_key"

// MetaApproval is the _meta key of an elicitation request for approval:
// an object with the tool, the action id, the arguments and their digest, for a
// client that renders approvals itself.
const MetaApproval = "blackboardkernel/approval"

// DefaultApprovalTTL is how long an approval given through elicitation
// stands: long enough for the call it was asked for to resume.
const DefaultApprovalTTL = 5 * time.Minute

// ErrInvalid is returned by [Govern] for a nil server or gate, an empty
// caller or a bad option.
var ErrInvalid = errors.New("mcp: invalid argument")

// Option configures [Govern].
type Option func(*config)

type config struct {
	trace    func(*sdk.ServerSession) string // nil: the session's with its subject
	approver string
	ttl      time.Duration
}

// WithTrace names the trace a session's calls belong to. It is called on
// every request, so it must give one session the same name each time. The
// default is [SessionTrace], preceded by the authenticated subject when
// the request carries one (see [SessionTrace]). A trace that leaves the
// subject out may serve two users: a request recorded for it
// ([toolgate.Gate.RecordRequest]) still holds each call to its principal.
func WithTrace(f func(*sdk.ServerSession) string) Option { return func(c *config) { c.trace = f } }

// WithApprover enables approvals through elicitation, recorded under the
// identity (the client's user; not the caller). Without it a call that
// needs approval waits for an approval given elsewhere.
func WithApprover(identity string) Option { return func(c *config) { c.approver = identity } }

// WithApprovalTTL sets how long an approval given through elicitation
// stands (default [DefaultApprovalTTL], at most [audit.MaxApprovalTTL]).
func WithApprovalTTL(d time.Duration) Option { return func(c *config) { c.ttl = d } }

type governor struct {
	g      *toolgate.Gate
	caller string
	tools  map[string]bool // the gate's tools, registered with the server
	config
}

// Govern registers every tool of g with server, each call of it gated for
// caller, and filters the server's tools/list to the gate's surface for
// the caller (see the package doc). Call it before the server runs; the
// server should hold no other tools, which no gate would govern.
func Govern(server *sdk.Server, g *toolgate.Gate, caller string, opts ...Option) error {
	if server == nil || g == nil || caller == "" {
		return fmt.Errorf("%w: Govern needs a server, a gate and a caller", ErrInvalid)
	}
	gv := &governor{g: g, caller: caller, tools: map[string]bool{}, config: config{ttl: DefaultApprovalTTL}}
	for _, o := range opts {
		o(&gv.config)
	}
	if gv.ttl <= 0 || gv.ttl > audit.MaxApprovalTTL {
		return fmt.Errorf("%w: approval TTL %v outside (0, %v]", ErrInvalid, gv.ttl, audit.MaxApprovalTTL)
	}
	if gv.approver == caller {
		return fmt.Errorf("%w: the approver %q is the caller", ErrInvalid, caller)
	}
	for _, s := range g.Tools() {
		schema := s.Parameters
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		gv.tools[s.Name] = true
		server.AddTool(&sdk.Tool{Name: s.Name, Description: s.Description, InputSchema: schema}, gv.call)
	}
	server.AddReceivingMiddleware(gv.surface)
	return nil
}

// surface narrows tools/list to the tools the gate would show the model,
// and hands a call of a tool the server does not hold to the gate, whose
// refusal (TOOL_UNKNOWN, with a hint) the model can act on.
func (gv *governor) surface(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if call, ok := req.(*sdk.CallToolRequest); ok && method == "tools/call" && call.Params != nil && !gv.tools[call.Params.Name] {
			return gv.call(ctx, call)
		}
		res, err := next(ctx, method, req)
		list, ok := res.(*sdk.ListToolsResult)
		if err != nil || method != "tools/list" || !ok {
			return res, err
		}
		ss, _ := req.GetSession().(*sdk.ServerSession)
		if ss == nil {
			return nil, fmt.Errorf("mcp: tools/list without a server session")
		}
		specs, err := gv.g.Surface(ctx, gv.caller, gv.traceOf(ss, req.GetExtra()), "")
		if err != nil {
			return nil, err
		}
		shown := make(map[string]bool, len(specs))
		for _, s := range specs {
			shown[s.Name] = true
		}
		out := *list
		out.Tools = nil
		for _, t := range list.Tools {
			if shown[t.Name] {
				out.Tools = append(out.Tools, t)
			}
		}
		if out.Tools == nil {
			out.Tools = []*sdk.Tool{}
		}
		return &out, nil
	}
}

// inputApproval names the approval among a call's input requests.
const inputApproval = "approval"

func (gv *governor) call(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	ctx = extractTrace(ctx, req.Params.GetMeta())
	trace := gv.traceOf(req.Session, req.Extra)
	args := req.Params.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if ans, ok := req.Params.InputResponses[inputApproval].(*sdk.ElicitResult); ok && gv.approver != "" && req.Params.RequestState != "" {
		res, err := gv.decide(ctx, trace, req.Params.RequestState, args, ans)
		if err != nil {
			return nil, err
		}
		return toolResult(res), nil
	}
	key, _ := req.Params.GetMeta()[MetaRetryKey].(string)
	res, err := gv.g.Call(ctx, toolgate.Call{ID: key, RetryKey: key, Tool: req.Params.Name, Args: args, Caller: gv.caller, TraceID: trace,
		Principal: principal(req.Extra)})
	if err != nil {
		return nil, err
	}
	if res.Outcome == audit.OutcomePendingApproval && gv.approver != "" && canAsk(req.Session) {
		shown, err := json.Marshal(map[string]any(res.Args))
		if err != nil {
			return nil, err
		}
		// The client asks its user and calls again with the answer and
		// the action id; the gate checks both (see decide).
		return &sdk.CallToolResult{RequestState: res.ActionID, InputRequests: sdk.InputRequestMap{inputApproval: &sdk.ElicitParams{
			Message:         fmt.Sprintf("Approve %s with %s (digest %s)?", req.Params.Name, shown, res.ArgsDigest),
			RequestedSchema: approvalSchema(res.ArgsDigest),
			Meta: sdk.Meta{MetaApproval: map[string]any{"tool": req.Params.Name, "action_id": res.ActionID,
				"digest": res.ArgsDigest, "args": res.Args}},
		}}}, nil
	}
	return toolResult(res), nil
}

// canAsk reports whether the session's client can put a form to its user.
func canAsk(ss *sdk.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil
}

func approvalSchema(digest string) map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"approve": map[string]any{"type": "boolean", "description": "Run this call?"},
			"digest":  map[string]any{"type": "string", "description": "The digest of the arguments approved.", "default": digest},
		},
		"required": []string{"approve", "digest"},
	}
}

// decide records the user's answer about the action the client names and
// resumes it with the call's own arguments. The client's word is checked,
// not trusted: the gate takes an approval only of a committed action of
// the session's trace whose arguments have the digest given, and Resume
// runs it only with those very arguments. An answer the gate does not take
// leaves the action waiting.
func (gv *governor) decide(ctx context.Context, trace, actionID string, args json.RawMessage, ans *sdk.ElicitResult) (toolgate.Result, error) {
	a := gv.g.Approver(gv.approver)
	digest, _ := ans.Content["digest"].(string)
	var err error
	switch yes, _ := ans.Content["approve"].(bool); {
	case ans.Action == "accept" && yes:
		_, err = a.Decide(ctx, audit.Approval{TraceID: trace, ActionID: actionID, Digest: digest, Decision: audit.Approved, Note: "approved through MCP elicitation", TTL: gv.ttl})
	case ans.Action == "accept" || ans.Action == "decline":
		if digest == "" {
			digest, err = committedDigest(args)
		}
		if err == nil {
			_, err = a.Decide(ctx, audit.Approval{TraceID: trace, ActionID: actionID, Digest: digest, Decision: audit.Denied, Note: "denied through MCP elicitation", TTL: gv.ttl})
		}
	}
	switch {
	case errors.Is(err, blackboard.ErrInvalidInput), errors.Is(err, blackboard.ErrPermission), errors.Is(err, kernel.ErrInvalidReference):
		// Not a decision about this call: Resume reports it waiting.
	case err != nil:
		return toolgate.Result{}, err
	}
	return gv.g.Resume(ctx, trace, actionID, args)
}

// committedDigest is the digest of the call's arguments, which a declined
// form, holding no digest, denies.
func committedDigest(args json.RawMessage) (string, error) {
	var p blackboard.Payload
	if err := json.Unmarshal(args, &p); err != nil {
		return "", fmt.Errorf("%w: %v", blackboard.ErrInvalidInput, err)
	}
	return toolgate.ArgsDigest(p)
}

// toolResult is a gate result as an MCP tool result: the text of
// [toolgate.Result.ForModel], as text and as structured content.
func toolResult(r toolgate.Result) *sdk.CallToolResult {
	text := r.ForModel()
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}, StructuredContent: json.RawMessage(text), IsError: reply.IsError(r.Outcome)}
}

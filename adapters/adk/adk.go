package adk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/adk/v2/tool/toolutils"
	"google.golang.org/genai"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/reply"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/toolgate"
)

// KeyIsError is the key of a tool response that marks a call the gate
// refused or that failed; the response's other keys are those of the
// gate's [toolgate.Result.ForModel].
const KeyIsError = "is_error"

// ErrInvalid is returned by [New] for a nil gate, an empty caller, an
// approver that is the caller, a tool whose parameters are no JSON
// schema, or an ADK tool of [WithTools] that the gate does not hold
// caller-driven or that has no Run method to run it by.
var ErrInvalid = errors.New("adk: invalid argument")

// Confirmation is the payload of the tool confirmation the plugin asks
// for: the call's tool, the action waiting for approval, and its committed
// arguments with their [toolgate.ArgsDigest]. The application shows it to
// the person and answers with Confirmed and the payload's Digest.
type Confirmation struct {
	Tool     string         `json:"tool"`
	ActionID string         `json:"action_id"`
	Digest   string         `json:"digest"`
	Args     map[string]any `json:"args"`
}

// Option configures [New].
type Option func(*config)

type config struct {
	trace    func(agent.ReadonlyContext) string
	approver string
	own      []tool.Tool
}

// WithTools gives the Governor the agent's own ADK tools (function tools,
// say): the gate holds each under its name caller-driven (a
// [toolgate.Tool] with no Effect), and the plugin has the gate run it as
// the call's effect ([toolgate.Call.Effect]). Each must have ADK's Run
// method (every function tool has): the plugin runs it as ADK would.
func WithTools(tools ...tool.Tool) Option { return func(c *config) { c.own = append(c.own, tools...) } }

// runnable is an ADK tool the plugin can run as ADK runs it: the method
// every function tool has (tool.Tool and Run; ADK's own interface for it
// is internal).
type runnable interface {
	tool.Tool
	Run(ctx agent.Context, args any) (map[string]any, error)
}

// WithTrace names the trace an invocation's calls belong to; the default
// is [Trace] of the invocation's app, user and session. A trace that
// leaves the user out lets two users' sessions share one trace (ADK
// sessions are per app, user and id, and a client may choose the id): a
// request recorded for it ([toolgate.Gate.RecordRequest]) still holds each
// call to its principal.
func WithTrace(f func(agent.ReadonlyContext) string) Option { return func(c *config) { c.trace = f } }

// Trace is the default trace of the calls of ADK session id of user in
// app: "adk:" and the three, each path-escaped, joined by "/". ADK keys a
// session by all three, and a client may choose the id, so two users'
// sessions with one id are two traces: neither acts on what the other's
// calls established (a verification, a lookup). An application records
// the request a session serves ([toolgate.Gate.RecordRequest], with the
// user id as its principal) under this trace.
func Trace(app, user, session string) string {
	if mutTraceUser {
		return "adk:" + session
	}
	return "adk:" + url.PathEscape(app) + "/" + url.PathEscape(user) + "/" + url.PathEscape(session)
}

// WithApprover enables approvals through ADK's tool confirmation,
// recorded under identity: the application's user, never the caller, and
// never anything the confirmation itself says. Without it a call that
// needs approval waits for an approval given elsewhere.
func WithApprover(identity string) Option { return func(c *config) { c.approver = identity } }

// Governor governs an ADK agent's tool calls with a gate: its
// [Governor.Plugin] answers every call with the gate's result, and as a
// [tool.Toolset] it shows the model the gate's surface for the caller. It
// is safe for concurrent use, as the gate is.
type Governor struct {
	g      *toolgate.Gate
	caller string
	tools  map[string]tool.Tool // the tools shown, by name: the agent's own, and stand-ins for the gate's
	own    map[string]runnable  // the agent's own tools, by name: caller-driven in the gate
	plugin *plugin.Plugin
	config
}

// errGate marks an error of the gate itself returned to ADK, which ADK
// hands to the error callback: not a call to put to the gate again.
type errGate struct{ err error }

func (e errGate) Error() string { return e.err.Error() }
func (e errGate) Unwrap() error { return e.err }

func newConfig(opts []Option) config {
	c := config{trace: func(ctx agent.ReadonlyContext) string { return Trace(ctx.AppName(), ctx.UserID(), ctx.SessionID()) }}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// New returns the Governor of g's tools for caller (see the package doc).
// Give the agent the Governor as a toolset and the runner its
// [Governor.Plugin].
func New(g *toolgate.Gate, caller string, opts ...Option) (*Governor, error) {
	if g == nil || caller == "" {
		return nil, fmt.Errorf("%w: New needs a gate and a caller", ErrInvalid)
	}
	gv := &Governor{g: g, caller: caller, tools: map[string]tool.Tool{}, own: map[string]runnable{}, config: newConfig(opts)}
	if gv.approver == caller {
		return nil, fmt.Errorf("%w: the approver %q is the caller", ErrInvalid, caller)
	}
	for _, t := range gv.config.own {
		rt, ok := t.(runnable)
		switch {
		case t == nil:
			return nil, fmt.Errorf("%w: a nil tool", ErrInvalid)
		case !ok:
			return nil, fmt.Errorf("%w: tool %s has no Run method to run it by", ErrInvalid, t.Name())
		case !g.CallerDriven(t.Name()):
			return nil, fmt.Errorf("%w: the gate holds no caller-driven tool %s (register it with no Effect)", ErrInvalid, t.Name())
		case gv.own[t.Name()] != nil:
			return nil, fmt.Errorf("%w: tool %s given twice", ErrInvalid, t.Name())
		}
		gv.own[t.Name()], gv.tools[t.Name()] = rt, guarded{rt}
	}
	for _, s := range g.Tools() {
		if g.CallerDriven(s.Name) {
			continue // the agent's own tool runs it, if it was given
		}
		t, err := newTool(s)
		if err != nil {
			return nil, err
		}
		gv.tools[s.Name] = t
	}
	p, err := plugin.New(plugin.Config{Name: "blackboardkernel", BeforeToolCallback: gv.before, OnToolErrorCallback: gv.onError})
	if err != nil {
		return nil, err
	}
	gv.plugin = p
	return gv, nil
}

// Plugin is the runner plugin that puts every tool call to the gate.
func (gv *Governor) Plugin() *plugin.Plugin { return gv.plugin }

// Name implements [tool.Toolset].
func (gv *Governor) Name() string { return "blackboardkernel" }

// Tools implements [tool.Toolset]: the tools the gate would show the model
// for the caller in the invocation's trace ([toolgate.Gate.Surface]).
func (gv *Governor) Tools(ctx agent.ReadonlyContext) ([]tool.Tool, error) {
	specs, err := gv.g.Surface(ctx, gv.caller, gv.trace(ctx), "")
	if err != nil {
		return nil, err
	}
	out := make([]tool.Tool, 0, len(specs))
	for _, s := range specs {
		if t, ok := gv.tools[s.Name]; ok {
			out = append(out, t)
		}
	}
	return out, nil
}

// onError hands a call of a tool the model was not shown (ADK does not
// find it) to the gate, whose refusal (TOOL_UNKNOWN, TOOL_NOT_PERMITTED,
// NO_COMMITTED_BELIEF, with a hint) the model can act on. An error of the
// gate itself passes through.
func (gv *Governor) onError(ctx agent.Context, t tool.Tool, args map[string]any, err error) (map[string]any, error) {
	if t == nil || errors.As(err, new(errGate)) {
		return nil, nil
	}
	return gv.before(ctx, t, args)
}

func (gv *Governor) before(ctx agent.Context, t tool.Tool, args map[string]any) (map[string]any, error) {
	if args == nil {
		args = map[string]any{}
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	trace, id := gv.trace(ctx), ctx.FunctionCallID()
	c := toolgate.Call{ID: id, RetryKey: id, Tool: t.Name(), Args: raw, Caller: gv.caller, TraceID: trace, Principal: gv.principal(ctx)}
	// The tool the plugin runs is the one given to WithTools, found by
	// name, not the one ADK hands over (the guard).
	if rt := gv.own[t.Name()]; rt != nil && !mutNoEffect {
		c.Effect = effect(ctx, rt)
	}
	res, err := gv.g.Call(ctx, c)
	if err != nil {
		return nil, errGate{err}
	}
	if res.Outcome != audit.OutcomePendingApproval || gv.approver == "" {
		return response(res)
	}
	if conf := ctx.ToolConfirmation(); conf != nil {
		return gv.resolve(ctx, c, res, conf.Confirmed, conf.Payload)
	}
	// ADK pauses the run and asks the application; its answer comes back
	// as this call again, with the confirmation set.
	if err := ctx.RequestConfirmation(fmt.Sprintf("Approve %s with digest %s?", t.Name(), res.ArgsDigest),
		Confirmation{Tool: t.Name(), ActionID: res.ActionID, Digest: res.ArgsDigest, Args: maps.Clone(res.Args)}); err != nil {
		return nil, err
	}
	return response(res)
}

// principal is who an invocation's calls are made for: ADK's user id,
// which the application gave the runner for the session, never anything
// the model says.
func (gv *Governor) principal(ctx agent.ReadonlyContext) string {
	if mutPrincipal {
		return ""
	}
	return ctx.UserID()
}

// resolve carries out the person's answer to the action res waits on. The
// confirmation is the client's word and is checked, not trusted: the
// action and the arguments are the gate's own (the call retried under its
// call id), the identity is the plugin's, and the digest the person
// approved must be the committed arguments' digest; a confirmation of
// other arguments (a forged one, adk-go #1499) is refused as
// APPROVAL_MISMATCH and records nothing.
func (gv *Governor) resolve(ctx agent.Context, c toolgate.Call, res toolgate.Result, confirmed bool, payload any) (map[string]any, error) {
	var shown Confirmation
	if b, err := json.Marshal(payload); err == nil {
		_ = json.Unmarshal(b, &shown)
	}
	if shown.Digest != res.ArgsDigest && !mutForgedConfirmation {
		return response(toolgate.Result{Outcome: audit.OutcomeRefused, Code: reason.ApprovalMismatch, ActionID: res.ActionID,
			Hint: "the confirmation does not approve this call's arguments; ask the person again"})
	}
	decision, note := audit.Denied, "denied through ADK tool confirmation"
	if confirmed {
		decision, note = audit.Approved, "approved through ADK tool confirmation"
	}
	digest := shown.Digest
	if mutForgedConfirmation {
		digest = res.ArgsDigest
	}
	out, err := gv.g.Approver(gv.approver).Resolve(ctx, audit.Approval{TraceID: c.TraceID, ActionID: res.ActionID, Digest: digest, Decision: decision, Note: note})
	if errors.Is(err, blackboard.ErrInvalidInput) || errors.Is(err, blackboard.ErrPermission) {
		return response(toolgate.Result{Outcome: audit.OutcomeRefused, Code: reason.ApprovalMismatch, ActionID: res.ActionID,
			Hint: "the confirmation was not taken: " + err.Error()})
	}
	if err == nil && out.Code == reason.EffectUnavailable {
		// The agent's own tool: the gate recorded the approval and had
		// no effect to run. The call again, under its call id, with the
		// tool, runs it once, under the approval.
		out, err = gv.g.Call(ctx, c)
	}
	if err != nil {
		return nil, errGate{err}
	}
	return response(out)
}

// effect runs the agent's own ADK tool as a call's effect, as ADK runs
// it, with the committed arguments; the effect's context (its deadline,
// the gate's span, the [toolgate.Invocation]) stands in for the
// invocation's.
func effect(ctx agent.Context, rt runnable) toolgate.EffectFunc {
	return func(ectx context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
		out, err := rt.Run(effectContext{ctx, ectx}, map[string]any(inv.Args))
		if err != nil {
			return nil, err
		}
		return out, nil
	}
}

// guarded is how the agent's own tool is shown to ADK: its declaration,
// and a Run that runs nothing, so that a runner without the plugin runs
// none of them (the plugin runs the tool itself, through the gate).
type guarded struct{ rt runnable }

func (g guarded) Name() string        { return g.rt.Name() }
func (g guarded) Description() string { return g.rt.Description() }
func (g guarded) IsLongRunning() bool { return g.rt.IsLongRunning() }

// Declaration is the tool's own, for the model.
func (g guarded) Declaration() *genai.FunctionDeclaration {
	if d, ok := g.rt.(toolutils.Tool); ok {
		return d.Declaration()
	}
	return nil
}

// ProcessRequest puts the guard, not the tool, in the request's tools:
// ADK calls what it finds there.
func (g guarded) ProcessRequest(_ agent.Context, req *model.LLMRequest) error {
	return toolutils.PackTool(req, g)
}

// Run runs nothing: only the plugin runs the tool.
func (g guarded) Run(agent.Context, any) (map[string]any, error) {
	return nil, fmt.Errorf("adk: %s called without the gate's plugin", g.rt.Name())
}

// effectContext is the tool invocation's agent.Context whose context
// methods are the effect's.
type effectContext struct {
	agent.Context
	c context.Context
}

func (e effectContext) Deadline() (time.Time, bool) { return e.c.Deadline() }
func (e effectContext) Done() <-chan struct{}       { return e.c.Done() }
func (e effectContext) Err() error                  { return e.c.Err() }
func (e effectContext) Value(key any) any           { return e.c.Value(key) }

// response is a gate result as an ADK tool response: the object of
// [toolgate.Result.ForModel], and [KeyIsError].
func response(r toolgate.Result) (map[string]any, error) {
	m := map[string]any{}
	if err := json.Unmarshal([]byte(r.ForModel()), &m); err != nil {
		return nil, err
	}
	m[KeyIsError] = reply.IsError(r.Outcome)
	return m, nil
}

// newTool is the ADK tool that stands in for the gate's tool s, whose
// effect the gate holds: its
// name, description and parameter schema. Its own Run never runs the tool:
// it fails, so a call that reaches it (the plugin missing from the runner)
// does nothing.
func newTool(s toolgate.Spec) (tool.Tool, error) {
	schema := &jsonschema.Schema{Type: "object"}
	if len(s.Parameters) > 0 {
		if err := json.Unmarshal(s.Parameters, schema); err != nil {
			return nil, fmt.Errorf("%w: tool %s: parameters: %v", ErrInvalid, s.Name, err)
		}
	}
	name := s.Name
	return functiontool.New(functiontool.Config{Name: s.Name, Description: s.Description, InputSchema: schema},
		func(agent.Context, map[string]any) (map[string]any, error) {
			return nil, fmt.Errorf("adk: %s called without the gate's plugin", name)
		})
}

package eino

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
	"github.com/eino-contrib/jsonschema"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/toolgate"
)

// ErrInvalid is returned by [New] for a nil gate, an empty caller, no
// trace, or an approver that is the caller, and by [Middleware.NodeConfig]
// for a tool the gate does not hold caller-driven or that the middleware
// cannot govern.
var ErrInvalid = errors.New("eino: invalid argument")

// ErrUngoverned is returned by a tool of [Middleware.Tools] run without
// the middleware: the gate's tools run only through the gate.
var ErrUngoverned = errors.New("eino: tool called without the gate's middleware")

// Approval is the info of the interrupt a call that needs approval
// raises: what the person is asked to approve.
type Approval struct {
	Tool     string
	ActionID string
	Digest   string // the [toolgate.ArgsDigest] of Args
	Args     map[string]any
}

// Decision is the resume data for an [Approval] interrupt
// (compose.ResumeWithData). Digest must be the Approval's; Args, when
// set, must have that digest. The approver's identity is not part of it:
// it is the application's ([WithApprover]).
type Decision struct {
	Approve bool
	Digest  string
	Args    map[string]any
}

// pending is the interrupted call's state, kept in the checkpoint.
type pending struct {
	Trace    string
	Tool     string
	ActionID string
	Digest   string
	Reply    string // the gate's waiting reply, shown while undecided
}

// approval is the question the state stands for, asked again by a run
// that resumes another call (the interrupt's id changes with every run).
// The arguments come from the gate, not the checkpoint, which never holds
// them: a masked argument's real value stays out of the framework's store.
func (m *Middleware) approval(ctx context.Context, p *pending) (*Approval, error) {
	a := &Approval{Tool: p.Tool, ActionID: p.ActionID, Digest: p.Digest}
	list, err := m.g.Pending(ctx, p.Trace)
	if err != nil {
		return nil, err
	}
	for _, q := range list {
		if q.ActionID == p.ActionID {
			a.Args = map[string]any(q.Args)
		}
	}
	return a, nil
}

func init() {
	// The checkpoint serializer must know the state's type.
	if err := compose.RegisterSerializableType[pending]("blackboardkernel/eino.pending"); err != nil {
		panic(err)
	}
}

// Option configures [New].
type Option func(*Middleware)

// WithTrace names the trace a call belongs to, from the run's context.
// Required.
func WithTrace(f func(context.Context) string) Option { return func(m *Middleware) { m.trace = f } }

// WithApprover enables approval through Eino's interrupt and resume,
// decided under identity (the application's verified user; not the
// caller). Without it a call that needs approval is returned to the model
// as waiting, for an approval given elsewhere.
func WithApprover(identity string) Option { return func(m *Middleware) { m.approver = identity } }

// Middleware governs an Eino ToolsNode's calls through a gate. It may be
// used from any goroutine.
type Middleware struct {
	g        *toolgate.Gate
	caller   string
	trace    func(context.Context) string
	approver string
}

// New returns the middleware that sends every tool call to g for caller.
func New(g *toolgate.Gate, caller string, opts ...Option) (*Middleware, error) {
	m := &Middleware{g: g, caller: caller}
	for _, o := range opts {
		o(m)
	}
	switch {
	case g == nil || caller == "":
		return nil, fmt.Errorf("%w: New needs a gate and a caller", ErrInvalid)
	case m.trace == nil:
		return nil, fmt.Errorf("%w: New needs WithTrace", ErrInvalid)
	case m.approver == caller:
		return nil, fmt.Errorf("%w: the approver %q is the caller", ErrInvalid, caller)
	}
	return m, nil
}

// NodeConfig is the ToolsNode configuration that governs tools, the
// integrator's own Eino tools, and the gate's tools that hold their
// effect ([Middleware.Tools]): a handler that sends a call of a tool the
// node does not hold to the gate (whose refusal the model can act on),
// and the middleware. Each of tools must be a caller-driven tool of the
// gate ([toolgate.Gate.CallerDriven]: registered under its name with no
// effect) and a plain [tool.InvokableTool]: one that also streams is
// refused with [ErrInvalid], since Eino would run it past the middleware
// in a streamed run. What the model is shown is still the gate's ([Middleware.Surface]).
func (m *Middleware) NodeConfig(ctx context.Context, tools ...tool.InvokableTool) (*compose.ToolsNodeConfig, error) {
	all := make([]tool.BaseTool, 0, len(tools))
	for _, t := range tools {
		ti, err := t.Info(ctx)
		if err != nil {
			return nil, err
		}
		switch t.(type) {
		case tool.StreamableTool, tool.EnhancedStreamableTool:
			return nil, fmt.Errorf("%w: tool %s also streams: Eino would run it past the middleware", ErrInvalid, ti.Name)
		}
		if !m.g.CallerDriven(ti.Name) {
			return nil, fmt.Errorf("%w: the gate holds no caller-driven tool %s (register it with no Effect)", ErrInvalid, ti.Name)
		}
		all = append(all, t)
	}
	all = append(all, m.Tools()...)
	return &compose.ToolsNodeConfig{
		Tools:               all,
		UnknownToolsHandler: m.unknown,
		ToolCallMiddlewares: []compose.ToolMiddleware{{Invokable: m.Invokable}},
	}, nil
}

// Tools returns a tool for each of the gate's tools that holds its
// effect; the gate runs it. Run without the middleware, they fail with
// [ErrUngoverned].
func (m *Middleware) Tools() []tool.BaseTool {
	var out []tool.BaseTool
	for _, s := range m.g.Tools() {
		if !m.g.CallerDriven(s.Name) {
			out = append(out, gated{info(s)})
		}
	}
	return out
}

// Surface is the tools to bind to the model for the trace of ctx: the
// gate's surface for the caller.
func (m *Middleware) Surface(ctx context.Context) ([]*schema.ToolInfo, error) {
	specs, err := m.g.Surface(ctx, m.caller, m.trace(ctx), "")
	if err != nil {
		return nil, err
	}
	out := make([]*schema.ToolInfo, 0, len(specs))
	for _, s := range specs {
		out = append(out, info(s))
	}
	return out, nil
}

func info(s toolgate.Spec) *schema.ToolInfo {
	ti := &schema.ToolInfo{Name: s.Name, Desc: s.Description}
	js := &jsonschema.Schema{}
	if len(s.Parameters) > 0 && json.Unmarshal(s.Parameters, js) == nil {
		ti.ParamsOneOf = schema.NewParamsOneOfByJSONSchema(js)
	}
	return ti
}

// jsonArgs is a model's arguments for the gate: a model that sends none
// calls with an empty object.
func jsonArgs(s string) json.RawMessage {
	if s == "" {
		return json.RawMessage("{}")
	}
	return json.RawMessage(s)
}

type gated struct{ ti *schema.ToolInfo }

func (t gated) Info(context.Context) (*schema.ToolInfo, error) { return t.ti, nil }

func (t gated) InvokableRun(context.Context, string, ...tool.Option) (string, error) {
	return "", fmt.Errorf("%w: %s", ErrUngoverned, t.ti.Name)
}

func (m *Middleware) unknown(ctx context.Context, name, args string) (string, error) {
	res, err := m.g.Call(ctx, toolgate.Call{Tool: name, Args: jsonArgs(args), Caller: m.caller, TraceID: m.trace(ctx)})
	if err != nil {
		return "", err
	}
	return res.ForModel(), nil
}

// Invokable is the tool middleware. It puts every call to the gate
// under the call's id as its retry key, and never calls next itself: for
// a caller-driven tool next (the integrator's Eino tool) is the call's
// effect, which the gate runs once the call is allowed, with the
// committed arguments; any other tool's effect is the gate's. A call that
// needs approval, with an approver, interrupts the run with an
// [Approval]; its resume with a [Decision] resolves it (see the package
// doc).
func (m *Middleware) Invokable(next compose.InvokableToolEndpoint) compose.InvokableToolEndpoint {
	return func(ctx context.Context, in *compose.ToolInput) (*compose.ToolOutput, error) {
		if st := interrupted(ctx); st != nil {
			return m.resume(ctx, st, next, in)
		}
		trace := m.trace(ctx)
		res, err := m.call(ctx, trace, next, in)
		if err != nil {
			return nil, err
		}
		reply := res.ForModel()
		if res.Outcome != audit.OutcomePendingApproval || m.approver == "" {
			return &compose.ToolOutput{Result: reply}, nil
		}
		return nil, compose.StatefulInterrupt(ctx,
			&Approval{Tool: in.Name, ActionID: res.ActionID, Digest: res.ArgsDigest, Args: map[string]any(res.Args)},
			&pending{Trace: trace, Tool: in.Name, ActionID: res.ActionID, Digest: res.ArgsDigest, Reply: reply})
	}
}

// call puts the call to the gate, with next as its effect when the gate
// holds the tool caller-driven.
func (m *Middleware) call(ctx context.Context, trace string, next compose.InvokableToolEndpoint, in *compose.ToolInput) (toolgate.Result, error) {
	c := toolgate.Call{ID: in.CallID, RetryKey: in.CallID, Tool: in.Name, Args: jsonArgs(in.Arguments), Caller: m.caller, TraceID: trace}
	if m.g.CallerDriven(in.Name) && !mutNoEffect {
		c.Effect = effect(next, in)
	}
	return m.g.Call(ctx, c)
}

// effect runs the Eino tool behind next as a call's effect: with the
// committed arguments (what was approved, not what the model sent), in
// the effect's context. Its text is the output: a JSON object as it is,
// anything else under "result".
func effect(next compose.InvokableToolEndpoint, in *compose.ToolInput) toolgate.EffectFunc {
	return func(ctx context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
		args, err := json.Marshal(map[string]any(inv.Args))
		if err != nil {
			return nil, err
		}
		run := *in
		run.Arguments = string(args)
		out, err := next(ctx, &run)
		if err != nil {
			return nil, err
		}
		var obj map[string]any
		if out != nil && json.Unmarshal([]byte(out.Result), &obj) == nil && obj != nil {
			return obj, nil
		}
		text := ""
		if out != nil {
			text = out.Result
		}
		return blackboard.Payload{"result": text}, nil
	}
}

// interrupted returns the state of the call's interrupt, if this run
// resumes one; the checkpoint may give it back as a value or a pointer.
func interrupted(ctx context.Context) *pending {
	if _, ok, st := compose.GetInterruptState[*pending](ctx); ok && st != nil {
		return st
	}
	if _, ok, st := compose.GetInterruptState[pending](ctx); ok {
		return &st
	}
	return nil
}

// resume carries out the person's decision. A resume not aimed at this
// call interrupts again, with its Approval; a decision about other arguments (another digest,
// or arguments of another digest) is refused: nothing is recorded, and the
// model is shown the call still waiting.
func (m *Middleware) resume(ctx context.Context, st *pending, next compose.InvokableToolEndpoint, in *compose.ToolInput) (*compose.ToolOutput, error) {
	aimed, has, d := compose.GetResumeContext[*Decision](ctx)
	if !aimed {
		a, err := m.approval(ctx, st)
		if err != nil {
			return nil, err
		}
		return nil, compose.StatefulInterrupt(ctx, a, st)
	}
	if !has || d == nil || !m.matches(d, st) {
		return &compose.ToolOutput{Result: st.Reply}, nil
	}
	decision := audit.Denied
	if d.Approve {
		decision = audit.Approved
	}
	res, err := m.g.Approver(m.approver).Resolve(ctx, audit.Approval{TraceID: st.Trace, ActionID: st.ActionID, Digest: d.Digest, Decision: decision, Note: "decided through an Eino resume"})
	if err == nil && res.Code == reason.EffectUnavailable {
		// A caller-driven tool: the gate recorded the approval and ran
		// nothing. The call again, under its id, with the tool, runs it
		// (the gate binds the arguments to the approved digest).
		res, err = m.call(ctx, st.Trace, next, in)
	}
	if err != nil {
		return nil, err
	}
	return &compose.ToolOutput{Result: res.ForModel()}, nil
}

func (m *Middleware) matches(d *Decision, st *pending) bool {
	if d.Digest != st.Digest {
		return false
	}
	if d.Args == nil {
		return true
	}
	got, err := toolgate.ArgsDigest(blackboard.Payload(d.Args))
	return err == nil && got == st.Digest
}

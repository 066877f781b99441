package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/pack"
	"github.com/blackboardkernel/bk/toolgate"
)

// toolCaller is what an [Agent] needs from the tool gate: the tools a role
// may be shown, and a decision on each call. A *toolgate.Gate satisfies
// it; the package's tests pass a fake.
//
// Surface returns the tools the role may call now in the trace, for the
// intent ("" when none). Call decides a call and, when the policy allows,
// runs its effect; a refusal is a [toolgate.Result], not an error. An error
// from either means the gate could not decide (a store failure, a
// cancelled context), and the agent stops.
type toolCaller interface {
	Surface(ctx context.Context, role, traceID, intent string) ([]toolgate.Spec, error)
	Call(ctx context.Context, call toolgate.Call) (toolgate.Result, error)
}

// defaultMaxRounds is how many model calls an [Agent] makes in one run
// unless [WithMaxRounds] says otherwise.
const defaultMaxRounds = 8

// Agent runs a model's tool-calling conversation with every call going
// through a [toolgate.Gate]. It never runs a tool itself: the gate decides each call
// and runs what it allows, and the agent hands the gate's answer back to
// the model as the tool's result, so a refused call comes back with its
// code and repair hint and the model can try something else.
//
// One round is one model call and then, in order, one gate call for each
// tool call the model made. Before each model call the agent asks the gate
// for the tool surface again, since a tool may appear or disappear as
// beliefs commit, and calls the [WithBeforeModelCall] hook if there is one.
// The run ends when the model answers without calling a tool, or with
// [ErrMaxRounds] once the rounds ([WithMaxRounds]) are used up.
//
// With [WithCompiler], each round's request is not the conversation but
// a compiled context for the round, recorded in the trace and named by
// every call of the round (see WithCompiler).
//
// Every tool call the model makes goes to the gate, including calls of
// tools that were not on the surface (the gate refuses them) and calls
// whose arguments are not valid JSON: those arrive as a JSON string holding
// the model's text, which is not an object, so the gate refuses them as
// invalid arguments and records what the model wrote.
//
// An Agent holds no mutable state; it is safe for concurrent use on
// different tasks.
type Agent struct {
	c         *Client
	g         toolCaller
	maxRounds int
	before    func(context.Context, Usage) error
	nilHook   bool // WithBeforeModelCall(nil) was given
	comp      *pack.Compiler
	nilComp   bool           // WithCompiler(nil) was given
	cg        *toolgate.Gate // g, when comp is set: the compiler reads its controls, policy and kernel
}

// AgentOption configures an [Agent] in [NewAgent].
type AgentOption func(*Agent)

// WithMaxRounds bounds how many model calls one run makes (default
// 8; at least 1).
func WithMaxRounds(n int) AgentOption { return func(a *Agent) { a.maxRounds = n } }

// WithBeforeModelCall sets a hook the agent calls before each model call
// with the usage of the run so far (zero before the first call). An error
// from it stops the run before the call, and [Agent.Run] returns an error
// wrapping it. It is the seam for budgets: a token or call budget refuses
// the next call by returning an error.
func WithBeforeModelCall(hook func(ctx context.Context, used Usage) error) AgentOption {
	return func(a *Agent) { a.before, a.nilHook = hook, hook == nil }
}

// NewAgent returns an Agent that asks the model through c and hands every
// tool call to g. A nil client, gate, option or hook, or fewer than one
// round, is [ErrInvalidConfig].
func NewAgent(c *Client, g *toolgate.Gate, opts ...AgentOption) (*Agent, error) {
	if g == nil {
		return nil, fmt.Errorf("%w: agent: nil gate", ErrInvalidConfig)
	}
	return newAgent(c, g, opts...)
}

// newAgent is NewAgent on any toolCaller (the tests' fakes).
func newAgent(c *Client, g toolCaller, opts ...AgentOption) (*Agent, error) {
	bad := func(what string) (*Agent, error) { return nil, fmt.Errorf("%w: agent: %s", ErrInvalidConfig, what) }
	switch {
	case c == nil:
		return bad("nil client")
	case g == nil:
		return bad("nil gate")
	}
	a := &Agent{c: c, g: g, maxRounds: defaultMaxRounds}
	for _, o := range opts {
		if o == nil {
			return bad("nil option")
		}
		o(a)
	}
	switch {
	case a.maxRounds < 1:
		return bad(fmt.Sprintf("max rounds %d below 1", a.maxRounds))
	case a.nilHook:
		return bad("nil before-model-call hook")
	case a.nilComp:
		return bad("nil compiler")
	}
	if a.comp != nil {
		cg, ok := g.(*toolgate.Gate)
		if !ok {
			return bad(fmt.Sprintf("a compiler needs a *toolgate.Gate, not %T", g))
		}
		a.cg = cg
	}
	return a, nil
}

// Task is one conversation an [Agent] runs.
type Task struct {
	// Caller names the worker's contract; the gate shows and allows
	// tools by it. Required.
	Caller string
	// TraceID is the episode the calls belong to. Required.
	TraceID string
	// Intent, when set, names the intent the calls serve.
	Intent string
	// System is the system prompt; "" sends none.
	System string
	// User is the user message that starts the conversation. Required.
	User string

	// Budget, when set, is the run budget the task spends: the run's own,
	// or a sub-run for a sub-agent lane. Each round begins a new turn of
	// it; before each model call the agent charges the tokens the earlier
	// calls used and admits the next call (holding TokenEstimate tokens
	// until its usage is known), and a refusal stops the run before the
	// call is sent, with an error holding the *budget.Refusal. Every tool
	// call is charged to it at the gate, besides the gate's own budget
	// (toolgate.Config.Budget): the two compose, neither replaces the other.
	Budget *budget.Run
	// TokenEstimate is how many tokens each model call holds on Budget
	// until it reports its usage, so that parallel lanes cannot all start
	// calls against the same last tokens. 0 holds none.
	TokenEstimate int64
	// Guard, when set, is the loop guard the gate asks before each tool
	// call of the task (toolgate.Call.Guard), besides the gate's own budget
	// and guard.
	Guard *budget.Guard
	// Grant, when set, is the grant the task runs under: each tool call is
	// one of its turns, and the worker cannot extend it. A failure the
	// worker cannot repair (toolgate.Result.Failure; the grant's yield
	// check, failure.GrantYielded) ends the run at once with an error
	// wrapping [ErrGrantEnded] and the failure; once every turn is used,
	// the model gets one more call, without tools, to answer with what it
	// has. Without a grant the model calls tools until it answers or the
	// rounds run out.
	Grant *failure.Grant
}

// ToolResult is one tool call the model made and the gate's answer.
type ToolResult struct {
	// Round is the round the model made the call in, from 1.
	Round int
	// Call is the call as the agent handed it to the gate.
	Call toolgate.Call
	// Result is the gate's answer, as the model was shown it.
	Result toolgate.Result
}

// AgentResult is what one run of an [Agent] did.
type AgentResult struct {
	// Answer is the model's final text: its answer without tool calls.
	// "" when the run ended otherwise.
	Answer string
	// FinishReason is the finish_reason of the last completion.
	FinishReason string
	// Usage sums the token usage over the model calls; Usage.ModelCalls
	// is how many model calls returned (the rounds run).
	Usage Usage
	// Calls are the tool calls handed to the gate and its answers, in
	// order.
	Calls []ToolResult
	// Trajectory has one entry per tool call handed to the gate, in
	// order: the turn, the tool, and ok or the failure's status and
	// category (toolgate.Result.Failure). It is what the orchestrator sees
	// of the run.
	Trajectory []failure.TrajectoryEntry
	// Contexts are, with a compiler ([WithCompiler]), the record ids of
	// the compiled contexts the model was shown, one per round in order;
	// nil without one.
	Contexts []string
	// GrantEnd is how the task's grant ended: "" without a
	// grant, or while turns were left.
	GrantEnd failure.GrantEnd

	// messages is the conversation: the system and user messages, then
	// each assistant message and the tool results answering it. With a
	// compiler ([WithCompiler]) each round's request is one user message
	// holding the compiled prompt, and messages holds, round by round,
	// that message, the assistant's answer and the tool results.
	messages []message
}

// Run runs the conversation of t: system prompt and user message, then
// rounds of model calls and gate calls until the model answers without
// calling a tool.
//
// The error is nil when the model answered. Otherwise it wraps
// [ErrMaxRounds] when the model still called tools in the last round (the
// gate decided those calls too), the hook's error ([WithBeforeModelCall]),
// the gate's error, the client's error ([ErrEndpoint] once the retries ran
// out, [ErrInvalidConfig] for a surface the gate built wrong) or the
// context's error. Even then the result holds everything that happened up
// to that point: the calls the gate decided and the usage. A task without Caller, TraceID or User is
// [ErrInvalidConfig].
func (a *Agent) Run(ctx context.Context, t Task) (res AgentResult, err error) {
	if t.Caller == "" || t.TraceID == "" || t.User == "" {
		return res, fmt.Errorf("%w: agent task needs a caller, a trace and a user message", ErrInvalidConfig)
	}
	rt := newTaskRuntime(t)
	defer rt.finish(&res)
	if a.comp != nil && strings.TrimSpace(t.System) == "" {
		return res, fmt.Errorf("%w: an agent with a compiler needs the task's System prompt: it is the compiled context's mission", ErrInvalidConfig)
	}
	if a.comp == nil {
		if t.System != "" {
			res.messages = append(res.messages, message{Role: "system", Content: t.System})
		}
		res.messages = append(res.messages, message{Role: "user", Content: t.User})
	}
	ids := make(map[string]bool)
	last := -1 // where the messages of the last round's tool results begin
	for round := 1; round <= a.maxRounds; round++ {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("llm: agent stopped before round %d: %w", round, err)
		}
		var tools []toolgate.Spec
		if rt.toolsAllowed() {
			if tools, err = a.g.Surface(ctx, t.Caller, t.TraceID, t.Intent); err != nil {
				return res, fmt.Errorf("llm: agent: tool surface for round %d: %w", round, err)
			}
		}
		if err := rt.beforeModelCall(ctx, res.Usage); err != nil {
			return res, fmt.Errorf("llm: agent stopped before model call %d: %w", round, err)
		}
		if a.before != nil {
			if err := a.before(ctx, res.Usage); err != nil {
				return res, fmt.Errorf("llm: agent stopped before model call %d: %w", round, err)
			}
		}
		msgs, contextID := res.messages, ""
		if a.comp != nil {
			var p *pack.Pack
			if p, contextID, err = a.compile(ctx, t, rt, &res, tools, last); err != nil {
				return res, fmt.Errorf("llm: agent: compiled context of round %d: %w", round, err)
			}
			tools = shown(tools, p)
			msgs = []message{{Role: "user", Content: p.Prompt}}
			res.messages = append(res.messages, msgs[0])
			res.Contexts = append(res.Contexts, contextID)
		}
		out, err := a.c.complete(ctx, msgs, tools)
		if err != nil {
			return res, fmt.Errorf("llm: agent: model call %d: %w", round, err)
		}
		res.FinishReason = out.FinishReason
		res.Usage = res.Usage.add(out.Usage)
		calls := uniqueIDs(out.ToolCalls, round, ids)
		res.messages = append(res.messages, message{Role: "assistant", Content: out.Content, ToolCalls: calls})
		last = len(res.messages)
		a.c.log.DebugContext(ctx, "llm: agent round", "trace", t.TraceID, "round", round,
			"tools", len(tools), "calls", len(calls), "finish", out.FinishReason)
		if len(calls) == 0 || !rt.toolsAllowed() {
			res.Answer = out.Content
			rt.skip(&res, calls)
			return res, nil
		}
		for i, tc := range calls {
			if !rt.toolsAllowed() {
				rt.skip(&res, calls[i:])
				break
			}
			call := toolgate.Call{
				ID:      tc.ID,
				Tool:    tc.Function.Name,
				Args:    arguments(tc.Function.Arguments),
				Caller:  t.Caller,
				TraceID: t.TraceID,
				Intent:  t.Intent,
				Budget:  t.Budget, // charged at the gate besides the gate's own
				Guard:   t.Guard,
				Context: contextID,
			}
			r, err := a.g.Call(ctx, call)
			if err != nil {
				return res, fmt.Errorf("llm: agent: gate call %s (%s) in round %d: %w", strconv.Quote(call.Tool), call.ID, round, err)
			}
			a.c.log.DebugContext(ctx, "llm: agent tool call", "trace", t.TraceID, "round", round,
				"tool", call.Tool, "outcome", string(r.Outcome), "code", string(r.Code))
			res.Calls = append(res.Calls, ToolResult{Round: round, Call: call, Result: r})
			res.messages = append(res.messages, message{Role: "tool", ToolCallID: tc.ID, Content: r.ForModel()})
			if lerr := rt.turn(&res, call.Tool, r); lerr != nil {
				rt.skip(&res, calls[i+1:])
				return res, lerr
			}
		}
	}
	return res, fmt.Errorf("%w: the model still called tools after %d round(s)", ErrMaxRounds, a.maxRounds)
}

// uniqueIDs returns the calls with an id each that no earlier call of the
// run has: a call without an id, or with one already used, gets
// "call_<round>_<index>" (index from 0; a suffix is added if even that is
// taken). The tool message answering a call repeats its id, so the model
// can tell its results apart.
func uniqueIDs(calls []toolCall, round int, seen map[string]bool) []toolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]toolCall, len(calls))
	for i, c := range calls {
		if c.ID == "" || seen[c.ID] {
			base := fmt.Sprintf("call_%d_%d", round, i)
			c.ID = base
			for n := 2; seen[c.ID]; n++ {
				c.ID = fmt.Sprintf("%s_%d", base, n)
			}
		}
		if c.Type == "" {
			c.Type = "function"
		}
		seen[c.ID] = true
		out[i] = c
	}
	return out
}

// arguments turns the model's argument text into the JSON the gate gets:
// the text itself when it is valid JSON, "{}" when it is empty, and
// otherwise a JSON string holding the text, which the gate refuses as not
// an object.
func arguments(text string) json.RawMessage {
	s := strings.TrimSpace(text)
	switch {
	case s == "":
		return json.RawMessage(`{}`)
	case json.Valid([]byte(s)):
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(text) // a string always encodes
	return b
}

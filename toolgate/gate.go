package toolgate

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/telemetry"
	"github.com/blackboardkernel/bk/kernel"
)

// Percept kinds the gate writes, besides each tool's result kind.
const (
	// KindAttempt is the percept an executor writes before it starts an
	// effect (persist before act).
	KindAttempt = "effect_attempt"
	// KindFailed records an effect that failed for good, or a committed
	// action refused for good when it was to run (status refused: its
	// caller lost the tool, say). A failure is no observation of what the
	// tool looks at, so it is not recorded under the tool's result kind
	// and never replaces the last good result.
	KindFailed = "effect_failed"
	// KindEscalated records an action that will not run because its
	// approval was denied or expired; the safe fallback follows it.
	KindEscalated = "effect_escalated"
)

// GateWriter is the planner writer the gate submits safe fallbacks with.
const GateWriter = "toolgate"

// CallerWriter returns the writer id under which a caller's calls are proposed
// to the kernel. It is what decision records and provenance name, and an
// approver minted with this identity is refused: a caller cannot approve its
// own calls.
func CallerWriter(caller string) string { return "caller:" + caller }

// DeriverWriter returns the planner writer id under which the gate
// proposes the beliefs a tool's results derive ([Tool.Derives]).
func DeriverWriter(tool string) string { return "derive:" + tool }

// Contract is a caller's contract: the tools a worker that calls under its
// name is authorized to use. A tool not listed is refused (TOOL_NOT_PERMITTED) and never
// surfaced.
type Contract struct {
	Name  string   `json:"name"`  // the caller's name, as calls give it ([Call.Caller])
	Tools []string `json:"tools"` // the registered tools the caller may call
}

// Intent names a kind of request and the tools that may serve it. When any
// intent is configured, every call must name one that lists its tool.
type Intent struct {
	Name  string   `json:"name"`  // the intent's name, as calls give it ([Call.Intent])
	Tools []string `json:"tools"` // the registered tools that may serve it
}

// Gate is the tool-call gate: every tool call of an agent passes through
// it as a governed kernel action. Build it with [New]. A Gate is immutable
// after New and safe for concurrent use by any number of goroutines, and
// several processes may run gates over one store: the store's once-keys
// order them. It starts no goroutines.
type Gate struct {
	k         *kernel.Kernel
	tools     map[string]*entry
	order     []*entry
	byAction  map[string]*entry
	contracts map[string]*contract
	intents   map[string]map[string]bool // nil: no intents configured
	lease     time.Duration
	fallback  string
	planner   governed      // submits fallbacks
	reader    kernel.Handle // reads records
	tracer    telemetry.Tracer
	metrics   *gateMetrics // nil: metrics off
	budget    *Budget      // the default budget of calls ([Config.Budget]); nil for none
	mask      *masker      // hashes masked fields ([Config.MaskKey], [Config.MaskKeys]); nil without a key
	// The policy snapshot: its JSON, its hash (boxed once, as decision
	// records hold it) and the id of the record that holds it.
	policyJSON  []byte
	policyHash  string
	policyValue any
	policyID    string
}

// entry is a registered tool with what New compiled for it.
type entry struct {
	Tool
	spec    Spec
	schema  *schema
	policy  *policy
	once    bool     // the action spec has a once-key
	handle  governed // writes the tool's attempts and results; set once the kernel is built
	derives []derivation
	deriver governed // proposes the derived beliefs; set once the kernel is built
	// requires is the tool's belief kinds as an action's requires_beliefs
	// holds them, boxed once: never changed, and the kernel copies it.
	requires any
	// nameValue is the tool's name boxed once, as records hold it.
	nameValue any
	spanName  string // the name of a call's own span: "execute_tool " and the name
}

type contract struct {
	name    string
	value   any // name, boxed once, as records hold it
	tools   map[string]bool
	planner governed
}

// Kernel returns the kernel the gate built and governs, for the handles of
// the agent's workers and approvers, an orchestrator, inspection. Safe for
// concurrent use.
func (g *Gate) Kernel() *kernel.Kernel { return g.k }

// CallerDriven reports whether the gate holds the tool named name
// without an effect: its caller runs it, handing the gate each call's
// effect ([Call.Effect]). It is false for a tool the gate does not hold.
func (g *Gate) CallerDriven(name string) bool {
	e := g.tools[name]
	return e != nil && e.Effect == nil
}

// Close closes what the gate opened, and only that: its kernel and, when
// no store was given (Config.Kernel.Store nil), the memory store the
// kernel opened for it. A store the caller passed stays the caller's: it
// stays open, and the caller closes it after the gate, which is what
// writes a SQLite store's last records from its -wal file into the
// database file. Stop what uses the gate first (a supervisor's Close
// waits for its effects); with defer, close in the opposite order of
// opening: defer the store's Close, then the gate's, then the
// supervisor's, and they run the other way round. The gate must not be
// used after.
func (g *Gate) Close() error { return g.k.Close() }

// register checks a tool and compiles what the gate needs of it.
func (g *Gate) register(t Tool) (*entry, error) {
	bad := func(field, format string, a ...any) error {
		return &ConfigError{Tool: t.Name, Field: field, Problem: fmt.Sprintf(format, a...), Err: ErrInvalidTool}
	}
	if err := checkToolName(t.Name); err != nil {
		return nil, bad("Name", "%v", err)
	}
	if g.tools[t.Name] != nil {
		return nil, bad("Name", "registered twice")
	}
	if t.defErr != nil {
		return nil, bad("Definition", "%v", t.defErr)
	}
	if g.byAction[t.action()] != nil {
		return nil, bad("Action", "action type %q is another tool's", t.action())
	}
	switch rk := t.resultKind(); rk {
	case KindAttempt, KindFailed, KindEscalated, audit.Kind, audit.KindApproval:
		return nil, bad("Result", "result kind %q is reserved", rk)
	}
	if slices.Contains(t.Requires, "") {
		return nil, bad("Requires", "empty belief kind in Requires")
	}
	if t.ResultTTL < 0 || t.ResultTTL > blackboard.MaxTTL {
		return nil, bad("ResultTTL", "result TTL %v", t.ResultTTL)
	}
	r := t.Retry.withDefaults()
	if r.MaxAttempts < 1 || r.Backoff < 0 || r.MaxBackoff < r.Backoff {
		return nil, bad("Retry", "retry policy %+v", t.Retry)
	}
	t.Retry = r
	t.Requires = slices.Clone(t.Requires)
	t.Hints = maps.Clone(t.Hints)
	params := slices.Clone(t.Parameters)
	if len(params) == 0 {
		params = slices.Clone(defaultParameters)
	}
	t.Parameters = params
	s, err := parseSchema(params)
	if err != nil {
		return nil, bad("Parameters", "%v", err)
	}
	pol, err := compilePolicy(t.Approval, s)
	if err != nil {
		return nil, bad("Approval", "%v", err)
	}
	if err := checkBindings(&t, s); err != nil {
		return nil, bad("Bindings", "%v", err)
	}
	if err := checkMasked(&t); err != nil {
		return nil, bad("Masked", "%v", err)
	}
	if err := checkScope(&t, s); err != nil {
		return nil, bad("Scope", "%v", err)
	}
	t.Scope = maps.Clone(t.Scope)
	t.Masked = slices.Clone(t.Masked)
	t.Bindings = slices.Clone(t.Bindings)
	if o := t.Once; o != nil && (len(o.Fields) == 0 || slices.Contains(o.Fields, "") || o.Limit < 0) {
		return nil, bad("Once", "a once-key needs non-empty fields and a limit of zero or more")
	}
	if t.Once != nil {
		o := *t.Once
		o.Fields = slices.Clone(o.Fields)
		t.Once = &o
		for i, f := range o.Fields {
			// A misspelt field would leave every call without its key
			// (ONCE_KEY_MISSING): refuse it here instead.
			if _, declared := s.props[f]; o.Percept == "" && !declared && len(s.props) > 0 {
				return nil, bad(fmt.Sprintf("Once.Fields[%d]", i), "once-key field %q is not a declared argument: every call would lack its key (ONCE_KEY_MISSING)", f)
			}
		}
	}
	derives, err := compileDerives(t.Derives)
	if err != nil {
		return nil, bad("Derives", "%v", err)
	}
	t.Derives = slices.Clone(t.Derives)
	requires := slices.Clone(t.Requires)
	if requires == nil {
		requires = []string{}
	}
	return &entry{
		Tool:   t,
		spec:   Spec{Name: t.Name, Description: t.Description, Parameters: params},
		schema: s, policy: pol, once: t.Once != nil, derives: derives,
		handle:   governedAs(g.k, toolWriter(t.Name)),
		requires: requires, nameValue: t.Name, spanName: "execute_tool " + t.Name,
	}, nil
}

// actionSpec is the kernel action spec of the tool's action type: a
// read-only tool's is a safe, repeatable action; any other's requires the
// tool's beliefs.
func (t *Tool) actionSpec() kernel.ActionSpec {
	s := kernel.ActionSpec{Type: t.action(), Once: t.Once}
	if t.restsOnNothing() {
		s.SafeFallback, s.Repeatable = true, true
	} else {
		s.MinBeliefs = slices.Clone(t.Requires)
	}
	return s
}

// checkName refuses caller and intent names the kernel would refuse as a
// kind, and long ones.
func checkName(s string) error { return checkLen(s, 256) }

// maxToolName bounds a tool's name.
const maxToolName = 64

// isToolName reports whether s is a tool name: 1 to 64 ASCII letters,
// digits, '_', '.' and '-', what model frameworks accept. Nothing else a
// model sends as a tool name reaches a record as it is, so no escape
// sequence can reach an operator's terminal through one.
func isToolName(s string) bool {
	if s == "" || len(s) > maxToolName {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// checkToolName refuses a tool name that is not a name ([isToolName]).
func checkToolName(s string) error {
	if !mutToolName && !isToolName(s) {
		return fmt.Errorf("the name is not 1 to %d of A-Z, a-z, 0-9, _, . and -", maxToolName)
	}
	return checkName(s)
}

// invalidTool is the kind under which a call naming no tool name is
// refused.
const invalidTool = "invalid_tool_name"

// toolLabel is a called tool's name where a label is wanted (a kind, a
// span, the loop guard): the name when it is one, else invalidTool.
func toolLabel(s string) string {
	if mutToolName {
		return clip(s)
	}
	if !isToolName(s) {
		return invalidTool
	}
	return s
}

// recordedTool is a called tool's name as decision records keep it: the
// name when it is one, else escapedTool.
func recordedTool(s string) string {
	if mutToolName || isToolName(s) {
		return clip(s)
	}
	return escapedTool(s)
}

// escapedTool shows a string that is not a tool name: its first 64 bytes,
// quoted with every byte outside printable ASCII escaped.
func escapedTool(s string) string {
	if len(s) > maxToolName {
		return strconv.QuoteToASCII(s[:maxToolName]) + "..."
	}
	return strconv.QuoteToASCII(s)
}

// checkTrace refuses trace ids the kernel would refuse.
func checkTrace(s string) error { return checkLen(s, 512) }

func checkLen(s string, limit int) error {
	switch {
	case s == "":
		return errors.New("empty name")
	case len(s) > limit:
		return fmt.Errorf("longer than %d bytes", limit)
	case !utf8.ValidString(s):
		return errors.New("name is not valid UTF-8")
	case strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return errors.New("name contains a control character")
	}
	return nil
}

// Tools returns the specs of every registered tool, in registration order.
func (g *Gate) Tools() []Spec {
	out := make([]Spec, len(g.order))
	for i, e := range g.order {
		out[i] = e.spec.clone()
	}
	return out
}

func (s Spec) clone() Spec {
	s.Parameters = slices.Clone(s.Parameters)
	return s
}

// Surface returns the specs of the tools a model calling as caller may be shown for
// the trace and intent, in registration order: those the contract
// lists, that the intent allows (when intents are configured; with
// intents configured and none named, nothing is surfaced), that the
// trace's run controls allow ([Gate.Controls]: not prohibited, and not
// effectful in a read-only trace), and that are
// situationally possible now: every belief the tool requires is committed
// and true in the trace's current view (a tool that requires none always is).
//
// Surfacing is a courtesy to the model, so that it is not offered what it
// cannot use: a refused capability is absent from its tool list rather
// than only rejected at execution. It is not the enforcement: the trace
// may change between Surface and a call, and a model may call a tool it
// was not shown. [Gate.Call] checks every call again.
//
// An unknown caller is [ErrUnknownCaller] and an intent that is not
// configured [ErrUnknownIntent]; a bad trace id is the kernel's
// ErrInvalidInput.
func (g *Gate) Surface(ctx context.Context, caller, traceID, intent string) ([]Spec, error) {
	r := g.contracts[caller]
	if r == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownCaller, caller)
	}
	var allowed map[string]bool
	if g.intents != nil && intent != "" {
		if allowed = g.intents[intent]; allowed == nil {
			return nil, fmt.Errorf("%w: %q", ErrUnknownIntent, intent)
		}
	}
	v, err := g.k.View(ctx, traceID, kernel.ViewOptions{})
	if err != nil {
		return nil, err
	}
	ctl, err := g.Controls(ctx, traceID)
	if err != nil {
		return nil, err
	}
	out := []Spec{}
	for _, e := range g.order {
		if !r.tools[e.Name] || g.intents != nil && !allowed[e.Name] {
			continue
		}
		if slices.Contains(ctl.Prohibited, e.Name) || ctl.Safety == SafetyReadOnly && e.effectful() {
			continue
		}
		possible := true
		for _, kind := range e.Requires {
			if b, ok := v.Get(blackboard.Beliefs, kind); !ok || !b.Bool(kernel.KeyValue) {
				possible = false
				break
			}
		}
		if possible {
			out = append(out, e.spec.clone())
		}
	}
	return out, nil
}

// Call puts one tool call through the gate and answers with a [Result]:
//
//  1. The tool must be registered (TOOL_UNKNOWN), listed by the caller's
//     contract (TOOL_NOT_PERMITTED) and, when intents are configured,
//     by the call's intent (TOOL_NOT_FOR_INTENT); its arguments must fit
//     its schema (INVALID_ARGUMENTS). A call refused here stores nothing
//     but its decision record.
//  2. The call becomes an action proposal of the caller's planner, with the
//     arguments as payload and the tool's beliefs as requires_beliefs, and
//     the kernel decides it: evidence, rules, constraints, once-keys. Its
//     decision record lands in the same batch. A kernel refusal keeps the
//     kernel's code (STALE_EVIDENCE, DUPLICATE_ACTION, ...).
//  3. A committed action whose approval policy applies waits:
//     [audit.OutcomePendingApproval], with the action id to approve. Any other is executed
//     at once, exactly once per action (see [Gate.Execute]): Executed
//     with the effect's output, or Failed.
//
// Before these checks, a call that has budgets (its own [Call.Budget] and
// the gate's [Config.Budget], which compose: both apply) passes their loop
// guards and then their runs' tool-call budgets. A call refused there is BUDGET_EXCEEDED or LOOP_DETECTED, with
// a decision record holding the reason and a snapshot of the budget, and
// its hint is the reason's. Every call the gate receives is counted,
// whatever the later checks decide: each is a step of the model's loop.
// Every later decision record of an admitted call carries the budget's
// snapshot in its context (under budget.KeyBudget).
//
// A call with a [Call.RetryKey] used before in its trace is answered,
// before its budget is charged, with what the first call under the key
// came to (see the package doc, Retries of one call): its recorded
// refusal or result, its wait for approval (or, approved, its execution),
// CALL_RUNNING while another driver runs it, or RETRY_KEY_CONFLICT when
// the tool, caller or arguments differ.
//
// A refusal is a Result, not an error, with the code, the root cause and a
// hint for the model, so that the agent loop can hand it back as the
// tool's result and go on. Call returns an error only when the loop cannot
// go on: an invalid trace id ([ErrInvalidCall]), a cancelled context, a
// store failure. On an error after the action committed, the Result still
// names it (ActionID): [Gate.Execute] or [Gate.Recover] finishes it.
func (g *Gate) Call(ctx context.Context, c Call) (res Result, err error) {
	ctx, sp := g.startCall(ctx, c)
	defer func() { g.ended(ctx, sp, toolLabel(c.Tool), res, err) }()
	c.span = sp
	res, j, err := g.propose(ctx, c)
	if err != nil || j == nil {
		return res, err
	}
	j.fresh = true
	return g.run(ctx, j)
}

// propose runs the checks and the kernel's decision. It returns the job to
// run when the action committed and may run now, else the answer.
func (g *Gate) propose(ctx context.Context, c Call) (Result, *job, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, nil, err
	}
	if err := checkTrace(c.TraceID); err != nil {
		return Result{}, nil, fmt.Errorf("%w: trace id: %v", ErrInvalidCall, err)
	}
	e := g.tools[c.Tool]
	if e != nil && len(e.Masked) > 0 && g.mask.ring != nil {
		// Before anything is written: a call in a trace whose key is
		// erased (or cannot be had) fails closed and leaves no record.
		if _, err := g.mask.keyOf(ctx, c.TraceID); err != nil {
			return noJob(Result{}, err)
		}
	}
	cc := g.callContext(c, e)
	if c.Context != "" {
		// Before anything else is recorded: a record would name it.
		detail, err := g.contextRef(ctx, c)
		if err != nil {
			return Result{}, nil, err
		}
		if detail != "" {
			return noJob(g.refuse(ctx, c.TraceID, e, toolLabel(c.Tool), CodeContextInvalid, detail, withRawArgs(cc, c, e)))
		}
		cc[keyContext] = c.Context
		if c.span != nil {
			c.span.SetAttributes(attribute.String(telemetry.AttrContext, c.Context))
		}
	}
	if c.RetryKey != "" && !mutRetryKeyOnce {
		// Before the budget: a call the gate decided already is answered
		// as it was, whatever the budget says now.
		if res, done, err := g.replay(ctx, c, e, cc); done || err != nil {
			return noJob(res, err)
		}
	}
	if e != nil && e.Effect == nil && c.Effect == nil && !mutCallerEffect {
		// A caller-driven tool's call that brings no effect would commit
		// an action nothing can run: answered before the budget, with
		// nothing recorded.
		root := kernel.Cause{Code: CodeEffectUnavailable, Detail: quote(e.Name) + " is caller-driven and the call brings no effect"}
		return Result{Outcome: audit.OutcomeRefused, Code: CodeEffectUnavailable, RootCause: root,
			Hint: g.hint(ctx, e, CodeEffectUnavailable, root, "")}, nil, nil
	}
	if res, refused, err := g.admit(ctx, c, e, cc); refused || err != nil {
		return noJob(res, err)
	}
	if e == nil {
		detail := "no tool named " + quote(c.Tool)
		if !mutToolName && !isToolName(c.Tool) {
			detail = "the tool name is not a name (1 to 64 of A-Z, a-z, 0-9, _, . and -): " + escapedTool(c.Tool)
		}
		return noJob(g.refuse(ctx, c.TraceID, nil, toolLabel(c.Tool), CodeToolUnknown, detail, withRawArgs(cc, c, e)))
	}
	r := g.contracts[c.Caller]
	if r == nil || !r.tools[c.Tool] {
		return noJob(g.refuse(ctx, c.TraceID, e, c.Tool, CodeToolNotPermitted, "the contract of "+quote(c.Caller)+" does not list "+quote(c.Tool), withRawArgs(cc, c, e)))
	}
	if g.intents != nil && !g.intents[c.Intent][c.Tool] {
		detail := "intent " + quote(c.Intent) + " does not list " + quote(c.Tool)
		if g.intents[c.Intent] == nil {
			detail = "no configured intent " + quote(c.Intent)
		}
		return noJob(g.refuse(ctx, c.TraceID, e, c.Tool, CodeToolNotForIntent, detail, withRawArgs(cc, c, e)))
	}
	if e.effectful() && !mutControlsCall {
		// An effectful tool's call is checked here, so that the model is
		// told READ_ONLY_MODE rather than what the kernel's own checks
		// would find missing first. The kernel checks every call again as
		// it decides it (controlsValidator), which closes the window
		// between this look and the commit, and is the only check a
		// read-only tool's call gets: no extra read on that path.
		code, detail, err := g.forbidden(ctx, c.TraceID, e)
		if err != nil {
			return Result{}, nil, err
		}
		if code != "" {
			return noJob(g.refuse(ctx, c.TraceID, e, c.Tool, code, detail, withRawArgs(cc, c, e)))
		}
	}
	args, prob := e.schema.check(c.Args)
	real := args // the call's own values, never stored
	if prob == nil {
		var err error
		if args, err = g.mask.payload(ctx, c.TraceID, args, e.Masked); keyFailed(err) {
			return noJob(Result{}, err)
		} else if err != nil {
			prob = &argProblem{detail: "the arguments cannot be masked: a masked field is not a JSON value"}
		}
	}
	if prob != nil {
		withRawArgs(cc, c, e)
	} else {
		cc["args"] = map[string]any(args)
		digest, err := ArgsDigest(args)
		if err != nil {
			prob = &argProblem{detail: storeProblem(err, len(c.Args))}
		} else {
			cc["args_digest"] = digest
		}
	}
	if prob != nil {
		delete(cc, "args")
		if prob.field != "" {
			cc["argument"] = prob.field
		}
		return noJob(g.refuse(ctx, c.TraceID, e, c.Tool, CodeInvalidArguments, prob.detail, cc))
	}
	if res, refused, err := g.scope(ctx, c, e, args, cc); refused || err != nil {
		return noJob(res, err)
	}
	var grounding []string // the evidence artifacts the bindings were checked against
	checked := false
	if len(e.Bindings) > 0 {
		var err error
		if grounding, checked, err = g.beliefGrounding(ctx, e, c.TraceID); err != nil {
			return Result{}, nil, err
		}
		if checked {
			if res, refused, err := g.bind(ctx, c.TraceID, e, args, grounding, cc); refused || err != nil {
				return noJob(res, err)
			}
		}
	}
	need, why := e.policy.needs(ctx, real, c.Caller, c.Intent)
	cc["approval_required"] = need
	if need {
		cc["approval_reason"] = why
	}
	// A shallow copy: the kernel stores a normalised deep copy of the
	// payload, and args stays as the decision record's context holds it.
	payload := make(blackboard.Payload, len(args)+1)
	maps.Copy(payload, args)
	payload[kernel.KeyRequiresBeliefs] = e.requires
	var keys []string
	if c.RetryKey != "" && !mutRetryKeyOnce {
		keys = []string{retryOnceKey(c.TraceID, c.RetryKey)}
	}
	d, act, err := r.planner.Submit(ctx, kernel.Entry{TraceID: c.TraceID, Slot: blackboard.Actions, Kind: e.action(), Payload: payload, OnceKeys: keys},
		func(dr audit.Entry) audit.Entry {
			if need && dr.Outcome == audit.OutcomeCommitted {
				dr.Outcome = audit.OutcomePendingApproval
			}
			dr.Context = cc
			return dr
		})
	if keys != nil && errors.Is(err, blackboard.ErrDuplicateKey) {
		// A concurrent call with the same retry key was decided first.
		res, _, err := g.replay(ctx, c, e, cc)
		return res, nil, err
	}
	if errors.Is(err, blackboard.ErrInvalidPayload) || errors.Is(err, kernel.ErrPayloadTooLarge) {
		delete(cc, "args")
		footprint(cc, c.Args, e)
		return noJob(g.refuse(ctx, c.TraceID, e, c.Tool, CodeInvalidArguments, storeProblem(err, len(c.Args)), cc))
	}
	if err != nil {
		return Result{}, nil, err
	}
	if !d.Committed() {
		root := d.RootCause()
		return Result{Outcome: audit.OutcomeRefused, Code: d.Code, RootCause: root, Hint: g.hint(ctx, e, d.Code, root, ""), DecisionID: d.ID}, nil, nil
	}
	if !mutBindCommitted && len(e.Bindings) > 0 && (!checked || !slices.Equal(act.EvidenceRefs, grounding)) {
		// The kernel grounded the action on other beliefs than the ones
		// checked (they changed in between): its own grounding decides.
		if res, refused, err := g.bindCommitted(ctx, e, act, args, cc); refused || err != nil {
			return noJob(res, err)
		}
	}
	if need {
		digest, _ := cc["args_digest"].(string)
		res := g.pending(ctx, e, act.ID, real, digest)
		res.DecisionID = d.ID
		return res, nil, nil
	}
	j, err := g.newJob(ctx, e, act, cc)
	if err != nil {
		return Result{ActionID: act.ID}, nil, err
	}
	j.real = real
	if c.Effect != nil {
		j.fn = c.Effect
	}
	return Result{ActionID: act.ID}, j, nil
}

// pending is the Result of a committed action that waits for approval:
// what to approve, with the committed arguments and their digest (args
// is copied), so that an adapter asks its approver without reading the
// pending approvals.
func (g *Gate) pending(ctx context.Context, e *entry, actionID string, args blackboard.Payload, digest string) Result {
	return Result{Outcome: audit.OutcomePendingApproval, Code: CodeApprovalRequired, ActionID: actionID, ApprovalID: actionID,
		ArgsDigest: digest, Args: args.Clone(), Hint: g.hint(ctx, e, CodeApprovalRequired, kernel.Cause{}, actionID)}
}

// noJob adapts a refusal to propose's results.
func noJob(res Result, err error) (Result, *job, error) { return res, nil, err }

// callContext is what a decision record says about the call itself:
// the gate's policy hash, the tool (escaped when it is not a name), caller, call id, retry key and intent as
// given (cut to a sane length). A refusal before the arguments parse adds
// the raw arguments ([withRawArgs]); once they parse, the parsed arguments
// and their digest take their place. Sized for one group of the map: a
// larger hint costs every call, refusals included, more than the rare
// committed call whose keys outgrow it.
func (g *Gate) callContext(c Call, e *entry) blackboard.Payload {
	cc := make(blackboard.Payload, 8)
	cc[keyPolicy] = g.policyValue
	// A registered tool's and a configured caller's names are what
	// recordedTool and clip make of them: their boxed copies serve.
	if e != nil {
		cc["tool"] = boxed(e.nameValue, c.Tool)
	} else {
		cc["tool"] = recordedTool(c.Tool)
	}
	if r := g.contracts[c.Caller]; r != nil {
		cc["caller"] = boxed(r.value, c.Caller)
	} else {
		cc["caller"] = clip(c.Caller)
	}
	if c.ID != "" {
		cc["call_id"] = clip(c.ID)
	}
	if c.RetryKey != "" {
		cc["retry_key"] = clip(c.RetryKey)
	}
	if c.Intent != "" {
		cc["intent"] = clip(c.Intent)
	}
	return cc
}

// withRawArgs adds the raw arguments of c to its call context cc when they
// are short, for the record of a call refused before they parse, and
// returns cc; longer ones are recorded by their size and digest
// ([footprint]). A tool e that masks fields has none added, and no
// digest: its raw arguments would hold the values unmasked.
func withRawArgs(cc blackboard.Payload, c Call, e *entry) blackboard.Payload {
	if e != nil && len(e.Masked) > 0 && !mutMaskStore {
		if len(c.Args) > maxRawArgs {
			footprint(cc, c.Args, e)
		}
		return cc
	}
	if len(c.Args) <= maxRawArgs {
		cc["args_raw"] = strings.ToValidUTF8(string(c.Args), "\uFFFD")
	} else {
		footprint(cc, c.Args, e)
	}
	return cc
}

// maxRawArgs bounds the unparsed arguments a refusal's record keeps.
const maxRawArgs = 1024

// clip makes a caller's string fit a record: valid UTF-8, cut after
// about 256 bytes.
func clip(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= 256 {
		return s
	}
	cut := 256
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// refuse records a refusal the kernel's pipeline never saw (a caller
// contract, an intent, an unknown tool, bad arguments, an execution-time
// check) and returns it as a Result.
func (g *Gate) refuse(ctx context.Context, traceID string, e *entry, tool string, code blackboard.Code, detail string, cc blackboard.Payload) (Result, error) {
	kind := clip(tool)
	if e != nil {
		kind = e.action()
	}
	if kind == "" {
		kind = "unnamed_tool"
	}
	dr, err := audit.Append(ctx, g.planner.gov, audit.Entry{TraceID: traceID, Kind: kind, Outcome: audit.OutcomeRefused,
		Code: code, Detail: detail, Context: cc})
	if d, smaller, ok := shrunk(err, detail, cc); ok {
		// Over the store's size limit (arguments near it, kept in the
		// context): recorded with their size and digest instead.
		detail = d
		dr, err = audit.Append(ctx, g.planner.gov, audit.Entry{TraceID: traceID, Kind: kind, Outcome: audit.OutcomeRefused,
			Code: code, Detail: detail, Context: smaller})
	}
	if err != nil {
		return Result{}, err
	}
	root := kernel.Cause{Code: code, Detail: detail}
	return Result{Outcome: audit.OutcomeRefused, Code: code, RootCause: root, Hint: g.hint(ctx, e, code, root, ""), DecisionID: dr.ID}, nil
}

// DecisionFilter narrows [Gate.Decisions]. A zero field matches
// everything.
type DecisionFilter struct {
	// TraceID keeps the records of one trace (read through its index).
	TraceID string
	// Tool matches the tool the call named (the record's context), so it
	// finds a call's whole chain: refusal or commit, result, escalation
	// and its fallback.
	Tool string
	// Outcome keeps the records with that outcome.
	Outcome audit.Outcome
}

// Decisions streams the decision records of the kernel's namespace that
// match f, in append order: one per refused call, per committed (or
// pending-approval) action, per effect result, per escalation and its
// fallback. It wraps [audit.List]; without TraceID it reads every trace
// of the namespace.
func (g *Gate) Decisions(ctx context.Context, f DecisionFilter) iter.Seq2[audit.Entry, error] {
	return func(yield func(audit.Entry, error) bool) {
		for d, err := range audit.List(ctx, g.reader, audit.Query{TraceID: f.TraceID, Outcome: f.Outcome}) {
			if err == nil && f.Tool != "" && d.Context["tool"] != any(f.Tool) {
				continue
			}
			if !yield(d, err) || err != nil {
				return
			}
		}
	}
}

// Package adk governs the tool calls of an ADK-Go (google.golang.org/adk/v2)
// agent with a [toolgate.Gate]: a runner plugin answers every call with the
// gate's result, so that no tool of the agent runs but through the gate.
//
// The agent's own ADK tools (function tools) stay as they are: given to
// [WithTools], each is held by the gate under its name caller-driven (a
// [toolgate.Tool] with no Effect: its schema, beliefs, bindings,
// approval policy, once-key). The plugin's before-tool callback puts the
// call to the gate with the ADK tool as the call's effect
// ([toolgate.Call.Effect]): the gate runs it, as ADK would (its Run
// method), once the call is allowed (and approved), with the committed
// arguments, in the effect's context ([toolgate.InvocationFrom] gives a
// tool its idempotency key), and never on a refusal; the callback answers
// with the gate's response, so ADK does not run the tool again. The
// Governor shows ADK a guard in the tool's place, whose own Run runs
// nothing, so a runner without the plugin runs none of them. A tool whose
// effect the gate itself holds needs no ADK tool: the Governor shows a
// stand-in for it, and the gate runs its effect.
//
// Setup, with refund the agent's function tool (the gate holds "refund"
// with no Effect):
//
//	gv, _ := adk.New(g, "support", adk.WithApprover("human:reviewer"), adk.WithTools(refund)) // caller, approver
//	a, _ := llmagent.New(llmagent.Config{Name: "support", Model: m, Toolsets: []tool.Toolset{gv}})
//	r, _ := runner.New(runner.Config{AppName: "desk", Agent: a, SessionService: session.InMemoryService(),
//		PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{gv.Plugin()}}})
//
// The model is shown the gate's surface for the caller
// ([toolgate.Gate.Surface]): a tool outside the contract never, a tool
// whose beliefs are not established only once they are.
// Each call goes to [toolgate.Gate.Call] under the caller, for ADK's user
// id as its principal ([toolgate.Call.Principal]), in the trace [WithTrace]
// names ([Trace] of the app, the user and the session id by default, so
// that two users' sessions never share a trace), with the call's
// ADK function call id as its retry key: a call delivered twice runs once,
// and the same id with other arguments is refused (RETRY_KEY_CONFLICT). The
// model is shown [toolgate.Result.ForModel] as the tool response, with
// [KeyIsError] set on a refusal or failure; a refusal is a response, never
// an error of the run. A call of a tool the agent does not hold reaches the
// gate too, and is refused with TOOL_UNKNOWN and a hint.
//
// # Approvals
//
// With [WithApprover], a call the gate holds for approval asks for ADK's
// tool confirmation (the adk_request_confirmation function call), with a
// [Confirmation] payload: the action, the committed arguments and their
// [toolgate.ArgsDigest]. The application shows it to the person and
// answers with confirmed and the digest shown; ADK then resumes the call,
// and the plugin records the decision with [toolgate.Approver.Resolve]
// under the approver identity given to [WithApprover] and carries it out.
// For the agent's own tool the gate records the approval and has no
// effect to run (EFFECT_UNAVAILABLE, nothing used up): the plugin then
// puts the resumed call to the gate again under its call id, with the
// tool, and the gate runs it once, under the approval.
// The confirmation is the client's word and is not trusted (adk-go #1499):
// the identity never comes from it, the action and arguments are the gate's
// own for the call id, and a confirmation whose digest is not the committed
// arguments' is refused as APPROVAL_MISMATCH, recording nothing.
//
// # The request
//
// The application records what a session is for with
// [toolgate.Gate.RecordRequest] under the session's trace ([Trace]), the
// user id as its principal and the resources the user asked about (their
// account, the ticket's order): a tool with [toolgate.Tool.Scope] then acts
// only within it, and any call made for another user than the request's
// is refused with OUT_OF_SCOPE, whatever trace [WithTrace] names.
//
// The plugin is safe for concurrent use by the runner's calls.
package adk

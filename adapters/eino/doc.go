// Package eino governs the tool calls of a CloudWeGo Eino agent through a
// [toolgate.Gate]: a ToolsNode whose tool middleware hands every call to
// the gate, which decides it and answers with [toolgate.Result.ForModel]
// as the tool's result.
//
// The integrator's own Eino tools stay as they are. The gate holds each
// under its name caller-driven (a [toolgate.Tool] with no Effect: its
// schema, beliefs, bindings, approval policy, once-key), and the
// middleware hands the gate the Eino tool as the call's effect
// ([toolgate.Call.Effect]): the gate runs it once the call is allowed
// (and approved), with the committed arguments, in the effect's context
// ([toolgate.InvocationFrom] gives a tool its idempotency key), and
// never on a refusal. A tool whose effect the gate itself holds needs no
// Eino tool: [Middleware.Tools] stands in for it in the node, and the
// gate runs its effect; those stand-ins fail with [ErrUngoverned] when
// run without the middleware. One node may hold both kinds.
//
// Setup, with g the gate, "support" the caller's contract and refund the
// integrator's Eino tool (the gate holds "refund" with no Effect):
//
//	m, err := eino.New(g, "support", eino.WithApprover("human:lead"),
//		eino.WithTrace(func(ctx context.Context) string { return ticketOf(ctx) }))
//	cfg, err := m.NodeConfig(ctx, refund)
//	node, err := compose.NewToolNode(ctx, cfg)
//	tools, err := m.Surface(ctx) // bind these to the model each turn
//	graph.AddToolsNode("tools", node) // compile with compose.WithCheckPointStore
//
// [Middleware.NodeConfig] refuses an Eino tool the gate does not hold
// caller-driven, and one that also streams (Eino would run it past the
// middleware in a streamed run).
//
// Each call goes to [toolgate.Gate.Call] under the caller, the trace
// [WithTrace] names, and the Eino call id as its retry key
// ([toolgate.Call.RetryKey]): a call delivered twice (a retried or resumed
// run) gets the first answer, and its effect runs once. A refusal is a
// tool result (outcome, code and repair hint), not an error; an error of
// the middleware is a failure of the gate itself. A call of a tool the
// node does not hold goes to the gate as well, which refuses it with a
// hint ([compose.ToolsNodeConfig.UnknownToolsHandler]).
//
// A call that needs approval, with [WithApprover], interrupts the run
// (compose.StatefulInterrupt) with an [Approval]: the tool, the action id,
// the committed arguments and their [toolgate.ArgsDigest]. The
// application asks its user and resumes the run from its checkpoint, in
// this process or another runner on the same checkpoint store, with
// compose.ResumeWithData(ctx, interruptID, &Decision{...}). The middleware
// then calls [toolgate.Approver.Resolve] under the approver identity given
// to [WithApprover], never one named in the resume: an approval runs the
// call once, a denial refuses it. For the integrator's Eino tool the gate
// records the approval and has no effect to run (EFFECT_UNAVAILABLE,
// nothing used up); the middleware then puts the resumed call to the gate
// again under its call id, with the tool, and the gate runs it once,
// under the approval, with the approved arguments. A Decision whose digest is not the
// Approval's, or whose arguments have another digest, is refused: nothing
// is recorded, and the model is shown the call still waiting; the call,
// delivered again under its id, interrupts again. A resume aimed at
// another call of the same turn interrupts this one again, with its
// Approval under a new interrupt id (the arguments read from the gate: the
// checkpoint holds the action id and digest, never the arguments). Without an approver the
// model is shown the call waiting, for an approval given elsewhere
// ([toolgate.Gate.Pending]).
//
// A [Middleware] may be used from any goroutine.
package eino

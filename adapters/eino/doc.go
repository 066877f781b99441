// Package eino governs the tool calls of a CloudWeGo Eino agent through a
// [toolgate.Gate]: an Eino ToolsNode whose tool middleware hands every
// call to the gate, which decides it, runs the tool's effect and answers
// with [toolgate.Result.ForModel] as the tool's result. The middleware
// never calls the tool itself; the tools of [Middleware.Tools] fail with
// [ErrUngoverned] when run without it.
//
// Setup, with g the gate and "support" the caller's contract:
//
//	m, err := eino.New(g, "support", eino.WithApprover("human:lead"),
//		eino.WithTrace(func(ctx context.Context) string { return ticketOf(ctx) }))
//	node, err := compose.NewToolNode(ctx, m.NodeConfig())
//	tools, err := m.Surface(ctx) // bind these to the model each turn
//	graph.AddToolsNode("tools", node) // compile with compose.WithCheckPointStore
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
// call once, a denial refuses it. A Decision whose digest is not the
// Approval's, or whose arguments have another digest, is refused: nothing
// is recorded, and the model is shown the call still waiting; the call,
// delivered again under its id, interrupts again. A resume aimed at
// another call of the same turn interrupts this one again, with its
// Approval under a new interrupt id (the arguments read from the gate: the
// checkpoint holds the action id and digest, never the arguments). Without an approver the
// model is shown the call waiting, for an approval given elsewhere
// ([toolgate.Gate.PendingApprovals]).
//
// A [Middleware] may be used from any goroutine.
package eino

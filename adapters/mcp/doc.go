// Package mcp governs a Model Context Protocol server
// (github.com/modelcontextprotocol/go-sdk) with the tool-call gate: every
// tool of the server is a tool of a [toolgate.Gate], and every call of it
// goes through [toolgate.Gate.Call].
//
//	g, err := toolgate.New(ctx, toolgate.Config{Tools: []toolgate.Tool{lookupOrder, issueRefund}, Contracts: map[string][]string{"support": {"lookup_order", "issue_refund"}}})
//	server := sdk.NewServer(&sdk.Implementation{Name: "support", Version: "v1"}, nil)
//	err = mcp.Govern(server, g, "support", mcp.WithApprover("human:desk"))
//	err = server.Run(ctx, &sdk.StdioTransport{})
//
// [Govern] registers each of the gate's tools with the server, under the
// gate's name, description and schema. tools/list answers with the gate's
// surface for the caller and the session's trace ([toolgate.Gate.Surface]):
// a tool outside the caller's contract, or whose beliefs are not
// established, is not shown. tools/call is [toolgate.Gate.Call] under the
// caller and the session's trace, and its answer is
// [toolgate.Result.ForModel]: the compact JSON as text content, the same
// fields as structured content, and isError for a refusal or a failure. A
// refusal is a tool result the model can act on, never a protocol error;
// a protocol error is a failure of the gate itself (a store failure, a
// cancelled request).
//
// Each session is a trace of its own by default ([SessionTrace]): the
// session's id where the transport has one, a random id per session over
// stdio or in memory, and before it the authenticated subject when the
// request carries one (the user id of the bearer token's auth.TokenInfo),
// so that two users never share a trace; [WithTrace] names another (a
// ticket the application knows, to which its planners add beliefs).
// Every call is made for the request's authenticated subject, when there
// is one ([toolgate.Call.Principal]): in a trace whose request the
// application recorded ([toolgate.Gate.RecordRequest]) a call for another
// user is refused with OUT_OF_SCOPE, and a tool with [toolgate.Tool.Scope]
// acts only within the request.
//
// A client makes a call idempotent by giving it a retry key in the
// request's _meta, under [MetaRetryKey]: the gate then answers a call
// delivered twice with the first one's decision and result
// ([toolgate.Call.RetryKey]), and refuses the key with other arguments.
//
// A call that needs approval is put to the client's user when the server
// was given an approver identity ([WithApprover]): the call's result asks
// for input (a multi round-trip request, the SDK's InputRequests, which
// it turns into an elicitation for a client of an older protocol). The
// form shows the tool, the committed arguments and their digest
// ([toolgate.ArgsDigest]), and asks for a yes or no and the digest of what
// is approved; the client calls again with the answer. The answer is
// recorded as that identity's approval or denial of the digest given
// ([toolgate.Approver]): the gate takes it only for a committed action of
// the session's trace with those arguments, and the call resumes with the
// arguments it was made with ([toolgate.Gate.Resume]), so an approval of
// other arguments runs nothing. A declined form is a denial. The identity
// stands for the client's user: the server trusts the client to ask its
// user. A cancelled form, a client that cannot show forms (no
// elicitation capability) or a server without an approver leaves the call
// waiting, and the model is told so (APPROVAL_REQUIRED); a retry
// under its retry key gets the answer once someone approved it elsewhere
// (bk approve).
//
// # Protocol versions
//
// Both sides work with every protocol version go-sdk v1.8.0 speaks, from
// 2024-11-05 to 2026-07-28: the retry key and the trace context travel in
// _meta, which every version has, and on a version before 2026-07-28 the
// SDK turns the approval's input request into an elicitation.
//
// # Tracing
//
// A client that adds the [TraceContext] middleware sends each request's
// W3C trace context in its _meta (traceparent, tracestate); the server
// takes it up, so the gate's spans and the effect run in the client's
// trace.
//
// # Client side
//
// [RemoteEffect] is the other direction: the effect of a gate tool that
// calls a tool of a remote MCP server, so that an agent's calls to that
// server go through the gate, each with the action's idempotency key as
// its retry key.
//
// The server's handlers may be called from any goroutine, as the SDK does.
package mcp

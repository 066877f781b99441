// Package adaptertest is the conformance suite every framework adapter of
// the tool-call gate runs, as [github.com/blackboardkernel/bk/store/storetest]
// is for stores. An adapter (an MCP server, an agent framework's tool
// node) puts a framework between a model and a [toolgate.Gate]; the suite
// drives the adapter only as the framework's client would, and checks what
// the model is shown and what ran.
//
// An adapter's test file runs the whole suite with one call:
//
//	func TestConformance(t *testing.T) {
//		adaptertest.Run(t, func(t *testing.T, env *adaptertest.Env) adaptertest.Adapter {
//			return newMyAdapter(t, env.Gate, env.Caller, env.TraceID, env.Decide)
//		})
//	}
//
// [Run] builds a fresh gate for every case (an order lookup, a refund that
// rests on a belief, needs approval above 500 and runs at most once per
// order, and a tool outside the caller's contract) and counts the refund
// effect's runs. The cases: a refusal reaches the model as an error result
// with its code and a repair hint; the tool list is the gate's surface for
// the caller; a call that needs approval asks the person ([Env.Decide])
// with the arguments and their digest, and runs once approved; a denied
// call does not run; an approval of other arguments (a tampered digest)
// runs nothing; the same call id retried with other arguments is refused;
// a second refund of one order is refused; the same call id retried gets
// the first answer and runs nothing again (RunsOncePerCall: an allowed
// lookup runs once, a refused refund never); a call whose result record was
// lost (the process died after the effect) is driven again by its retry
// once the lease ([Lease]) is over, with the same idempotency key, and
// pays once; and the caller's trace context reaches the effect.
//
// An adapter that governs the framework's own tools (the integrator's
// Eino tools, ADK function tools) runs the suite a second time with
// [RunFramework]: the gate then holds the lookup and the refund
// caller-driven, with no effect ([toolgate.Tool.Effect] nil), and
// [Env.Tools] are the framework tools the adapter gives its framework,
// each run only as a call's effect ([toolgate.Call.Effect]). The same
// cases, and RunsOncePerCall (an allowed call runs the tool once, its
// retry no more, a refused one never), then show what the framework's
// tool did: it runs once after an approval and resume, which only the
// adapter's call under the call id with the tool can do, and a crash
// between its run and its record has the retry run it again under the
// same idempotency key, which reaches the tool only in the effect's
// context ([toolgate.InvocationFrom]).
//
// The package's own tests run both suites on the gate without a
// framework, and on that adapter broken one contract at a time (refusals
// as protocol errors, every tool listed, approval without asking, no
// retry key, the context dropped; the framework's tool run by the
// adapter itself, a resume without the tool, the tool run outside the
// effect's context), and require the cases about each to fail.
//
// Env may be used by the adapter from any goroutine.
package adaptertest

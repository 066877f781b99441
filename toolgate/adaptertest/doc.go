// Package adaptertest is the conformance suite every framework adapter of
// the tool-call gate runs, as [github.com/blackboardkernel/bk/blackboard/storetest]
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
// the first answer and runs nothing again; a call whose result record was
// lost (the process died after the effect) is driven again by its retry
// once the lease ([Lease]) is over, with the same idempotency key, and
// pays once; and the caller's trace context reaches the effect.
//
// The package's own tests run the suite on the gate without a framework,
// and on that adapter broken one contract at a time (refusals as protocol
// errors, every tool listed, approval without asking, no retry key, the
// context dropped), and require the cases about each to fail.
//
// Env may be used by the adapter from any goroutine.
package adaptertest

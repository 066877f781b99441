//go:build bkmutate

package adk

import "github.com/blackboardkernel/bk/internal/mutant"

// mutForgedConfirmation disables the check that a confirmation approves
// the committed arguments' digest: the plugin then trusts the
// confirmation. BK_MUTATE=adk.forged_confirmation turns it on.
var mutForgedConfirmation bool

// mutNoEffect puts a call of the agent's own tool to the gate without
// the tool as its effect. BK_MUTATE=adk.call_effect turns it on.
var mutNoEffect bool

// mutTraceUser makes the default trace "adk:" and the session id alone.
// BK_MUTATE=adk.trace_user turns it on.
var mutTraceUser bool

// mutPrincipal puts calls to the gate with no principal.
// BK_MUTATE=adk.principal turns it on.
var mutPrincipal bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/adapters/adk",
		mutant.Def{Name: "adk.forged_confirmation", Check: "an ADK tool confirmation whose digest is not the committed arguments' is refused as APPROVAL_MISMATCH and records nothing", On: &mutForgedConfirmation},
		mutant.Def{Name: "adk.call_effect", Check: "a call of the agent's own ADK tool goes to the gate with the tool as its effect, so it runs once when allowed and approved", On: &mutNoEffect},
		mutant.Def{Name: "adk.trace_user", Check: "the default trace of an ADK session names its app and user as well as its id, so two users' sessions with one id never share a trace (nor a verification)", On: &mutTraceUser},
		mutant.Def{Name: "adk.principal", Check: "every call goes to the gate for ADK's user id as its principal, so a call for another user than the trace's recorded request is OUT_OF_SCOPE", On: &mutPrincipal})
}

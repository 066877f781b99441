//go:build bkmutate

package mcp

import "github.com/blackboardkernel/bk/internal/mutant"

// mutSessionTrace disables the per-session default trace: every session
// without a session id then shares the trace "mcp:".
// BK_MUTATE=mcp.session_trace turns it on.
var mutSessionTrace bool

// mutSubjectTrace leaves the authenticated subject out of the default
// trace. BK_MUTATE=mcp.subject_trace turns it on.
var mutSubjectTrace bool

// mutPrincipal puts calls to the gate with no principal.
// BK_MUTATE=mcp.principal turns it on.
var mutPrincipal bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/adapters/mcp",
		mutant.Def{Name: "mcp.session_trace", Check: "each MCP session without a session id is a trace of its own by default, so no session's beliefs, retry keys or pending approvals serve another's calls", On: &mutSessionTrace},
		mutant.Def{Name: "mcp.subject_trace", Check: "the default trace of a request with an authenticated subject names the subject, so two users' sessions never share a trace", On: &mutSubjectTrace},
		mutant.Def{Name: "mcp.principal", Check: "every call goes to the gate for the request's authenticated subject as its principal, so a call for another user than the trace's recorded request is OUT_OF_SCOPE", On: &mutPrincipal})
}

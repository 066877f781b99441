//go:build bkmutate

package mcp

import "github.com/blackboardkernel/bk/internal/mutant"

// mutSessionTrace disables the per-session default trace: every session
// without a session id then shares the trace "mcp:".
// BK_MUTATE=mcp.session_trace turns it on.
var mutSessionTrace bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/adapters/mcp",
		mutant.Def{Name: "mcp.session_trace", Check: "each MCP session without a session id is a trace of its own by default, so no session's beliefs, retry keys or pending approvals serve another's calls", On: &mutSessionTrace})
}

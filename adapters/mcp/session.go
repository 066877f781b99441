package mcp

import (
	"crypto/rand"
	"runtime"
	"sync"
	"weak"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionTraces holds the trace of each live session that has no session
// id. Weak keys, so that a closed session's entry goes with the session.
var sessionTraces sync.Map // weak.Pointer[sdk.ServerSession] -> string

// SessionTrace is the default trace of a session's calls ([WithTrace]):
// "mcp:" and the session's id when the transport gives one (streamable
// HTTP), otherwise "mcp:" and a random id drawn for the session on its
// first request and kept for its lifetime (stdio, in-memory and other
// transports without session ids). Each session is then its own trace:
// its beliefs, used grounding and retry keys are not another session's.
// Once-keys span traces by design (a refund of an order once, whatever
// the session). A client that reconnects starts a new trace; a server
// that must continue one across sessions names it with [WithTrace], and
// so does a stateless streamable HTTP server, whose every request is a
// session of its own.
//
// It may be called from any goroutine.
func SessionTrace(ss *sdk.ServerSession) string {
	if id := ss.ID(); id != "" || mutSessionTrace {
		return "mcp:" + id
	}
	key := weak.Make(ss)
	if t, ok := sessionTraces.Load(key); ok {
		return t.(string)
	}
	t, loaded := sessionTraces.LoadOrStore(key, "mcp:"+rand.Text())
	if !loaded {
		runtime.AddCleanup(ss, func(k weak.Pointer[sdk.ServerSession]) { sessionTraces.Delete(k) }, key)
	}
	return t.(string)
}

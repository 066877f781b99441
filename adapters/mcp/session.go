package mcp

import (
	"crypto/rand"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"weak"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionTraces holds the trace of each live session that has no session
// id. Weak keys, so that a closed session's entry goes with the session.
var sessionTraces sync.Map // weak.Pointer[sdk.ServerSession] -> string

// SessionTrace is the trace of a session's calls ([WithTrace]):
// "mcp:" and the session's id when the transport gives one (streamable
// HTTP), otherwise "mcp:" and a random id drawn for the session on its
// first request and kept for its lifetime (stdio, in-memory and other
// transports without session ids). It is the default trace of a request
// that carries no authenticated subject; one that does (a bearer token
// whose verifier set auth.TokenInfo.UserID, as the SDK's
// auth.RequireBearerToken hands it on in the request's Extra) has
// "mcp-user:", the subject path-escaped, "/" and the session part, so that
// two users' sessions never share a trace even where their session ids
// are alike. Each session is then its own trace:
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

// subject is the authenticated user a request carries: the user id of its
// bearer token's info, "" when there is none.
func subject(extra *sdk.RequestExtra) string {
	if extra == nil || extra.TokenInfo == nil {
		return ""
	}
	return extra.TokenInfo.UserID
}

// principal is who a call is made for: the request's authenticated
// subject, never anything the client says of itself.
func principal(extra *sdk.RequestExtra) string {
	if mutPrincipal {
		return ""
	}
	return subject(extra)
}

// traceOf is the trace of a request of session ss: WithTrace's, or the
// session's with the request's subject (see [SessionTrace]).
func (gv *governor) traceOf(ss *sdk.ServerSession, extra *sdk.RequestExtra) string {
	if gv.trace != nil {
		return gv.trace(ss)
	}
	t := SessionTrace(ss)
	if sub := subject(extra); sub != "" && !mutSubjectTrace {
		return "mcp-user:" + url.PathEscape(sub) + "/" + strings.TrimPrefix(t, "mcp:")
	}
	return t
}

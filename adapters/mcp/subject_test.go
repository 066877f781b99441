package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blackboardkernel/bk/adapters/mcp"
	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/reason"
)

// bearer adds a bearer token to every request.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// authServer serves server over streamable HTTP behind the SDK's bearer
// token check, whose verifier takes the token for the user id; every
// session gets the id the server's options give (sessionID, when set).
func authServer(t *testing.T, server *sdk.Server) string {
	t.Helper()
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: token, Expiration: time.Now().Add(time.Hour)}, nil
	}
	h := auth.RequireBearerToken(verify, nil)(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// connectAs opens a session of user's to the server at url.
func connectAs(t *testing.T, url, user string) *sdk.ClientSession {
	t.Helper()
	tr := &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer(user)}}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v1"}, nil).Connect(t.Context(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// Two authenticated users of a server that names sessions predictably
// (s1, s2, ...; one id for both, which the SDK's session table cannot hold
// at once, made this test flaky): each user's calls are in a
// trace of their own by default, which names the subject, so Alice's
// lookup does not ground Bob's refund. Where the application names one
// trace for both (WithTrace) and records its request for Alice, Bob's
// call is made for Bob, the token's subject, and is refused with
// OUT_OF_SCOPE.
func TestAttackCallForAnotherSubject(t *testing.T) {
	t.Run("default trace", func(t *testing.T) {
		var refunds atomic.Int32
		g := sessionGate(t, &refunds)
		var ids atomic.Int32
		server := sdk.NewServer(&sdk.Implementation{Name: "support", Version: "v1"}, &sdk.ServerOptions{GetSessionID: func() string { return "s" + strconv.Itoa(int(ids.Add(1))) }})
		if err := mcp.Govern(server, g, "support"); err != nil {
			t.Fatal(err)
		}
		url := authServer(t, server)
		alice := connectAs(t, url, "alice")
		if r := call(t, alice, "lookup_order", `{"order_id":"A1"}`, "k1"); r.Outcome != audit.OutcomeExecuted {
			t.Fatalf("alice's lookup: %+v", r)
		}
		bob := connectAs(t, url, "bob")
		if r := call(t, bob, "issue_refund", `{"order_id":"A1","amount":50}`, "k2"); r.Outcome != audit.OutcomeRefused || refunds.Load() != 0 {
			t.Fatalf("bob's refund on alice's lookup: %+v, %d refunds; want refused, none", r, refunds.Load())
		}
		n := 0
		for d, err := range audit.List(t.Context(), g.Kernel().Reader(), audit.Query{Tool: "lookup_order", Outcome: audit.OutcomeExecuted}) {
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(d.TraceID, "mcp-user:alice/") {
				t.Fatalf("alice's lookup is in trace %q, want one naming alice", d.TraceID)
			}
			n++
		}
		if n != 1 {
			t.Fatalf("%d lookups", n)
		}
	})
	t.Run("shared trace with a request", func(t *testing.T) {
		var refunds atomic.Int32
		g := sessionGate(t, &refunds)
		server := sdk.NewServer(&sdk.Implementation{Name: "support", Version: "v1"}, nil)
		if err := mcp.Govern(server, g, "support", mcp.WithTrace(func(*sdk.ServerSession) string { return "ticket-1" })); err != nil {
			t.Fatal(err)
		}
		if err := g.RecordRequest(t.Context(), "ticket-1", audit.Request{Principal: "alice", Resources: map[string][]string{"order": {"A1"}}}); err != nil {
			t.Fatal(err)
		}
		url := authServer(t, server)
		if r := call(t, connectAs(t, url, "alice"), "lookup_order", `{"order_id":"A1"}`, "k1"); r.Outcome != audit.OutcomeExecuted {
			t.Fatalf("alice's lookup: %+v", r)
		}
		r := call(t, connectAs(t, url, "bob"), "issue_refund", `{"order_id":"A1","amount":50}`, "k2")
		if r.Outcome != audit.OutcomeRefused || r.Code != reason.OutOfScope || refunds.Load() != 0 {
			t.Fatalf("bob's refund in alice's trace: %+v, %d refunds; want OUT_OF_SCOPE, none", r, refunds.Load())
		}
	})
}

package mcp_test

import (
	"errors"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blackboardkernel/bk/adapters/mcp"
	"github.com/blackboardkernel/bk/toolgate/adaptertest"
)

// Govern refuses what would leave the server ungoverned or approvals
// unaccountable, with ErrInvalid.
func TestGovernInvalid(t *testing.T) {
	env := adaptertest.NewEnv(t)
	server := func() *sdk.Server { return sdk.NewServer(&sdk.Implementation{Name: "s", Version: "v1"}, nil) }
	for name, err := range map[string]error{
		"nil server":       mcp.Govern(nil, env.Gate, env.Caller),
		"nil gate":         mcp.Govern(server(), nil, env.Caller),
		"no caller":        mcp.Govern(server(), env.Gate, ""),
		"caller approves":  mcp.Govern(server(), env.Gate, env.Caller, mcp.WithApprover(env.Caller)),
		"ttl out of range": mcp.Govern(server(), env.Gate, env.Caller, mcp.WithApprovalTTL(-time.Second)),
	} {
		if !errors.Is(err, mcp.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

// Without an approver identity, or with a client that cannot show forms,
// a call that needs approval is not put to the client's user: it waits,
// and the model is told so.
func TestNoApproverWaits(t *testing.T) {
	t.Run("no approver", func(t *testing.T) {
		env := adaptertest.NewEnv(t)
		waits(t, env, connect(t, env, true, mcp.WithApprover("")))
	})
	t.Run("no elicitation", func(t *testing.T) {
		env := adaptertest.NewEnv(t)
		waits(t, env, connect(t, env, false))
	})
}

func waits(t *testing.T, env *adaptertest.Env, c *client) {
	t.Helper()
	if r, err := c.CallTool(t.Context(), adaptertest.Lookup, []byte(`{"order_id":"A1"}`), "l"); err != nil || r.IsError {
		t.Fatal(r, err)
	}
	submitDue(t, env)
	r, err := c.CallTool(t.Context(), adaptertest.Refund, []byte(`{"order_id":"A1","amount":700}`), "c1")
	if err != nil || r.Content.Code != "APPROVAL_REQUIRED" || r.Content.ApprovalID == "" {
		t.Fatalf("reply %+v, %v; want APPROVAL_REQUIRED", r, err)
	}
	if n := env.Runs(); n != 0 {
		t.Fatalf("refund ran %d times without approval", n)
	}
}

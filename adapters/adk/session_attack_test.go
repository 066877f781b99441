package adk_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"

	"github.com/blackboardkernel/bk/adapters/adk"
	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/toolgate"
)

// bank is an app whose agent changes an account's email once the user's
// one-time code is verified: check_code's result derives
// identity_verified, which change_email requires.
type bank struct {
	g       *toolgate.Gate
	m       *script
	r       *runner.Runner
	changed atomic.Int32
}

func newBank(t *testing.T, opts ...adk.Option) *bank {
	t.Helper()
	b := &bank{m: &script{}}
	g, err := toolgate.New(t.Context(), toolgate.Config{
		Tools: []toolgate.Tool{{Name: "check_code", Result: "verification", ReadOnly: true,
			Parameters: json.RawMessage(`{"type":"object","properties":{"code":{"type":"string"}},"required":["code"]}`),
			Derives:    []toolgate.Derive{{Belief: "identity_verified", Value: "result.ok"}},
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				code, _ := inv.Args["code"].(string)
				return blackboard.Payload{"ok": code == "123456"}, nil
			}}, {Name: "change_email", Result: "email_changed", Requires: []string{"identity_verified"}, Unbound: true, Unscoped: true,
			Parameters: json.RawMessage(`{"type":"object","properties":{"email":{"type":"string"}},"required":["email"]}`),
			Effect: func(context.Context, toolgate.Invocation) (blackboard.Payload, error) {
				b.changed.Add(1)
				return blackboard.Payload{"changed": true}, nil
			}}},
		Contracts: map[string][]string{"agent": {"check_code", "change_email"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	b.g = g
	gv, err := adk.New(g, "agent", opts...)
	if err != nil {
		t.Fatal(err)
	}
	a, err := llmagent.New(llmagent.Config{Name: "bank", Model: b.m, Toolsets: []tool.Toolset{gv}})
	if err != nil {
		t.Fatal(err)
	}
	b.r, err = runner.New(runner.Config{AppName: "bank", Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{gv.Plugin()}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// call has the model of user's session make one call, and returns the
// tool response.
func (b *bank) call(t *testing.T, user, sessionID, id, name string, args map[string]any) map[string]any {
	t.Helper()
	b.m.mu.Lock()
	b.m.call = &genai.FunctionCall{ID: id, Name: name, Args: args}
	b.m.mu.Unlock()
	var resp map[string]any
	for ev, err := range b.r.Run(t.Context(), user, sessionID, genai.NewContentFromText("please", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.FunctionResponse != nil && p.FunctionResponse.ID == id {
				resp = p.FunctionResponse.Response
			}
		}
	}
	if resp == nil {
		t.Fatalf("%s's call %s got no response", user, name)
	}
	return resp
}

// Alice verifies her one-time code in her session s1; Mallory opens a
// session of the same app with the same id s1 (ADK sessions are per app,
// user and id, and the client chose the id) and asks to change the
// account's email. Mallory's calls are in a trace of her own: Alice's
// verification is not hers, the change is refused and never runs; Alice
// herself changes it. With a trace the application names without the
// user, the request recorded for it holds each call to its principal:
// Mallory's call is OUT_OF_SCOPE.
func TestAttackSessionIDOfAnotherUser(t *testing.T) {
	t.Run("default trace", func(t *testing.T) {
		b := newBank(t)
		if r := b.call(t, "alice", "s1", "c1", "check_code", map[string]any{"code": "123456"}); r[adk.KeyIsError] != false {
			t.Fatalf("alice's code check: %v", r)
		}
		r := b.call(t, "mallory", "s1", "c2", "change_email", map[string]any{"email": "mallory@example.com"})
		if r[adk.KeyIsError] != true || b.changed.Load() != 0 {
			t.Fatalf("mallory's change in a session with alice's id: %v, %d changes; want refused, none", r, b.changed.Load())
		}
		if r := b.call(t, "alice", "s1", "c3", "change_email", map[string]any{"email": "alice@example.com"}); r[adk.KeyIsError] != false || b.changed.Load() != 1 {
			t.Fatalf("alice's own change: %v", r)
		}
	})
	t.Run("shared trace with a request", func(t *testing.T) {
		b := newBank(t, adk.WithTrace(func(ctx agent.ReadonlyContext) string { return "bank:" + ctx.SessionID() }))
		if err := b.g.RecordRequest(t.Context(), "bank:s1", audit.Request{Principal: "alice"}); err != nil {
			t.Fatal(err)
		}
		if r := b.call(t, "alice", "s1", "c1", "check_code", map[string]any{"code": "123456"}); r[adk.KeyIsError] != false {
			t.Fatalf("alice's code check: %v", r)
		}
		r := b.call(t, "mallory", "s1", "c2", "change_email", map[string]any{"email": "mallory@example.com"})
		if r[adk.KeyIsError] != true || r["code"] != string(reason.OutOfScope) || b.changed.Load() != 0 {
			t.Fatalf("mallory's change in alice's trace: %v, %d changes; want OUT_OF_SCOPE, none", r, b.changed.Load())
		}
	})
}

// The default trace keeps app, user and session apart, whatever the ids
// hold.
func TestTraceNamesAppUserSession(t *testing.T) {
	seen := map[string]bool{}
	for _, ids := range [][3]string{{"a", "b/c", "d"}, {"a", "b", "c/d"}, {"a/b", "c", "d"}, {"a", "b", "c"}} {
		tr := adk.Trace(ids[0], ids[1], ids[2])
		if seen[tr] {
			t.Fatalf("two sessions share trace %q", tr)
		}
		seen[tr] = true
	}
}

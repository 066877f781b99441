package eino_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/blackboardkernel/bk/adapters/eino"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/toolgate"
	"github.com/blackboardkernel/bk/toolgate/adaptertest"
)

// ready looks order A1 up through r and has a planner conclude its refund
// is due.
func ready(t *testing.T, env *adaptertest.Env, r *runner) {
	t.Helper()
	if rep, err := r.CallTool(t.Context(), adaptertest.Lookup, json.RawMessage(`{"order_id":"A1"}`), "l1"); err != nil || rep.IsError {
		t.Fatal(rep, err)
	}
	if _, err := env.Gate.Kernel().Proposer(blackboard.RolePlanner, "analyst").Submit(t.Context(), kernel.Entry{TraceID: env.TraceID, Slot: blackboard.Beliefs,
		Kind: "refund_due", Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}}); err != nil {
		t.Fatal(err)
	}
}

// A resume that approves other arguments than the ones the person was
// shown, by their digest or by the arguments themselves, is refused: the
// refund does not run, nothing is recorded, and the call, delivered again,
// still waits for an approval of its own, which then runs it once.
func TestAttackResumeOtherArgs(t *testing.T) {
	other, err := toolgate.ArgsDigest(blackboard.Payload{"order_id": "A1", "amount": 1.0})
	if err != nil {
		t.Fatal(err)
	}
	for name, tamper := range map[string]func(eino.Approval) eino.Decision{
		"other digest": func(a eino.Approval) eino.Decision { return eino.Decision{Approve: true, Digest: other} },
		"other args": func(a eino.Approval) eino.Decision {
			return eino.Decision{Approve: true, Digest: a.Digest, Args: map[string]any{"order_id": "A1", "amount": 1.0}}
		},
		"no digest": func(eino.Approval) eino.Decision { return eino.Decision{Approve: true} },
	} {
		t.Run(name, func(t *testing.T) {
			env := adaptertest.NewEnv(t)
			decide := tamper
			r := newRunner(t, env, func(_ context.Context, a eino.Approval) eino.Decision { return decide(a) })
			ready(t, env, r)
			args := json.RawMessage(`{"order_id":"A1","amount":700}`)
			rep, err := r.CallTool(t.Context(), adaptertest.Refund, args, "c1")
			if err != nil || rep.Content.Outcome == "executed" || rep.Content.Code != "APPROVAL_REQUIRED" {
				t.Fatalf("tampered resume: %+v, %v; want the call still waiting", rep, err)
			}
			if n := env.Runs(); n != 0 {
				t.Fatalf("refund ran %d times on a tampered resume", n)
			}
			pend, err := env.Gate.Pending(t.Context(), env.TraceID)
			if err != nil || len(pend) != 1 {
				t.Fatalf("pending approvals %+v, %v; want the action still waiting", pend, err)
			}
			decide = func(a eino.Approval) eino.Decision {
				return eino.Decision{Approve: true, Digest: a.Digest, Args: a.Args}
			}
			rep, err = r.CallTool(t.Context(), adaptertest.Refund, args, "c1")
			if err != nil || rep.Content.Outcome != "executed" || env.Runs() != 1 {
				t.Fatalf("honest resume: %+v, %v, %d runs", rep, err, env.Runs())
			}
		})
	}
}

// Without an approver a call that needs approval does not interrupt: the
// model is shown it waiting, and nothing runs.
func TestNoApproverWaits(t *testing.T) {
	env := adaptertest.NewEnv(t)
	r := newRunner(t, env, func(context.Context, eino.Approval) eino.Decision {
		t.Fatal("the person was asked without an approver")
		return eino.Decision{}
	})
	m, err := eino.New(env.Gate, env.Caller, eino.WithTrace(func(context.Context) string { return env.TraceID }))
	if err != nil {
		t.Fatal(err)
	}
	r.m = m
	ready(t, env, r)
	rep, err := r.CallTool(t.Context(), adaptertest.Refund, json.RawMessage(`{"order_id":"A1","amount":700}`), "c1")
	if err != nil || rep.Content.Code != "APPROVAL_REQUIRED" || rep.Content.ApprovalID == "" || env.Runs() != 0 {
		t.Fatalf("reply %+v, %v, %d runs; want APPROVAL_REQUIRED and no run", rep, err, env.Runs())
	}
}

// The surface shows the model each tool with its JSON Schema.
func TestSurfaceSchema(t *testing.T) {
	env := adaptertest.NewEnv(t)
	m, err := eino.New(env.Gate, env.Caller, eino.WithTrace(func(context.Context) string { return env.TraceID }))
	if err != nil {
		t.Fatal(err)
	}
	infos, err := m.Surface(t.Context())
	if err != nil || len(infos) != 1 || infos[0].Name != adaptertest.Lookup {
		t.Fatalf("surface %+v, %v", infos, err)
	}
	js, err := infos[0].ParamsOneOf.ToJSONSchema()
	if err != nil || js == nil || js.Properties == nil {
		t.Fatalf("schema %+v, %v", js, err)
	}
	if _, ok := js.Properties.Get("order_id"); !ok || len(js.Required) != 1 {
		t.Fatalf("schema %+v lacks order_id", js)
	}
}

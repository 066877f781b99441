package adaptertest_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/reply"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/toolgate"
	"github.com/blackboardkernel/bk/toolgate/adaptertest"
)

// direct is the adapter without a framework: the agent loop calling the
// gate itself, as every adapter must behave.
type direct struct {
	env *adaptertest.Env
	// broken, when set, names the contract this adapter breaks (see
	// brokenAdapters).
	broken string
}

func (d *direct) ListTools(ctx context.Context) ([]string, error) {
	specs, err := d.env.Gate.Surface(ctx, d.env.Caller, d.env.TraceID, "")
	if d.broken == "lists every tool" {
		specs = d.env.Gate.Tools()
	}
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	return names, err
}

func (d *direct) CallTool(ctx context.Context, name string, args json.RawMessage, callID string) (adaptertest.Reply, error) {
	g := d.env.Gate
	key := callID
	switch d.broken {
	case "drops the retry key":
		key = ""
	case "drops the context":
		ctx = context.WithoutCancel(context.Background())
	}
	c := toolgate.Call{ID: callID, RetryKey: key, Tool: name, Args: args, Caller: d.env.Caller, TraceID: d.env.TraceID}
	for _, ft := range d.env.Tools {
		if ft.Name != name {
			continue
		}
		run := ft.Run
		if d.broken == "runs the tool itself" {
			// It runs the framework's tool as the framework would, and
			// asks the gate only what to show the model.
			var m map[string]any
			_ = json.Unmarshal(args, &m)
			_, _ = run(ctx, m)
			break
		}
		outer := ctx
		c.Effect = func(ctx context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
			if d.broken == "drops the effect's context" {
				ctx = outer // the call's: no Invocation, no idempotency key
			}
			return run(ctx, inv.Args)
		}
	}
	res, err := g.Call(ctx, c)
	if err != nil {
		return adaptertest.Reply{}, err
	}
	if d.broken == "refuses with protocol errors" && res.Outcome == audit.OutcomeRefused {
		return adaptertest.Reply{}, errors.New(string(res.Code))
	}
	if res.Outcome == audit.OutcomePendingApproval {
		dec := d.env.Decide(ctx, adaptertest.Approval{Tool: name, ActionID: res.ActionID, Digest: res.ArgsDigest, Args: res.Args})
		if d.broken == "approves what it was not asked" {
			dec = adaptertest.Decision{Approve: true, Digest: res.ArgsDigest}
		}
		a := g.Approver(d.env.Approver)
		v := audit.Denied
		if dec.Approve {
			v = audit.Approved
		}
		ans := audit.Approval{TraceID: d.env.TraceID, ActionID: res.ActionID, Digest: dec.Digest, Decision: v, TTL: time.Minute}
		if _, err := a.Decide(ctx, ans); err == nil {
			if res, err = g.Resume(ctx, d.env.TraceID, res.ActionID, args); err != nil {
				return adaptertest.Reply{}, err
			}
			if res.Code == reason.EffectUnavailable && d.broken != "resumes without the tool" {
				// The gate has no effect for the framework's tool: the
				// call again, under its key, with the tool, runs it.
				if res, err = g.Call(ctx, c); err != nil {
					return adaptertest.Reply{}, err
				}
			}
		}
	}
	var content reply.Content
	if err := json.Unmarshal([]byte(res.ForModel()), &content); err != nil {
		return adaptertest.Reply{}, err
	}
	return adaptertest.Reply{IsError: reply.IsError(res.Outcome), Content: content}, nil
}

func TestDirect(t *testing.T) {
	adaptertest.Run(t, func(t *testing.T, env *adaptertest.Env) adaptertest.Adapter { return &direct{env: env} })
}

// The direct adapter passes with the framework's own tools as each call's
// effect.
func TestDirectFramework(t *testing.T) {
	adaptertest.RunFramework(t, func(t *testing.T, env *adaptertest.Env) adaptertest.Adapter { return &direct{env: env} })
}

// brokenEnv names, in a helper process of TestSuiteCatchesBrokenAdapters,
// the broken adapter the helper runs the suite against.
const brokenEnv = "BK_ADAPTERTEST_BROKEN"

// brokenModeEnv says whether the helper runs the suite of framework-run
// tools ("framework") or of the gate's effects ("").
const brokenModeEnv = "BK_ADAPTERTEST_MODE"

// brokenAdapters maps each contract the direct adapter can break to the
// cases that must fail on it.
var brokenAdapters = map[string][]string{
	"refuses with protocol errors":   {"RefusedWithHint", "TamperedRetry", "Duplicate"},
	"lists every tool":               {"Surfacing"},
	"approves what it was not asked": {"Deny"},
	"drops the retry key":            {"TamperedRetry", "SameCallID", "CrashBeforeRecord"},
	"drops the context":              {"TraceContext"},
}

// brokenFramework maps each contract an adapter of framework-run tools
// can break to the cases of RunFramework that must fail on it.
var brokenFramework = map[string][]string{
	"runs the tool itself":       {"RunsOncePerCall", "RefusedWithHint", "Deny", "TamperedRetry"},
	"resumes without the tool":   {"ApproveAndResume"},
	"drops the effect's context": {"CrashBeforeRecord"},
}

// The suite fails each broken adapter, in the cases about what it breaks.
func TestSuiteCatchesBrokenAdapters(t *testing.T) {
	if os.Getenv(brokenEnv) != "" {
		t.Skip("a helper process runs TestBrokenAdapterHelper only")
	}
	type broken struct{ mode, name string }
	all := map[broken][]string{}
	for name, cases := range brokenAdapters {
		all[broken{"", name}] = cases
	}
	for name, cases := range brokenFramework {
		all[broken{"framework", name}] = cases
	}
	for b, cases := range all {
		name := b.name
		t.Run(strings.ReplaceAll(b.mode+" "+name, " ", "_"), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenAdapterHelper$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), brokenEnv+"="+name, brokenModeEnv+"="+b.mode)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("the suite passed an adapter that %s (error %v):\n%s", name, err, out)
			}
			for _, c := range cases {
				if !strings.Contains(string(out), "--- FAIL: TestBrokenAdapterHelper/"+c+" ") {
					t.Errorf("case %s passed an adapter that %s:\n%s", c, name, out)
				}
			}
		})
	}
}

// TestBrokenAdapterHelper is the helper process of
// TestSuiteCatchesBrokenAdapters; it skips when run on its own.
func TestBrokenAdapterHelper(t *testing.T) {
	name := os.Getenv(brokenEnv)
	if name == "" {
		t.Skip("run by TestSuiteCatchesBrokenAdapters")
	}
	run, known := adaptertest.Run, brokenAdapters
	if os.Getenv(brokenModeEnv) == "framework" {
		run, known = adaptertest.RunFramework, brokenFramework
	}
	if _, ok := known[name]; !ok {
		t.Fatalf("no broken adapter %q", name)
	}
	run(t, func(t *testing.T, env *adaptertest.Env) adaptertest.Adapter { return &direct{env: env, broken: name} })
}

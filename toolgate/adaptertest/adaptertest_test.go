package adaptertest_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/toolgate"
	"github.com/blackboardkernel/bk/toolgate/adaptertest"
)

// direct is the adapter without a framework: the agent loop calling the
// gate itself, as every adapter must behave.
type direct struct {
	env *adaptertest.Env
}

func (d *direct) ListTools(ctx context.Context) ([]string, error) {
	specs, err := d.env.Gate.Surface(ctx, d.env.Caller, d.env.TraceID, "")
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	return names, err
}

func (d *direct) CallTool(ctx context.Context, name string, args json.RawMessage, callID string) (adaptertest.Reply, error) {
	g := d.env.Gate
	res, err := g.Call(ctx, toolgate.Call{ID: callID, RetryKey: callID, Tool: name, Args: args, Caller: d.env.Caller, TraceID: d.env.TraceID})
	if err != nil {
		return adaptertest.Reply{}, err
	}
	if res.Outcome == audit.OutcomePendingApproval {
		dec := d.env.Decide(ctx, adaptertest.Approval{Tool: name, ActionID: res.ApprovalID, Digest: res.ArgsDigest, Args: res.Args})
		a := g.Approver(d.env.Approver)
		decide := a.Deny
		if dec.Approve {
			decide = a.Approve
		}
		if _, err := decide(ctx, d.env.TraceID, res.ApprovalID, dec.Digest, "", time.Minute); err == nil {
			if res, err = g.Resume(ctx, d.env.TraceID, res.ApprovalID, args); err != nil {
				return adaptertest.Reply{}, err
			}
		}
	}
	r := res.ForModel()
	return adaptertest.Reply{IsError: r.IsError, Content: r.Content}, nil
}

func TestDirect(t *testing.T) {
	adaptertest.Run(t, func(t *testing.T, env *adaptertest.Env) adaptertest.Adapter { return &direct{env: env} })
}

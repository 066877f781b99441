package toolgate

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/kernelhook"
	"github.com/blackboardkernel/bk/internal/telemetry"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// How long a driver waits between looks at an attempt another driver
// holds: from pollStart, doubling up to pollMax, with jitter.
const (
	pollStart = 10 * time.Millisecond
	pollMax   = 500 * time.Millisecond
)

// maxProbe bounds the attempt numbers a driver looks for; no policy runs
// near it.
const maxProbe = 10_000

// executor is the gate's runtime: it puts a call through the gate's
// checks and the kernel's decision, and drives a committed action to its
// one recorded result (attempts under once-keys, retries, approvals,
// escalation, recovery). It holds the kernel's handles it writes and reads
// with, and reads the rest of the gate's configuration (g), which New
// fixed; it calls none of the gate's exported methods: the gate's methods
// call it, never the other way round.
type executor struct {
	k       *kernel.Kernel
	gov     *kernel.Governor // retires actions, reads once-keys, rechecks
	reader  kernel.Handle    // reads records
	planner governed         // submits fallbacks
	// lease is how long an attempt is reserved to its driver; fallback
	// the safe fallback action type a denied or expired approval
	// escalates to.
	lease    time.Duration
	fallback string
	g        *Gate // the tools, contracts, intents, mask, budget, telemetry, policy hash
	// log is the kernel's logger (Config.Kernel.Logger), or one that
	// discards everything: the application configures one logger.
	log *slog.Logger
}

func (x *executor) execute(ctx context.Context, traceID, actionID string, args json.RawMessage) (res Result, err error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	ctx, _ = kernelhook.WithReceipts(ctx, audit.Kind)
	ctx, sp := x.g.tracer.Start(ctx, "toolgate.execute")
	if sp != nil {
		sp.SetAttributes(attribute.String(telemetry.AttrActionID, actionID))
	}
	tool := ""
	defer func() { x.ended(ctx, sp, tool, &res, err) }()
	act, e, gd, err := x.gated(ctx, actionID)
	if err != nil {
		return Result{}, err
	}
	tool = e.Name
	if sp != nil {
		sp.SetAttributes(attribute.String(telemetry.AttrGenAIToolName, e.Name), attribute.String(telemetry.AttrTraceID, act.Provenance.TraceID))
	}
	if traceID != "" && act.Provenance.TraceID != traceID {
		return Result{}, notAction(actionID, fmt.Sprintf("not an action of trace %q", traceID))
	}
	return x.executeAction(ctx, e, act, gd, args, nil)
}

// executeAction is Execute once the action is known to be the gate's;
// effect, when set, is the caller's ([Call.Effect]).
func (x *executor) executeAction(ctx context.Context, e *entry, act blackboard.Record, gd audit.Entry, given json.RawMessage, effect EffectFunc) (Result, error) {
	j, err := x.newJob(ctx, e, act, gd.Context)
	if err != nil {
		return Result{ActionID: act.ID}, err
	}
	if effect != nil {
		j.fn = effect
	}
	// The records this gate writes name its own policy.
	if j.cc == nil {
		j.cc = blackboard.Payload{}
	}
	j.cc[keyPolicy] = x.g.policyValue
	caller, _ := gd.Context["caller"].(string)
	intent, _ := gd.Context["intent"].(string)
	need := gd.Outcome == audit.OutcomePendingApproval
	if !need {
		need, _ = e.policy.needs(ctx, j.args, caller, intent) // a stricter policy applies to what is not yet run
	}
	if given != nil {
		if res, refused, err := x.checkGiven(ctx, j, need, given); refused || err != nil {
			return res, err
		}
	}
	if id, ok, err := x.resultOf(ctx, j); err != nil || ok {
		if err != nil {
			return Result{ActionID: act.ID}, err
		}
		return x.recorded(ctx, j, id)
	}
	// The configuration may have changed since the call committed: what
	// the caller or intent may no longer do does not start.
	// The refusal is for good, so that Recover does not come back to it.
	if r := x.g.contracts[caller]; r == nil || !r.tools[e.Name] {
		return x.refuseForGood(ctx, j, reason.ToolNotPermitted, "the contract of "+quote(caller)+" no longer lists "+quote(e.Name))
	}
	if x.g.intents != nil && !x.g.intents[intent][e.Name] {
		return x.refuseForGood(ctx, j, reason.ToolNotForIntent, "intent "+quote(intent)+" no longer lists "+quote(e.Name))
	}
	n, first, err := x.lastAttempt(ctx, j, 1)
	if err != nil {
		return Result{ActionID: act.ID}, err
	}
	if n > 0 {
		// Started already (the first attempt consumed the approval, if
		// one was needed): the effect may have run, so the attempt is
		// driven to its result, whatever the evidence says now.
		if need {
			j.approval = effectOf(first).Approval
		}
		return x.run(ctx, j)
	}
	if controlsDecide() {
		// Not started: the trace's run controls as of now decide, before
		// any approval is looked at, so that one given before the trace
		// became read-only never runs. The refusal claims the first
		// attempt's key, as recheck's does: a driver that started the
		// effect meanwhile keeps it.
		code, detail, err := x.forbidden(ctx, j.trace, e)
		if err != nil {
			return Result{ActionID: act.ID}, err
		}
		if code != "" {
			return x.refuseForGood(ctx, j, code, detail, j.attemptKey(1))
		}
	}
	if need {
		if res, done, err := x.checkApproval(ctx, j); done || err != nil {
			return res, err
		}
	}
	if j.fn == nil && callerEffectNeeded() {
		// Before the recheck, which records: an action of a caller-driven
		// tool waits, untouched, for the caller's call with its effect,
		// which rechecks it then.
		return x.effectUnavailable(ctx, j), nil
	}
	if res, refused, err := x.recheck(ctx, j); refused || err != nil {
		return res, err
	}
	return x.run(ctx, j)
}

// recheck decides the evidence of an action that waited (for its
// approval, or for Recover) again before its first attempt: an approval
// binds the arguments, not the evidence, which may have expired, been
// superseded or used up since, and the rules may have changed. An action
// that no longer passes is refused for good with the kernel's code; its
// approval is not consumed (no attempt claimed it), and a fresh call
// decides on the evidence of now and needs its own approval.
func (x *executor) recheck(ctx context.Context, j *job) (res Result, refused bool, err error) {
	if !recheckEvidence() {
		return Result{}, false, nil
	}
	d, err := x.gov.RecheckAction(ctx, j.act.ID)
	if err != nil {
		return Result{ActionID: j.act.ID}, true, err
	}
	if d.Code.OK() {
		return Result{}, false, nil
	}
	detail := "the action's evidence or rules no longer admit it: " + string(d.Code)
	if d.Failed != "" {
		detail += " on " + d.Failed
	}
	if d.Detail != "" {
		detail += " (" + d.Detail + ")"
	}
	// The refusal also claims the first attempt's key: a driver that
	// started the effect meanwhile keeps it (and this refusal yields to its
	// attempt), and none can start it after.
	var keys []string
	if recheckYields() {
		keys = []string{j.attemptKey(1)}
	}
	res, err = x.refuseForGood(ctx, j, d.Code, detail, keys...)
	return res, true, err
}

// checkGiven compares the arguments a caller is about to run with the
// committed ones. refused reports a refusal.
func (x *executor) checkGiven(ctx context.Context, j *job, needApproval bool, given json.RawMessage) (res Result, refused bool, err error) {
	code := reason.ArgumentsChanged
	if needApproval {
		code = reason.ApprovalMismatch
	}
	var args map[string]any
	if err := json.Unmarshal(given, &args); err != nil || args == nil {
		res, err := x.refuseAction(ctx, j, code, "the arguments to run are not a JSON object")
		return res, true, err
	}
	want, err := ArgsDigest(j.act.Payload)
	if err != nil {
		return Result{ActionID: j.act.ID}, true, err
	}
	given2 := blackboard.Payload(args)
	masked, err := x.g.mask.payload(ctx, j.trace, given2, j.e.maskedGiven(given2))
	if keyFailed(err) {
		return Result{ActionID: j.act.ID}, true, err // nothing recorded: the trace has no key to give
	}
	if err != nil {
		res, err := x.refuseAction(ctx, j, code, "the arguments to run cannot be masked")
		return res, true, err
	}
	got, err := ArgsDigest(masked)
	if err != nil || got != want {
		j.cc["resume_args_digest"] = got
		res, err := x.refuseAction(ctx, j, code, "the arguments to run differ from the committed ones (digest "+got+", committed "+want+")")
		return res, true, err
	}
	if len(j.e.Masked) > 0 {
		j.real = given2
	}
	return Result{}, false, nil
}

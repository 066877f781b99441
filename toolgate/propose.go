package toolgate

import (
	"context"
	"errors"
	"maps"
	"slices"

	"go.opentelemetry.io/otel/attribute"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/telemetry"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// propose runs the checks and the kernel's decision. It returns the job to
// run when the action committed and may run now, else the answer.
func (x *executor) propose(ctx context.Context, c Call) (Result, *job, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, nil, err
	}
	if err := checkTrace(c.TraceID); err != nil {
		return Result{}, nil, invalidCall("trace id: %v", err)
	}
	e := x.g.tools[c.Tool]
	if e != nil && len(e.Masked) > 0 && x.g.mask.ring != nil {
		// Before anything is written: a call in a trace whose key is
		// erased (or cannot be had) fails closed and leaves no record.
		if _, err := x.g.mask.keyOf(ctx, c.TraceID); err != nil {
			return noJob(Result{}, err)
		}
	}
	cc := x.callContext(c, e)
	if c.Context != "" {
		// Before anything else is recorded: a record would name it.
		detail, err := x.contextRef(ctx, c)
		if err != nil {
			return Result{}, nil, err
		}
		if detail != "" {
			return noJob(x.refuse(ctx, c.TraceID, e, toolLabel(c.Tool), reason.ContextInvalid, detail, withRawArgs(cc, c, e)))
		}
		cc[keyContext] = c.Context
		if c.span != nil {
			c.span.SetAttributes(attribute.String(telemetry.AttrContext, c.Context))
		}
	}
	if c.RetryKey != "" && retryKeyOnce() {
		// Before the budget: a call the gate decided already is answered
		// as it was, whatever the budget says now.
		if res, done, err := x.replay(ctx, c, e, cc); done || err != nil {
			return noJob(res, err)
		}
	}
	if e != nil && e.Effect == nil && c.Effect == nil && callerEffectNeeded() {
		// A caller-driven tool's call that brings no effect would commit
		// an action nothing can run: answered before the budget, with
		// nothing recorded.
		root := kernel.Cause{Code: reason.EffectUnavailable, Detail: quote(e.Name) + " is caller-driven and the call brings no effect"}
		return Result{Outcome: audit.OutcomeRefused, Code: reason.EffectUnavailable, RootCause: root,
			Hint: x.hint(ctx, e, reason.EffectUnavailable, root, "")}, nil, nil
	}
	if res, refused, err := x.admit(ctx, c, e, cc); refused || err != nil {
		return noJob(res, err)
	}
	if e == nil {
		detail := "no tool named " + quote(c.Tool)
		if toolNameChecked() && !isToolName(c.Tool) {
			detail = "the tool name is not a name (1 to 64 of A-Z, a-z, 0-9, _, . and -): " + escapedTool(c.Tool)
		}
		return noJob(x.refuse(ctx, c.TraceID, nil, toolLabel(c.Tool), reason.ToolUnknown, detail, withRawArgs(cc, c, e)))
	}
	r := x.g.contracts[c.Caller]
	if r == nil || !r.tools[c.Tool] {
		return noJob(x.refuse(ctx, c.TraceID, e, c.Tool, reason.ToolNotPermitted, "the contract of "+quote(c.Caller)+" does not list "+quote(c.Tool), withRawArgs(cc, c, e)))
	}
	if x.g.intents != nil && !x.g.intents[c.Intent][c.Tool] {
		detail := "intent " + quote(c.Intent) + " does not list " + quote(c.Tool)
		if x.g.intents[c.Intent] == nil {
			detail = "no configured intent " + quote(c.Intent)
		}
		return noJob(x.refuse(ctx, c.TraceID, e, c.Tool, reason.ToolNotForIntent, detail, withRawArgs(cc, c, e)))
	}
	if e.effectful() && controlsAtCall() {
		// An effectful tool's call is checked here, so that the model is
		// told READ_ONLY_MODE rather than what the kernel's own checks
		// would find missing first. The kernel checks every call again as
		// it decides it (controlsValidator), which closes the window
		// between this look and the commit, and is the only check a
		// read-only tool's call gets: no extra read on that path.
		code, detail, err := x.forbidden(ctx, c.TraceID, e)
		if err != nil {
			return Result{}, nil, err
		}
		if code != "" {
			return noJob(x.refuse(ctx, c.TraceID, e, c.Tool, code, detail, withRawArgs(cc, c, e)))
		}
	}
	args, prob := e.schema.check(c.Args)
	real := args // the call's own values, never stored
	if prob == nil {
		var err error
		if args, err = x.g.mask.payload(ctx, c.TraceID, args, e.Masked); keyFailed(err) {
			return noJob(Result{}, err)
		} else if err != nil {
			prob = &argProblem{detail: "the arguments cannot be masked: a masked field is not a JSON value"}
		}
	}
	if prob != nil {
		withRawArgs(cc, c, e)
	} else {
		cc["args"] = map[string]any(args)
		digest, err := ArgsDigest(args)
		if err != nil {
			prob = &argProblem{detail: storeProblem(err, len(c.Args))}
		} else {
			cc["args_digest"] = digest
		}
	}
	if prob != nil {
		delete(cc, "args")
		if prob.field != "" {
			cc["argument"] = prob.field
		}
		return noJob(x.refuse(ctx, c.TraceID, e, c.Tool, reason.InvalidArguments, prob.detail, cc))
	}
	if res, refused, err := x.scope(ctx, c, e, args, cc); refused || err != nil {
		return noJob(res, err)
	}
	var grounding []string // the evidence artifacts the bindings were checked against
	checked := false
	if len(e.Bindings) > 0 {
		var err error
		if grounding, checked, err = x.beliefGrounding(ctx, e, c.TraceID); err != nil {
			return Result{}, nil, err
		}
		if checked {
			if res, refused, err := x.bind(ctx, c.TraceID, e, args, grounding, cc); refused || err != nil {
				return noJob(res, err)
			}
		}
	}
	need, why := e.policy.needs(ctx, real, c.Caller, c.Intent)
	cc["approval_required"] = need
	if need {
		cc["approval_reason"] = why
	}
	// A shallow copy: the kernel stores a normalised deep copy of the
	// payload, and args stays as the decision record's context holds it.
	payload := make(blackboard.Payload, len(args)+1)
	maps.Copy(payload, args)
	payload["requires_beliefs"] = e.requires
	var keys []string
	if c.RetryKey != "" && retryKeyOnce() {
		keys = []string{retryOnceKey(c.TraceID, c.RetryKey)}
	}
	d, act, err := r.planner.Submit(ctx, kernel.Entry{TraceID: c.TraceID, Slot: blackboard.Actions, Kind: e.action(), Payload: payload, OnceKeys: keys},
		func(dr audit.Entry) audit.Entry {
			if need && dr.Outcome == audit.OutcomeCommitted {
				dr.Outcome = audit.OutcomePendingApproval
			}
			dr.Context = cc
			return dr
		})
	if keys != nil && errors.Is(err, blackboard.ErrDuplicateKey) {
		// A concurrent call with the same retry key was decided first.
		res, _, err := x.replay(ctx, c, e, cc)
		return res, nil, err
	}
	if errors.Is(err, blackboard.ErrInvalidPayload) || errors.Is(err, kernel.ErrPayloadTooLarge) {
		delete(cc, "args")
		footprint(cc, c.Args, e)
		return noJob(x.refuse(ctx, c.TraceID, e, c.Tool, reason.InvalidArguments, storeProblem(err, len(c.Args)), cc))
	}
	if err != nil {
		return Result{}, nil, err
	}
	if !d.Committed() {
		root := d.RootCause()
		return Result{Outcome: audit.OutcomeRefused, Code: d.Code, RootCause: root, Hint: x.hint(ctx, e, d.Code, root, ""), DecisionID: d.ID}, nil, nil
	}
	if committedBound() && len(e.Bindings) > 0 && (!checked || !slices.Equal(act.EvidenceRefs, grounding)) {
		// The kernel grounded the action on other beliefs than the ones
		// checked (they changed in between): its own grounding decides.
		if res, refused, err := x.bindCommitted(ctx, e, act, args, cc); refused || err != nil {
			return noJob(res, err)
		}
	}
	if need {
		digest, _ := cc["args_digest"].(string)
		res := x.pending(ctx, e, act.ID, real, digest)
		res.DecisionID = d.ID
		return res, nil, nil
	}
	j, err := x.newJob(ctx, e, act, cc)
	if err != nil {
		return Result{ActionID: act.ID}, nil, err
	}
	j.real = real
	if c.Effect != nil {
		j.fn = c.Effect
	}
	return Result{ActionID: act.ID}, j, nil
}

// noJob adapts a refusal to propose's results.
func noJob(res Result, err error) (Result, *job, error) { return res, nil, err }

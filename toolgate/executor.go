package toolgate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/kernel"
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
}

// job is one committed action on its way to a result.
type job struct {
	e        *entry
	act      blackboard.Record // the committed action
	trace    string
	args     blackboard.Payload // read-only: shares its values with act's payload; an effect gets a copy
	real     blackboard.Payload // the call's real arguments, in memory only, when the tool masks fields and they are known
	key      string             // the idempotency key
	hash     string             // hex SHA-256 of key, for the once-keys the gate claims
	approval string             // the approval record that allowed it, when one did
	boxes    effectBoxes        // what its effects repeat, boxed once
	cc       blackboard.Payload
	failure  failure.Failure // the typed failure finish records, when known
	fn       EffectFunc      // the effect to run: the call's, else the tool's; nil for a caller-driven tool without the caller's
	// fresh: the action was committed by this very call, so nothing can
	// have recorded a result or started an attempt before the attempt this
	// driver claims (a driver that did would have claimed the attempt's
	// key first, and this driver's claim would fail)
	fresh bool
	// superseded: checkApproval found its escalation of an expired
	// approval beaten by a new decision, and looked again (once)
	superseded bool
}

// newJob prepares the execution of a committed action of tool e. The job
// takes act and cc as they are: the caller passes copies of its own (the
// kernel's and the store's answers, a decoded decision record) and does not
// use cc after.
func (x *executor) newJob(ctx context.Context, e *entry, act blackboard.Record, cc blackboard.Payload) (*job, error) {
	key := x.k.Namespace() + "/" + act.ID
	if e.once {
		switch ok, err := x.gov.OnceKeyOf(ctx, act.ID); {
		case err == nil:
			key = ok
		case !errors.Is(err, blackboard.ErrNotFound):
			return nil, err
		}
	}
	sum := sha256.Sum256([]byte(key))
	var hash [2 * sha256.Size]byte
	hex.Encode(hash[:], sum[:])
	return &job{e: e, act: act, trace: act.TraceID(), args: argsOf(act.Payload), key: key,
		hash: string(hash[:]), cc: cc, boxes: effectBoxes{e.nameValue, act.ID, key}, fn: e.Effect}, nil
}

// redrivable reports whether an attempt of the tool's effect that left no
// result may be started again: the world dedups it by its key (a once-key,
// or a key the tool declares honoured). A tool that rests on no belief is
// not taken for one that changes nothing: send_email may rest on none.
func (e *entry) redrivable() bool { return e.once || e.Idempotent }

// The once-keys the gate claims. They hash the idempotency key, which may
// be longer than a once-key may be.
func (j *job) attemptKey(n int) string {
	return "toolgate/effect/" + j.hash + "/attempt/" + strconv.Itoa(n)
}
func (j *job) resultKey() string { return "toolgate/effect/" + j.hash + "/result" }

// retireKey is the fence of the retirement of an action whose refusal
// for good holds its first attempt's key (see [executor.retireFence]).
func (j *job) retireKey() string { return "toolgate/effect/" + j.hash + "/retired" }
func approvalKey(approvalID string) string {
	sum := sha256.Sum256([]byte(approvalID))
	return "toolgate/approval/" + hex.EncodeToString(sum[:])
}

func (x *executor) execute(ctx context.Context, traceID, actionID string, args json.RawMessage) (res Result, err error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	ctx, sp := x.g.tracer.Start(ctx, "toolgate.execute")
	if sp != nil {
		sp.SetAttributes(attribute.String(AttrActionID, actionID))
	}
	tool := ""
	defer func() { x.g.ended(ctx, sp, tool, res, err) }()
	act, e, gd, err := x.gated(ctx, actionID)
	if err != nil {
		return Result{}, err
	}
	tool = e.Name
	if sp != nil {
		sp.SetAttributes(attribute.String(AttrGenAIToolName, e.Name), attribute.String(kernel.AttrTraceID, act.TraceID()))
	}
	if traceID != "" && act.TraceID() != traceID {
		return Result{}, fmt.Errorf("%w: %s is not an action of trace %q", ErrUnknownAction, actionID, traceID)
	}
	return x.executeAction(ctx, e, act, gd, args, nil)
}

// gated returns the committed action actionID, its tool and the decision
// record the gate wrote when it committed it.
func (x *executor) gated(ctx context.Context, actionID string) (blackboard.Record, *entry, audit.Record, error) {
	unknown := func(why string) (blackboard.Record, *entry, audit.Record, error) {
		return blackboard.Record{}, nil, audit.Record{}, fmt.Errorf("%w: %s: %s", ErrUnknownAction, actionID, why)
	}
	act, err := x.reader.Get(ctx, actionID)
	if errors.Is(err, blackboard.ErrNotFound) {
		return unknown("no such record")
	}
	if err != nil {
		return blackboard.Record{}, nil, audit.Record{}, err
	}
	e := x.g.byAction[act.Kind]
	if act.Slot != blackboard.Actions || act.Mode != blackboard.ModeCommit || e == nil {
		return unknown("not a committed action of a registered tool")
	}
	gd, found, err := x.commitDecision(ctx, act.ID)
	if err != nil {
		return blackboard.Record{}, nil, audit.Record{}, err
	}
	if !found || gd.Context["tool"] != any(e.Name) {
		return unknown("not committed through the gate")
	}
	caller, _ := gd.Context["caller"].(string)
	if len(act.Provenance.InputRefs) == 0 {
		return unknown("no proposal")
	}
	proposal, err := x.reader.Get(ctx, act.Provenance.InputRefs[0])
	if err != nil || proposal.Provenance.Writer != CallerWriter(caller) {
		return unknown("not proposed by the caller the gate recorded")
	}
	return act, e, gd, nil
}

// commitDecision returns the decision record that committed the action
// (outcome committed or pending approval): the one the kernel wrote with
// it, read by id ([audit.About]).
func (x *executor) commitDecision(ctx context.Context, actionID string) (audit.Record, bool, error) {
	d, found, err := x.decisionAbout(ctx, actionID)
	if !found || err != nil {
		return audit.Record{}, false, err
	}
	return d, d.Outcome == audit.OutcomeCommitted || d.Outcome == audit.OutcomePendingApproval, nil
}

// decisionAbout returns the decision record the kernel wrote in the same
// batch as the record subject, read by id.
func (x *executor) decisionAbout(ctx context.Context, subject string) (audit.Record, bool, error) {
	d, err := audit.About(ctx, x.reader, subject)
	if errors.Is(err, blackboard.ErrNotFound) {
		return audit.Record{}, false, nil
	}
	return d, err == nil, err
}

// executeAction is Execute once the action is known to be the gate's;
// effect, when set, is the caller's ([Call.Effect]).
func (x *executor) executeAction(ctx context.Context, e *entry, act blackboard.Record, gd audit.Record, given json.RawMessage, effect EffectFunc) (Result, error) {
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
		return x.refuseForGood(ctx, j, CodeToolNotPermitted, "the contract of "+quote(caller)+" no longer lists "+quote(e.Name))
	}
	if x.g.intents != nil && !x.g.intents[intent][e.Name] {
		return x.refuseForGood(ctx, j, CodeToolNotForIntent, "intent "+quote(intent)+" no longer lists "+quote(e.Name))
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
	code := CodeArgumentsChanged
	if needApproval {
		code = CodeApprovalMismatch
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

// refuseAction records an execution-time refusal of a committed action.
func (x *executor) refuseAction(ctx context.Context, j *job, code blackboard.Code, detail string) (Result, error) {
	dr, err := audit.Append(ctx, x.planner.gov, audit.Record{TraceID: j.trace, Kind: j.e.action(), Subject: j.act.ID,
		Outcome: audit.OutcomeRefused, Code: code, Detail: detail, Context: j.cc})
	if err != nil {
		return Result{ActionID: j.act.ID}, err
	}
	root := kernel.Cause{Code: code, Record: j.act.ID, Detail: detail}
	return Result{Outcome: audit.OutcomeRefused, Code: code, RootCause: root, Hint: x.hint(ctx, j.e, code, root, ""),
		ActionID: j.act.ID, DecisionID: dr.ID}, nil
}

// resultOf returns the record holding the action's result, if there is
// one.
func (x *executor) resultOf(ctx context.Context, j *job) (string, bool, error) {
	id, err := x.gov.ClaimedBy(ctx, j.resultKey())
	if errors.Is(err, blackboard.ErrNotFound) {
		return "", false, nil
	}
	return id, err == nil, err
}

// recordedByKey returns the recorded result after a write lost the race
// for the result key.
func (x *executor) recordedByKey(ctx context.Context, j *job) (Result, error) {
	id, ok, err := x.resultOf(ctx, j)
	if err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("toolgate: result key of %s claimed but not found", j.act.ID)
		}
		return Result{ActionID: j.act.ID}, err
	}
	return x.recorded(ctx, j, id)
}

// recorded turns the id of a result record written earlier (by another
// call, driver or process) into a Result, reading the result and its
// decision record by id; a driver that has just written the result uses
// what the write returned instead ([executor.written]; finish knows the
// decision's id from the record it built), which reads nothing.
func (x *executor) recorded(ctx context.Context, j *job, id string) (Result, error) {
	rec, err := x.reader.Get(ctx, id)
	if err != nil {
		return Result{ActionID: j.act.ID}, err
	}
	dr, _, err := x.decisionAbout(ctx, id)
	if err != nil {
		return Result{ActionID: j.act.ID}, err
	}
	return x.result(ctx, j, rec, dr.ID)
}

// written turns the result this driver has just written into a Result,
// from what the write returned: no read of the store.
func (x *executor) written(ctx context.Context, j *job, w wrote) (Result, error) {
	return x.result(ctx, j, w.rec, decisionID(w))
}

// result turns the result record rec, whose decision record is
// decisionID, into a Result. rec is the caller's own copy, used no more:
// a success's payload becomes the Result's Output.
func (x *executor) result(ctx context.Context, j *job, rec blackboard.Record, decisionID string) (res Result, err error) {
	res = Result{ActionID: j.act.ID, DecisionID: decisionID}
	eff := effectOf(rec)
	res.Code = eff.Code
	if err := x.retire(ctx, j, rec); err != nil {
		return res, err
	}
	switch rec.Kind {
	case KindEscalated:
		res.Outcome = audit.OutcomeRefused
		res.RootCause = kernel.Cause{Code: res.Code, Record: eff.Approval, Detail: eff.Note}
		res.Hint = x.hint(ctx, j.e, res.Code, res.RootCause, "")
		if res.FallbackID, err = x.ensureFallback(ctx, j, res.Code); err != nil {
			return res, err
		}
	case KindFailed:
		res.Outcome = audit.OutcomeFailed
		res.RootCause = kernel.Cause{Code: res.Code, Record: rec.ID, Detail: eff.Error}
		if eff.ExecutionStatus != "" {
			// The typed signal, for the worker and the repair router.
			res.Output = blackboard.Payload{failure.KeyStatus: string(eff.ExecutionStatus), failure.KeyCategory: string(eff.Category),
				failure.KeyError: eff.Error, failure.KeyRetryable: eff.Retryable}
		}
		if eff.Status == StatusRefused {
			res.Outcome, res.RootCause.Record = audit.OutcomeRefused, j.act.ID
		}
		res.Hint = x.hint(ctx, j.e, res.Code, res.RootCause, "")
	default:
		res.Outcome = audit.OutcomeExecuted
		// rec is this call's copy (a store's or the kernel's answer), read
		// no more: its payload becomes the output as it is.
		res.Output = rec.Payload
		delete(res.Output, KeyEffect)
	}
	return res, nil
}

// effectOf is the Effect of a percept the gate found by one of its own
// once-keys (zero when the record holds none).
func effectOf(rec blackboard.Record) Effect {
	e, _ := EffectOf(rec)
	return e
}

// effect is the Effect of a gate percept about the job.
func (j *job) effect(status string, attempt int, code blackboard.Code) Effect {
	return Effect{Status: status, Tool: j.e.Name, ActionID: j.act.ID, Key: j.key, Attempt: attempt, Code: code, Approval: j.approval}
}

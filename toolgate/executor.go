package toolgate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/blackboardkernel/bk/internal/telemetry"
	"maps"
	"math/rand/v2"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/failure"
	pause "github.com/blackboardkernel/bk/internal/wait"
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
func (g *Gate) newJob(ctx context.Context, e *entry, act blackboard.Record, cc blackboard.Payload) (*job, error) {
	key := g.k.Namespace() + "/" + act.ID
	if e.once {
		switch ok, err := g.k.OnceKeyOf(ctx, act.ID); {
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
// for good holds its first attempt's key (see [Gate.retireFence]).
func (j *job) retireKey() string { return "toolgate/effect/" + j.hash + "/retired" }
func approvalKey(approvalID string) string {
	sum := sha256.Sum256([]byte(approvalID))
	return "toolgate/approval/" + hex.EncodeToString(sum[:])
}

// Execute runs a committed action of one of the gate's tools, once its
// approval allows it, and returns what came of it. It is how an approved
// call continues (the approver's side calls it), and it is safe to call
// again, from any goroutine or process:
//
//   - If the action already has a recorded result (succeeded, failed or
//     escalated), Execute returns it and starts nothing.
//   - If its policy needs approval and no attempt has started yet, the
//     latest approval decision for it decides: none is [audit.OutcomePendingApproval]
//     (APPROVAL_REQUIRED); a denial, or an approval past its TTL, records
//     the escalation, submits the safe fallback with the code as reason
//     and returns Refused (APPROVAL_DENIED, APPROVAL_EXPIRED); an approval
//     is consumed by the first attempt (a once-key on the approval record,
//     claimed in the attempt's write), so it is used once.
//   - Before the first attempt, the kernel decides the action's evidence
//     and rules again as of now ([kernel.Kernel.RecheckAction]): an action
//     whose grounding expired, was superseded or used up, or that a
//     constraint or rule now refuses, is refused for good with the
//     kernel's code (recorded as its result), runs nothing and consumes no
//     approval.
//   - An action of a caller-driven tool (no [Tool.Effect]) not yet
//     started, or whose attempt may be re-driven, is EFFECT_UNAVAILABLE:
//     Execute has no effect for it, so it runs nothing, records nothing
//     and uses up no approval, for the caller's call under the same
//     [Call.RetryKey] with its effect (see the package doc,
//     "Caller-driven tools").
//   - Otherwise it drives the effect: see the package doc on exactly-once
//     execution.
//
// An id that is not a committed action the gate proposed is
// [ErrUnknownAction]. Other errors are a cancelled context or a store
// failure; the action is then left for a later Execute or [Gate.Recover].
func (g *Gate) Execute(ctx context.Context, actionID string) (Result, error) {
	return g.execute(ctx, "", actionID, nil)
}

// Resume is Execute for the caller that holds the arguments about to run
// (an agent loop resuming a call after its approval): args must be the
// committed action's arguments, digest for digest, or the call is refused
// with APPROVAL_MISMATCH (ARGUMENTS_CHANGED for an action that needs no
// approval) and nothing runs. A changed argument needs a new call and a
// new approval. traceID must be the action's trace.
func (g *Gate) Resume(ctx context.Context, traceID, actionID string, args json.RawMessage) (Result, error) {
	if args == nil {
		args = json.RawMessage("{}")
	}
	return g.execute(ctx, traceID, actionID, args)
}

func (g *Gate) execute(ctx context.Context, traceID, actionID string, args json.RawMessage) (res Result, err error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	ctx, sp := g.tracer.Start(ctx, "toolgate.execute")
	if sp != nil {
		sp.SetAttributes(attribute.String(telemetry.AttrActionID, actionID))
	}
	tool := ""
	defer func() { g.ended(ctx, sp, tool, res, err) }()
	act, e, gd, err := g.gated(ctx, actionID)
	if err != nil {
		return Result{}, err
	}
	tool = e.Name
	if sp != nil {
		sp.SetAttributes(attribute.String(telemetry.AttrGenAIToolName, e.Name), attribute.String(kernel.AttrTraceID, act.TraceID()))
	}
	if traceID != "" && act.TraceID() != traceID {
		return Result{}, fmt.Errorf("%w: %s is not an action of trace %q", ErrUnknownAction, actionID, traceID)
	}
	return g.executeAction(ctx, e, act, gd, args, nil)
}

// gated returns the committed action actionID, its tool and the decision
// record the gate wrote when it committed it.
func (g *Gate) gated(ctx context.Context, actionID string) (blackboard.Record, *entry, audit.Entry, error) {
	unknown := func(why string) (blackboard.Record, *entry, audit.Entry, error) {
		return blackboard.Record{}, nil, audit.Entry{}, fmt.Errorf("%w: %s: %s", ErrUnknownAction, actionID, why)
	}
	act, err := g.reader.Get(ctx, actionID)
	if errors.Is(err, blackboard.ErrNotFound) {
		return unknown("no such record")
	}
	if err != nil {
		return blackboard.Record{}, nil, audit.Entry{}, err
	}
	e := g.byAction[act.Kind]
	if act.Slot != blackboard.Actions || act.Mode != blackboard.ModeCommit || e == nil {
		return unknown("not a committed action of a registered tool")
	}
	gd, found, err := g.commitDecision(ctx, act.ID)
	if err != nil {
		return blackboard.Record{}, nil, audit.Entry{}, err
	}
	if !found || gd.Context["tool"] != any(e.Name) {
		return unknown("not committed through the gate")
	}
	caller, _ := gd.Context["caller"].(string)
	if len(act.Provenance.InputRefs) == 0 {
		return unknown("no proposal")
	}
	proposal, err := g.reader.Get(ctx, act.Provenance.InputRefs[0])
	if err != nil || proposal.Provenance.Writer != CallerWriter(caller) {
		return unknown("not proposed by the caller the gate recorded")
	}
	return act, e, gd, nil
}

// commitDecision returns the decision record that committed the action
// (outcome committed or pending approval): the one the kernel wrote with
// it, read by id ([audit.About]).
func (g *Gate) commitDecision(ctx context.Context, actionID string) (audit.Entry, bool, error) {
	d, found, err := g.decisionAbout(ctx, actionID)
	if !found || err != nil {
		return audit.Entry{}, false, err
	}
	return d, d.Outcome == audit.OutcomeCommitted || d.Outcome == audit.OutcomePendingApproval, nil
}

// decisionAbout returns the decision record the kernel wrote in the same
// batch as the record subject, read by id.
func (g *Gate) decisionAbout(ctx context.Context, subject string) (audit.Entry, bool, error) {
	d, err := audit.About(ctx, g.reader, subject)
	if errors.Is(err, blackboard.ErrNotFound) {
		return audit.Entry{}, false, nil
	}
	return d, err == nil, err
}

// executeAction is Execute once the action is known to be the gate's;
// effect, when set, is the caller's ([Call.Effect]).
func (g *Gate) executeAction(ctx context.Context, e *entry, act blackboard.Record, gd audit.Entry, given json.RawMessage, effect EffectFunc) (Result, error) {
	j, err := g.newJob(ctx, e, act, gd.Context)
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
	j.cc[keyPolicy] = g.policyValue
	caller, _ := gd.Context["caller"].(string)
	intent, _ := gd.Context["intent"].(string)
	need := gd.Outcome == audit.OutcomePendingApproval
	if !need {
		need, _ = e.policy.needs(ctx, j.args, caller, intent) // a stricter policy applies to what is not yet run
	}
	if given != nil {
		if res, refused, err := g.checkGiven(ctx, j, need, given); refused || err != nil {
			return res, err
		}
	}
	if id, ok, err := g.resultOf(ctx, j); err != nil || ok {
		if err != nil {
			return Result{ActionID: act.ID}, err
		}
		return g.recorded(ctx, j, id)
	}
	// The configuration may have changed since the call committed: what
	// the caller or intent may no longer do does not start.
	// The refusal is for good, so that Recover does not come back to it.
	if r := g.contracts[caller]; r == nil || !r.tools[e.Name] {
		return g.refuseForGood(ctx, j, CodeToolNotPermitted, "the contract of "+quote(caller)+" no longer lists "+quote(e.Name))
	}
	if g.intents != nil && !g.intents[intent][e.Name] {
		return g.refuseForGood(ctx, j, CodeToolNotForIntent, "intent "+quote(intent)+" no longer lists "+quote(e.Name))
	}
	n, first, err := g.lastAttempt(ctx, j, 1)
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
		return g.run(ctx, j)
	}
	if !mutControlsDecide {
		// Not started: the trace's run controls as of now decide, before
		// any approval is looked at, so that one given before the trace
		// became read-only never runs. The refusal claims the first
		// attempt's key, as recheck's does: a driver that started the
		// effect meanwhile keeps it.
		code, detail, err := g.forbidden(ctx, j.trace, e)
		if err != nil {
			return Result{ActionID: act.ID}, err
		}
		if code != "" {
			return g.refuseForGood(ctx, j, code, detail, j.attemptKey(1))
		}
	}
	if need {
		if res, done, err := g.checkApproval(ctx, j); done || err != nil {
			return res, err
		}
	}
	if j.fn == nil && !mutCallerEffect {
		// Before the recheck, which records: an action of a caller-driven
		// tool waits, untouched, for the caller's call with its effect,
		// which rechecks it then.
		return g.effectUnavailable(ctx, j), nil
	}
	if res, refused, err := g.recheck(ctx, j); refused || err != nil {
		return res, err
	}
	return g.run(ctx, j)
}

// recheck decides the evidence of an action that waited (for its
// approval, or for Recover) again before its first attempt: an approval
// binds the arguments, not the evidence, which may have expired, been
// superseded or used up since, and the rules may have changed. An action
// that no longer passes is refused for good with the kernel's code; its
// approval is not consumed (no attempt claimed it), and a fresh call
// decides on the evidence of now and needs its own approval.
func (g *Gate) recheck(ctx context.Context, j *job) (res Result, refused bool, err error) {
	if mutRecheckEvidence {
		return Result{}, false, nil
	}
	d, err := g.k.RecheckAction(ctx, j.act.ID)
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
	if !mutRecheckYields {
		keys = []string{j.attemptKey(1)}
	}
	res, err = g.refuseForGood(ctx, j, d.Code, detail, keys...)
	return res, true, err
}

// checkGiven compares the arguments a caller is about to run with the
// committed ones. refused reports a refusal.
func (g *Gate) checkGiven(ctx context.Context, j *job, needApproval bool, given json.RawMessage) (res Result, refused bool, err error) {
	code := CodeArgumentsChanged
	if needApproval {
		code = CodeApprovalMismatch
	}
	var args map[string]any
	if err := json.Unmarshal(given, &args); err != nil || args == nil {
		res, err := g.refuseAction(ctx, j, code, "the arguments to run are not a JSON object")
		return res, true, err
	}
	want, err := ArgsDigest(j.act.Payload)
	if err != nil {
		return Result{ActionID: j.act.ID}, true, err
	}
	given2 := blackboard.Payload(args)
	masked, err := g.mask.payload(ctx, j.trace, given2, j.e.maskedGiven(given2))
	if keyFailed(err) {
		return Result{ActionID: j.act.ID}, true, err // nothing recorded: the trace has no key to give
	}
	if err != nil {
		res, err := g.refuseAction(ctx, j, code, "the arguments to run cannot be masked")
		return res, true, err
	}
	got, err := ArgsDigest(masked)
	if err != nil || got != want {
		j.cc["resume_args_digest"] = got
		res, err := g.refuseAction(ctx, j, code, "the arguments to run differ from the committed ones (digest "+got+", committed "+want+")")
		return res, true, err
	}
	if len(j.e.Masked) > 0 {
		j.real = given2
	}
	return Result{}, false, nil
}

// refuseAction records an execution-time refusal of a committed action.
func (g *Gate) refuseAction(ctx context.Context, j *job, code blackboard.Code, detail string) (Result, error) {
	dr, err := audit.Append(ctx, g.planner.gov, audit.Entry{TraceID: j.trace, Kind: j.e.action(), Subject: j.act.ID,
		Outcome: audit.OutcomeRefused, Code: code, Detail: detail, Context: j.cc})
	if err != nil {
		return Result{ActionID: j.act.ID}, err
	}
	root := kernel.Cause{Code: code, Record: j.act.ID, Detail: detail}
	return Result{Outcome: audit.OutcomeRefused, Code: code, RootCause: root, Hint: g.hint(ctx, j.e, code, root, ""),
		ActionID: j.act.ID, DecisionID: dr.ID}, nil
}

// checkApproval applies the latest approval decision for the action
// before its first attempt. done reports that res is the answer (waiting,
// escalated or refused); otherwise j.approval names the approval the
// first attempt consumes.
func (g *Gate) checkApproval(ctx context.Context, j *job) (res Result, done bool, err error) {
	var latest *blackboard.Record
	for r, err := range g.approvals(ctx, j.trace, j.act.ID) {
		if err != nil {
			return Result{ActionID: j.act.ID}, true, err
		}
		latest = &r
	}
	if latest == nil {
		digest, err := ArgsDigest(j.act.Payload)
		if err != nil {
			return Result{ActionID: j.act.ID}, true, err
		}
		return g.pending(ctx, j.e, j.act.ID, j.args, digest), true, nil
	}
	a, _ := audit.ApprovalOf(*latest)
	switch {
	case a.Decision != audit.Approved:
		res, err := g.escalate(ctx, j, CodeApprovalDenied, *latest)
		return res, true, err
	case latest.Expired(g.k.Now()):
		res, err := g.escalate(ctx, j, CodeApprovalExpired, *latest)
		if errors.Is(err, errSuperseded) && !j.superseded {
			// A person gave a new decision on the action between this
			// driver's read and its write: act on that one, once.
			j.superseded = true
			return g.checkApproval(ctx, j)
		}
		return res, true, err
	}
	want, err := ArgsDigest(j.act.Payload)
	if err != nil {
		return Result{ActionID: j.act.ID}, true, err
	}
	if a.Digest != want {
		// Approve binds the digest when it records the approval; this
		// holds unless the record was tampered with.
		res, err := g.refuseForGood(ctx, j, CodeApprovalMismatch, "approval "+a.ID+" binds digest "+a.Digest+", the action's is "+want)
		return res, true, err
	}
	if caller, _ := j.cc["caller"].(string); a.Approver == CallerWriter(caller) {
		// Approve refuses this; it holds unless the record was forged.
		res, err := g.refuseForGood(ctx, j, CodeApprovalMismatch, "approval "+a.ID+" is by the action's own proposer")
		return res, true, err
	}
	j.approval = a.ID
	return Result{}, false, nil
}

// errSuperseded: an escalation of an expired approval lost its write to
// a new decision that superseded the approval (it claimed the approval's
// use first), so the action is not escalated.
var errSuperseded = errors.New("toolgate: the expired approval was superseded by a new decision")

// escalate records that the action will not run and submits the safe
// fallback.
func (g *Gate) escalate(ctx context.Context, j *job, code blackboard.Code, approval blackboard.Record) (Result, error) {
	w, err := g.writeEscalation(ctx, j, code, approval)
	if err == nil {
		g.effectRecorded(ctx, j, StatusEscalated, code)
	}
	if errors.Is(err, blackboard.ErrDuplicateKey) {
		if code == CodeApprovalExpired {
			if _, ok, rerr := g.resultOf(ctx, j); rerr == nil && !ok {
				return Result{ActionID: j.act.ID}, errSuperseded
			}
		}
		return g.recordedByKey(ctx, j)
	}
	if err != nil {
		return Result{ActionID: j.act.ID}, err
	}
	return g.written(ctx, j, w)
}

// writeEscalation records the escalation as the action's result, claiming
// the result key, with its decision record in the same batch. An expired
// approval's escalation also claims the approval's use, the key a new
// decision superseding it claims too, so that of the two only one is
// written: never a fallback beside a fresh approval.
func (g *Gate) writeEscalation(ctx context.Context, j *job, code blackboard.Code, rec blackboard.Record) (wrote, error) {
	approval, _ := audit.ApprovalOf(rec)
	keys := []string{j.resultKey()}
	if code == CodeApprovalExpired && !mutEscalationClaimsApproval {
		keys = append(keys, approvalKey(rec.ID))
	}
	eff := j.effect(StatusEscalated, 0, code)
	eff.Approval, eff.Approver, eff.Note = approval.ID, approval.Approver, approval.Note
	cc := j.cc.Clone()
	cc["approver"] = approval.Approver
	return j.e.handle.Write(ctx, kernel.Entry{TraceID: j.trace, Slot: blackboard.Percepts, Kind: KindEscalated,
		Payload: eff.payload(), InputRefs: []string{j.act.ID, approval.ID}, OnceKeys: keys},
		func(rec blackboard.Record) audit.Entry {
			dr := audit.ForRecord(rec, j.e.action(), audit.OutcomeEscalated, code)
			dr.Approvals, dr.Context = []string{approval.ID}, cc
			return dr
		})
}

// refuseForGood records that the action will never run: a refusal that
// claims the result key (and any further keys given, in the same write),
// so that no later Execute or Recover starts it, with its decision record
// in the same write. When another driver took one of the keys first, its
// result, or its running attempt, wins.
func (g *Gate) refuseForGood(ctx context.Context, j *job, code blackboard.Code, detail string, keys ...string) (Result, error) {
	eff := j.effect(StatusRefused, 0, code)
	eff.Error = detail
	cc := j.cc.Clone()
	cc["error"] = detail
	w, err := j.e.handle.Write(ctx, kernel.Entry{TraceID: j.trace, Slot: blackboard.Percepts, Kind: KindFailed,
		Payload: eff.payload(), InputRefs: []string{j.act.ID}, OnceKeys: append([]string{j.resultKey()}, keys...)},
		func(rec blackboard.Record) audit.Entry {
			dr := audit.ForRecord(rec, j.e.action(), audit.OutcomeRefused, code)
			dr.Context = cc
			return dr
		})
	if errors.Is(err, blackboard.ErrDuplicateKey) {
		if _, done, rerr := g.resultOf(ctx, j); rerr == nil && !done && len(keys) > 0 {
			return g.run(ctx, j) // an attempt started first: drive it to its result
		}
		return g.recordedByKey(ctx, j)
	}
	if err != nil {
		return Result{ActionID: j.act.ID}, err
	}
	return g.written(ctx, j, w)
}

// ensureFallback returns the safe fallback that escalates the action,
// submitting it if it is missing (the first time, or after a crash between
// the escalation and the fallback).
func (g *Gate) ensureFallback(ctx context.Context, j *job, code blackboard.Code) (string, error) {
	if id, _, err := g.fallbackOf(ctx, j); err != nil || id != "" {
		return id, err
	}
	cc := j.cc.Clone()
	cc["escalates"], cc["reason"] = j.act.ID, string(code)
	d, _, err := g.planner.Submit(ctx, kernel.Entry{TraceID: j.trace, Slot: blackboard.Actions, Kind: g.fallback,
		Payload: blackboard.Payload{kernel.KeyReason: string(code), "escalates": j.act.ID, "tool": j.e.Name, kernel.KeyRequiresBeliefs: []string{}}},
		func(dr audit.Entry) audit.Entry { dr.Context = cc; return dr })
	if err != nil || !d.Committed() {
		return "", err // a fallback the kernel refuses leaves the escalation record as the trail
	}
	return d.CommittedID, nil
}

// fallbackOf returns the committed safe fallback that escalates the
// action ("" when there is none), and whether the gate ever proposed one.
func (g *Gate) fallbackOf(ctx context.Context, j *job) (id string, proposed bool, err error) {
	for r, err := range g.reader.Trace(ctx, j.trace) {
		if err != nil {
			return "", false, err
		}
		if r.Slot != blackboard.Actions || r.Kind != g.fallback || r.Payload["escalates"] != any(j.act.ID) {
			continue
		}
		if r.Mode == blackboard.ModeCommit {
			return r.ID, true, nil
		}
		proposed = proposed || r.Provenance.Writer == GateWriter
	}
	return "", proposed, nil
}

// resultOf returns the record holding the action's result, if there is
// one.
func (g *Gate) resultOf(ctx context.Context, j *job) (string, bool, error) {
	id, err := g.k.ClaimedBy(ctx, j.resultKey())
	if errors.Is(err, blackboard.ErrNotFound) {
		return "", false, nil
	}
	return id, err == nil, err
}

// recordedByKey returns the recorded result after a write lost the race
// for the result key.
func (g *Gate) recordedByKey(ctx context.Context, j *job) (Result, error) {
	id, ok, err := g.resultOf(ctx, j)
	if err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("toolgate: result key of %s claimed but not found", j.act.ID)
		}
		return Result{ActionID: j.act.ID}, err
	}
	return g.recorded(ctx, j, id)
}

// recorded turns the id of a result record written earlier (by another
// call, driver or process) into a Result, reading the result and its
// decision record by id; a driver that has just written the result uses
// what the write returned instead ([Gate.written]; finish knows the
// decision's id from the record it built), which reads nothing.
func (g *Gate) recorded(ctx context.Context, j *job, id string) (Result, error) {
	rec, err := g.reader.Get(ctx, id)
	if err != nil {
		return Result{ActionID: j.act.ID}, err
	}
	dr, _, err := g.decisionAbout(ctx, id)
	if err != nil {
		return Result{ActionID: j.act.ID}, err
	}
	return g.result(ctx, j, rec, dr.ID)
}

// written turns the result this driver has just written into a Result,
// from what the write returned: no read of the store.
func (g *Gate) written(ctx context.Context, j *job, w wrote) (Result, error) {
	return g.result(ctx, j, w.rec, decisionID(w))
}

// result turns the result record rec, whose decision record is
// decisionID, into a Result. rec is the caller's own copy, used no more:
// a success's payload becomes the Result's Output.
func (g *Gate) result(ctx context.Context, j *job, rec blackboard.Record, decisionID string) (res Result, err error) {
	res = Result{ActionID: j.act.ID, DecisionID: decisionID}
	eff := effectOf(rec)
	res.Code = eff.Code
	if err := g.retire(ctx, j, rec); err != nil {
		return res, err
	}
	switch rec.Kind {
	case KindEscalated:
		res.Outcome = audit.OutcomeRefused
		res.RootCause = kernel.Cause{Code: res.Code, Record: eff.Approval, Detail: eff.Note}
		res.Hint = g.hint(ctx, j.e, res.Code, res.RootCause, "")
		if res.FallbackID, err = g.ensureFallback(ctx, j, res.Code); err != nil {
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
		res.Hint = g.hint(ctx, j.e, res.Code, res.RootCause, "")
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

// lastAttempt returns the highest attempt number started for the job's
// key (0 when none) and its record; with upTo > 0 it looks no further.
func (g *Gate) lastAttempt(ctx context.Context, j *job, upTo int) (int, blackboard.Record, error) {
	n, id := 0, ""
	for next := 1; next <= maxProbe && (upTo == 0 || next <= upTo); next++ {
		holder, err := g.k.ClaimedBy(ctx, j.attemptKey(next))
		if errors.Is(err, blackboard.ErrNotFound) {
			break
		}
		if err != nil {
			return 0, blackboard.Record{}, err
		}
		n, id = next, holder
	}
	if n == 0 {
		return 0, blackboard.Record{}, nil
	}
	rec, err := g.reader.Get(ctx, id)
	return n, rec, err
}

// An attempt has one deadline, the lease_until_ms its record holds as the
// store recorded it. Its effect's context ends leaseMargin before that
// deadline, and no other driver takes the action over until leaseMargin
// after it: the gap between the two covers an effect that takes a moment
// to stop and clocks of two processes that differ a little. All three
// read the kernel's clock.
const maxLeaseMargin = 5 * time.Second

// leaseMargin is the margin for a lease: a tenth of it, at most
// maxLeaseMargin.
func leaseMargin(lease time.Duration) time.Duration { return min(lease/10, maxLeaseMargin) }

// leaseUntil returns the deadline recorded in an attempt.
func leaseUntil(att blackboard.Record) (time.Time, bool) {
	ms := effectOf(att).LeaseUntilMS
	if ms == 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}

// leaseOver reports whether the driver of an attempt has had its time: its
// recorded deadline plus the margin has passed (its effect has lost its
// context by then).
func (g *Gate) leaseOver(att blackboard.Record) bool {
	until, ok := leaseUntil(att)
	if !ok {
		return true
	}
	if !mutLeaseDeadline {
		until = until.Add(leaseMargin(g.lease))
	}
	return g.k.Now().After(until)
}

// effectTime is how long the effect of the attempt just recorded may run:
// up to leaseMargin before its recorded deadline, as the kernel's clock
// reads now, after the write.
func (g *Gate) effectTime(att blackboard.Record) time.Duration {
	until, ok := leaseUntil(att)
	if !ok {
		return 0
	}
	return until.Sub(g.k.Now()) - leaseMargin(g.lease)
}

// run drives the job to a result: it starts attempts (persisting each
// before the effect runs), retries retryable failures with backoff, waits
// for an attempt another driver holds, and records the outcome.
func (g *Gate) run(ctx context.Context, j *job) (Result, error) {
	pol := j.e.Retry
	mine := 0 // the attempt this driver started last
	var lastErr error
	wait := pollStart
	for {
		var n int
		var att blackboard.Record
		if !j.fresh {
			if id, ok, err := g.resultOf(ctx, j); err != nil {
				return Result{ActionID: j.act.ID}, err
			} else if ok {
				return g.recorded(ctx, j, id)
			}
			var err error
			if n, att, err = g.lastAttempt(ctx, j, 0); err != nil {
				return Result{ActionID: j.act.ID}, err
			}
		}
		j.fresh = false
		if n > 0 && n != mine && !g.leaseOver(att) {
			// Another driver holds attempt n: wait for its result, or for
			// its lease to run out.
			if err := pause.Sleep(ctx, jitter(wait)); err != nil {
				return Result{ActionID: j.act.ID}, err
			}
			wait = min(2*wait, pollMax)
			continue
		}
		if n > 0 && !(n == mine && lastErr != nil) && !j.e.redrivable() && !mutUnkeyedRedrive {
			// Attempt n began and nobody saw it fail: its effect may have
			// taken place, and nothing outside dedups a second start. The
			// outcome is unknown, for a person to settle; never run again.
			return g.unknown(ctx, j, n, att)
		}
		if n >= pol.MaxAttempts {
			detail := "attempt " + strconv.Itoa(n) + " left no result"
			if n == mine && lastErr != nil {
				detail = g.errorText(ctx, j, lastErr)
			}
			return g.finish(ctx, j, n, att, nil, CodeRetriesExhausted, detail)
		}
		if j.fn == nil && !mutCallerEffect {
			// A caller-driven tool's attempt n (begun and left by a
			// crashed caller: one whose effect may run again, or the
			// check above would have ended it EFFECT_UNKNOWN) or its
			// first: only the caller's retry, with the effect, starts it.
			return g.effectUnavailable(ctx, j), nil
		}
		if j.lostMasked() {
			// The store holds only the hashes of the masked arguments and
			// this driver was not given the real ones: never run the
			// effect with a hash. An attempt that began elsewhere is left
			// to a person; one not yet begun waits for Resume with them.
			if n > 0 {
				return g.unknown(ctx, j, n, att)
			}
			// Nothing is recorded: the action is unchanged, and Recover,
			// which comes back to it on every pass, adds no record.
			root := kernel.Cause{Code: CodeMaskedUnavailable, Record: j.act.ID,
				Detail: "the masked fields " + quote(strings.Join(j.e.Masked, ", ")) + " are not stored; Resume the call with its arguments"}
			return Result{Outcome: audit.OutcomeRefused, Code: CodeMaskedUnavailable, RootCause: root, ActionID: j.act.ID,
				Hint: g.hint(ctx, j.e, CodeMaskedUnavailable, root, "")}, nil
		}
		if j.approval == "" && n > 0 {
			j.approval = effectOf(att).Approval
		}
		actx, asp := g.tracer.Start(ctx, "toolgate.effect_attempt")
		rec, err := g.startAttempt(actx, j, n+1, att, lastErr)
		if err != nil {
			endAttempt(asp, j, n+1, err)
		}
		if errors.Is(err, blackboard.ErrDuplicateKey) {
			if _, err := g.k.ClaimedBy(ctx, j.attemptKey(n+1)); errors.Is(err, blackboard.ErrNotFound) {
				// Not the attempt but the approval was taken: it was
				// consumed already, by another action's attempt.
				return g.refuseAction(ctx, j, CodeApprovalRequired, "approval "+j.approval+" was already used")
			}
			continue // another driver started attempt n+1
		}
		if err != nil {
			return Result{ActionID: j.act.ID}, err
		}
		mine, att = n+1, rec
		g.attemptStarted(ctx, j)
		var out blackboard.Payload
		var effErr error
		if left, margin := g.effectTime(rec), leaseMargin(g.lease); !mutLeaseLeft && left < margin {
			// The write took most of the lease: an effect started now
			// would lose its context at once. The attempt counts as
			// used; the next one gets a lease of its own.
			effErr = Recordable(Retryable(fmt.Errorf("the attempt's write left %v of its lease, less than the margin %v: the effect was not started", left, margin)))
		} else {
			out, effErr = g.invoke(actx, j, mine, left)
		}
		endAttempt(asp, j, mine, effErr)
		if effErr == nil {
			if j.e.Expect != nil {
				if _, err := failure.Evaluate(out, *j.e.Expect); err != nil {
					j.failure = failure.Classify(err)
					return g.finish(ctx, j, mine, rec, nil, CodeEffectIncomplete, j.failure.Message())
				}
			}
			return g.finish(ctx, j, mine, rec, out, CodeEffectSucceeded, "")
		}
		if p := (*errPanicked)(nil); errors.As(effErr, &p) && !mutPanicFailed {
			// The effect may have acted before it panicked (the money
			// moved, then building its output blew up): its outcome is
			// unknown, never "failed".
			g.logPanic(ctx, j, mine, p)
			return g.panicked(ctx, j, mine, rec)
		}
		j.failure = typedFailure(effErr)
		if err := ctx.Err(); err != nil {
			// The attempt stays without a result; once its lease is over,
			// Recover (or another Execute) starts the next, with the same key.
			return Result{ActionID: j.act.ID}, err
		}
		if past := (errRanPastLease{}); errors.As(effErr, &past) {
			return g.unknown(ctx, j, mine, rec)
		}
		if !isRetryable(effErr) {
			return g.finish(ctx, j, mine, rec, nil, CodeEffectFailed, g.errorText(ctx, j, effErr))
		}
		if mine >= pol.MaxAttempts {
			return g.finish(ctx, j, mine, rec, nil, CodeRetriesExhausted, g.errorText(ctx, j, effErr))
		}
		lastErr = effErr
		if err := pause.Sleep(ctx, backoff(pol, mine)); err != nil {
			return Result{ActionID: j.act.ID}, err
		}
	}
}

// startAttempt persists attempt n before its effect runs: a percept
// claiming the attempt's once-key (and, for the first attempt of an
// approved action, the approval's) in the same write, so that no two
// drivers start the same attempt and no approval is used twice.
func (g *Gate) startAttempt(ctx context.Context, j *job, n int, prev blackboard.Record, prevErr error) (blackboard.Record, error) {
	eff := j.effect(StatusAttempted, n, "")
	eff.LeaseUntilMS = g.k.Now().Add(g.lease).UnixMilli()
	refs := make([]string, 1, 3)
	refs[0] = j.act.ID
	keys := []string{j.attemptKey(n)}
	if prev.ID != "" {
		refs = append(refs, prev.ID)
		if prevErr != nil {
			eff.PreviousError = g.errorText(ctx, j, prevErr)
		}
	}
	if n == 1 && j.approval != "" {
		refs = append(refs, j.approval)
		keys = append(keys, approvalKey(j.approval))
	}
	w, err := j.e.handle.Write(ctx, kernel.Entry{TraceID: j.trace, Slot: blackboard.Percepts, Kind: KindAttempt,
		Payload: eff.payloadBoxed(&j.boxes), InputRefs: refs, OnceKeys: keys}, nil)
	return w.rec, err
}

// invoke calls the effect for attempt n, with a context that ends after
// left (see effectTime). A panic is recovered as an [errPanicked], with
// its stack: run records its outcome as unknown. Running out of the lease
// is a failure a retry may fix.
func (g *Gate) invoke(ctx context.Context, j *job, n int, left time.Duration) (out blackboard.Payload, err error) {
	if mutLeaseDeadline {
		left = g.lease // a full lease from after the write
	}
	ectx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			if mutPanicFailed {
				out, err = nil, fmt.Errorf("effect panicked: %v", r)
				return
			}
			out, err = nil, &errPanicked{value: r, stack: debug.Stack()}
		}
	}()
	inv := Invocation{Key: j.key, Tool: j.e.Name, ActionID: j.act.ID, TraceID: j.trace, Attempt: n, Args: j.effectArgs()}
	out, err = j.fn(context.WithValue(ectx, invocationKey{}, inv), inv)
	if err != nil && ctx.Err() == nil && errors.Is(ectx.Err(), context.DeadlineExceeded) && !isRetryable(err) {
		if !j.e.redrivable() && !mutUnkeyedRedrive {
			// It may have acted before its context ended; a retry could
			// act twice.
			return nil, errRanPastLease{err}
		}
		err = Retryable(fmt.Errorf("effect ran past its lease: %w", err))
	}
	return out, err
}

// effectUnavailable is the answer for an action of a caller-driven tool
// that was to start without the caller's effect: nothing is recorded, so
// its approval, once-key and retry key stay for the caller's retry, and
// Recover, which comes back to it on every pass, adds no record.
func (g *Gate) effectUnavailable(ctx context.Context, j *job) Result {
	root := kernel.Cause{Code: CodeEffectUnavailable, Record: j.act.ID,
		Detail: quote(j.e.Name) + " is caller-driven: its caller runs it, by calling it again under the same retry key with its effect"}
	return Result{Outcome: audit.OutcomeRefused, Code: CodeEffectUnavailable, RootCause: root, ActionID: j.act.ID,
		Hint: g.hint(ctx, j.e, CodeEffectUnavailable, root, "")}
}

// errRanPastLease is the error of an effect without a key the world
// honours that failed after its context ran out: whether it acted is
// unknown.
type errRanPastLease struct{ err error }

func (e errRanPastLease) Error() string { return "effect ran past its lease: " + e.err.Error() }
func (e errRanPastLease) Unwrap() error { return e.err }

// unknown records that attempt n of an effect that may run at most once
// began and left no result this driver saw: whether it took effect is
// unknown. The record claims the result key, so nothing starts the effect
// again; a person settles it.
func (g *Gate) unknown(ctx context.Context, j *job, n int, att blackboard.Record) (Result, error) {
	detail := "attempt " + strconv.Itoa(n) + " began and left no result; " + quote(j.e.Name) +
		" has no once-key and is not Idempotent, so it is not started again: check whether it took effect"
	j.failure = failure.New(failure.StatusUnknown, string(CodeEffectUnknown)+": "+detail).WithRetryable(false)
	return g.finish(ctx, j, n, att, nil, CodeEffectUnknown, detail)
}

// panicked records that the effect of attempt n panicked: it may have
// acted first, so the outcome is EFFECT_UNKNOWN (typed FAILED_UNKNOWN,
// not retryable), the result key is claimed and the action keeps its
// once-key, so that nothing starts the effect again and a person settles
// it. The record holds no word of the panic's value: the operator's log
// has it, with the stack ([Gate.logPanic]).
func (g *Gate) panicked(ctx context.Context, j *job, n int, att blackboard.Record) (Result, error) {
	detail := "attempt " + strconv.Itoa(n) + " panicked; it may have taken effect before it did, so " + quote(j.e.Name) +
		" is not started again: check whether it took effect"
	j.failure = failure.New(failure.StatusUnknown, string(CodeEffectUnknown)+": "+detail).WithRetryable(false)
	return g.finish(ctx, j, n, att, nil, CodeEffectUnknown, detail)
}

// finish records the job's result, claiming the result key, with its
// decision record in the same write: a success under the tool's result
// kind (the output at the top level), anything else as a failure. A
// result another driver recorded first wins and is returned.
func (g *Gate) finish(ctx context.Context, j *job, n int, att blackboard.Record, out blackboard.Payload, code blackboard.Code, detail string) (Result, error) {
	refs := make([]string, 1, 2)
	refs[0] = j.act.ID
	if att.ID != "" {
		refs = append(refs, att.ID)
	}
	var approvals []string
	if j.approval != "" {
		approvals = []string{j.approval}
	}
	entry := kernel.Entry{TraceID: j.trace, Slot: blackboard.Percepts, InputRefs: refs, OnceKeys: []string{j.resultKey()}}
	// The record's context is the call's, with top-level keys added: a
	// shallow copy leaves j.cc as it was (the kernel copies what it stores).
	dr := audit.Entry{Kind: j.e.action(), Approvals: approvals, Context: maps.Clone(j.cc)}
	dr.Context["attempt"] = countValue(n)
	if code == CodeEffectSucceeded {
		if _, reserved := out[KeyEffect]; reserved {
			return g.finish(ctx, j, n, att, nil, CodeOutputInvalid, "the output uses the reserved key "+quote(KeyEffect))
		}
		payload, err := g.mask.payload(ctx, j.trace, out.Clone(), j.e.Masked)
		if err != nil {
			return g.finish(ctx, j, n, att, nil, CodeOutputInvalid, "the output cannot be masked: a masked field is not a JSON value")
		}
		if payload == nil {
			payload = blackboard.Payload{}
		}
		payload[KeyEffect] = j.effect(StatusSucceeded, n, code).encodeBoxed(&j.boxes)
		entry.Kind, entry.Payload, entry.TTL = j.e.resultKind(), payload, j.e.ResultTTL
		dr.Outcome, dr.Code = audit.OutcomeExecuted, code
	} else {
		eff := j.effect(StatusFailed, n, code)
		eff.Error = detail
		dr.Context["error"] = detail
		if f := j.failure; !f.IsZero() {
			eff.ExecutionStatus, eff.Category, eff.Retryable = f.Status(), f.Category(), f.Retryable()
			dr.Context[failure.KeyStatus], dr.Context[failure.KeyCategory] = string(f.Status()), string(f.Category())
		}
		entry.Kind, entry.Payload = KindFailed, eff.payloadBoxed(&j.boxes)
		dr.Outcome, dr.Code = audit.OutcomeFailed, code
	}
	w, err := j.e.handle.Write(ctx, entry, func(rec blackboard.Record) audit.Entry {
		r := audit.ForRecord(rec, dr.Kind, dr.Outcome, dr.Code)
		r.Approvals, r.Context = dr.Approvals, dr.Context
		dr.ID = r.ID // the decision's id, for the Result
		return r
	})
	if err == nil {
		status := StatusSucceeded
		if code != CodeEffectSucceeded {
			status = StatusFailed
		}
		g.effectRecorded(ctx, j, status, code)
	}
	switch {
	case errors.Is(err, blackboard.ErrDuplicateKey):
		return g.recordedByKey(ctx, j)
	case code == CodeEffectSucceeded && (errors.Is(err, blackboard.ErrInvalidPayload) || errors.Is(err, kernel.ErrPayloadTooLarge)):
		return g.finish(ctx, j, n, att, nil, CodeOutputInvalid, outputProblem(err))
	case err != nil:
		return Result{ActionID: j.act.ID}, err
	}
	res, err := g.result(ctx, j, w.rec, dr.ID)
	if err == nil && code == CodeEffectSucceeded {
		// Derived beliefs rest on the output as stored (masked); the
		// caller gets its real values.
		res.Derived, err = g.derive(ctx, j, w.ID, res.Output)
		if len(j.e.Masked) > 0 && !mutMaskStore {
			res.stored, res.Output = res.Output, out.Clone()
		}
	}
	return res, err
}

// outputProblem words why an output cannot be recorded, without the
// store's words, which may quote a value of it.
func outputProblem(err error) string {
	if errors.Is(err, kernel.ErrPayloadTooLarge) {
		return "the output cannot be recorded: it is over the store's size limit"
	}
	return "the output cannot be recorded: it is not a JSON value the store keeps"
}

// backoff is the wait after attempt n failed: Backoff doubled n-1 times,
// capped at MaxBackoff, drawn from its upper half.
func backoff(p RetryPolicy, n int) time.Duration {
	d := p.Backoff
	for i := 1; i < n && d < p.MaxBackoff; i++ {
		d *= 2
	}
	return jitter(min(d, p.MaxBackoff))
}

// jitter draws a wait from [d/2, d].
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d-d/2+1)
}

// effectArgs are the arguments an effect is called with: a copy of the
// committed ones, with the real values of masked fields.
func (j *job) effectArgs() blackboard.Payload {
	if j.real != nil {
		return unmasked(j.args, j.real, j.e.Masked)
	}
	return j.args.Clone()
}

// lostMasked reports whether the committed arguments hold a masked value
// whose real value this job does not have.
func (j *job) lostMasked() bool {
	for _, f := range j.e.Masked {
		if !IsMasked(j.args[f]) {
			continue
		}
		if v, ok := j.real[f]; !ok || IsMasked(v) {
			return true // a hash given back is no real value
		}
	}
	return false
}

// maskedGiven is the masked fields of arguments given to run that hold a
// real value: one already masked (copied from the store) is compared as
// it is, and leaves the job without the real value.
func (e *entry) maskedGiven(given blackboard.Payload) []string {
	var out []string
	for _, f := range e.Masked {
		if v, has := given[f]; has && !IsMasked(v) {
			out = append(out, f)
		}
	}
	return out
}

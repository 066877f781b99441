package toolgate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"

	"go.opentelemetry.io/otel/trace"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// Spec is a tool as a model is shown it: the shape of OpenAI-compatible
// function tools, MCP tools and most frameworks' tool declarations.
type Spec struct {
	Name        string          `json:"name"`                  // the tool's name
	Description string          `json:"description,omitempty"` // what it does, for the model
	Parameters  json.RawMessage `json:"parameters,omitempty"`  // a JSON Schema object
}

// Call is one tool call an agent's model made, as the agent loop hands it
// to the gate.
type Call struct {
	// ID is the framework's call id, when it has one; it is recorded in
	// the decision record and on the call's span.
	ID string `json:"id,omitempty"`
	// RetryKey, when set, makes the call idempotent in its trace (the
	// gate's namespace and TraceID scope it): the first call the kernel
	// decides under the key claims it in the same write as the decision,
	// binding it to the tool, the caller and the arguments' digest, and a
	// later call with the same key, from any process, gets that call's
	// decision and result instead of a new action (see [Gate.Call]). A
	// call under a used key with another tool, caller or arguments is
	// refused with RETRY_KEY_CONFLICT. An adapter sets it to the
	// framework's call id where the framework may deliver one call twice
	// (a retried request, a resumed run); a model's own tool-call ids are
	// no such key: models repeat them across turns.
	RetryKey string `json:"retry_key,omitempty"`
	// Tool is the tool's name as the model called it.
	Tool string `json:"tool"`
	// Args are the model's arguments: a JSON object.
	Args json.RawMessage `json:"args"`
	// Caller names the calling worker's contract.
	Caller string `json:"caller"`
	// TraceID is the episode the call belongs to.
	TraceID string `json:"trace_id"`
	// Principal, when set, is who the call is made for, as the framework
	// authenticated them (an adapter sets it from the session's user,
	// never from anything the model says). In a trace with a recorded
	// request ([Gate.RecordRequest]) a call for any other principal is
	// refused with OUT_OF_SCOPE, whatever the tool.
	Principal string `json:"principal,omitempty"`
	// Intent, when set, names the intent the call serves; with intents
	// configured, a call must name one that allows the tool.
	Intent string `json:"intent,omitempty"`
	// Budget, when set, is the run the call is charged to before anything
	// else is checked (after Guard): its tool-call budget. It adds to the
	// gate's [Config.Budget], never replaces it: every limit of both
	// applies. A sub-agent lane passes its own sub-run of the gate's run
	// ([budget.Run.Sub]) here. It is not encoded.
	Budget *budget.Run `json:"-"`
	// Guard, when set, is the loop guard asked first of all: the same
	// tool with the same arguments too often is LOOP_DETECTED. It adds to
	// the gate's [Config.Guard]. A sub-agent lane passes its own. It is
	// not encoded.
	Guard *budget.Guard `json:"-"`
	// Effect, when set, runs the call's action in place of the tool's
	// [Tool.Effect]: an adapter wraps the framework's own tool in it.
	// A caller-driven tool (one with no Effect) needs it: a call without
	// it is refused with EFFECT_UNAVAILABLE before anything is recorded.
	// It serves this call only, and a later call under the same
	// [Call.RetryKey] that carries it (how an adapter resumes after an
	// approval, or after a crash): [Gate.Execute], [Gate.Recover] and
	// [Approver.Resolve] never have it. It is not encoded.
	Effect EffectFunc `json:"-"`
	// Context, when set, is the record id of the compiled context the
	// model was shown when it made the call (an evidence record of kind
	// [audit.KindCompiledContext] in the call's trace). It is the caller's
	// claim, and the gate checks it before anything else is recorded: a
	// call naming anything else is refused with CONTEXT_INVALID. A valid
	// one is recorded under "context" in every decision record of the
	// call and on its span (bk.context).
	Context string `json:"context,omitempty"`

	span trace.Span // the call's own span, nil when tracing is off
}

// Result is the gate's answer to a call. It is a value for the agent loop,
// not an error: a refusal goes back to the model as the tool's result.
type Result struct {
	// Outcome says what the gate did with the call.
	Outcome audit.Outcome `json:"outcome"`
	// Code is the typed reason: the refusal's code (the gate's or the
	// kernel's), APPROVAL_REQUIRED while the action waits for approval,
	// EFFECT_SUCCEEDED once the effect ran, or the failure's code.
	Code reason.Code `json:"code"`
	// RootCause is the deepest cause of a refusal or a failure.
	RootCause kernel.Cause `json:"root_cause,omitzero"`
	// Hint is a short repair hint written for the model.
	Hint string `json:"hint,omitempty"`
	// ActionID is the committed action, when there is one: for a call
	// waiting for approval, what an approver approves.
	ActionID string `json:"action_id,omitempty"`
	// ArgsDigest is the [ArgsDigest] of the committed arguments, which an
	// approval binds; set while the action waits for approval
	// ([audit.OutcomePendingApproval]).
	ArgsDigest string `json:"args_digest,omitempty"`
	// Args are the committed action's arguments, as the approver is
	// asked to approve them and [Gate.Resume] must be given them; set
	// with ArgsDigest. The caller's copy. A masked field ([Tool.Masked])
	// holds its real value here, and its hash in the store and in
	// ArgsDigest.
	Args blackboard.Payload `json:"args,omitempty"`
	// DecisionID identifies the latest decision record of the call: the
	// refusal, the commit (pending approval), the result or the
	// escalation.
	DecisionID string `json:"decision_id,omitempty"`
	// Receipt is the chain link (package chain) of the last decision
	// record (kind audit.Kind) the call appended, as the store recorded
	// it: proof, against the store or an exported evidence bundle, that
	// this decision, and everything its trace held before it, is in the
	// history as it was made (`bk explain` prints a record's link; `bk
	// verify` checks them). Zero when the store keeps no chain or the
	// call appended no decision record (it handed back an earlier one).
	Receipt chain.Hash `json:"receipt,omitzero"`
	// Output is the effect's result, when it ran and succeeded. For a
	// Failed call whose failure is typed, it is the typed signal instead
	// (execution_status, category, error, retryable; see
	// failure.Failure.Payload), which [Result.Failure] reads back.
	Output blackboard.Payload `json:"output,omitempty"`
	// FallbackID is the safe fallback action the gate committed instead
	// of a call whose approval was denied or expired.
	FallbackID string `json:"fallback_id,omitempty"`
	// Derived says what became of each belief the tool's result derives
	// ([Tool.Derives]), in declaration order, on the call that recorded
	// the result.
	Derived []Derived `json:"derived,omitempty"`

	// refusal is the budget's refusal behind a BUDGET_EXCEEDED or
	// LOOP_DETECTED result, kept for [Result.Failure].
	refusal error
	// stored is the output as the store holds it, when Output holds the
	// real values of masked fields ([Result.ForRecord]); nil when Output
	// is what the store holds.
	stored blackboard.Payload
}

// retryOnceKey is the once-key that binds a retry key in a trace. The
// kernel keeps each namespace's keys apart; the trace cannot hold a NUL
// (see checkTrace), so no trace and key spell another pair's once-key.
func retryOnceKey(traceID, retryKey string) string {
	sum := sha256.Sum256([]byte(traceID + "\x00" + retryKey))
	return "toolgate/retry/" + hex.EncodeToString(sum[:])
}

// replay answers a call whose retry key was used before in its trace,
// from what the store holds: done is false when the key is free. The
// holder of the key's once-key is the committed action, or the proposal
// the kernel refused. A call that differs from the one that used the key
// (tool, caller or arguments) is refused with RETRY_KEY_CONFLICT and
// learns nothing of it.
func (x *executor) replay(ctx context.Context, c Call, e *entry, cc blackboard.Payload) (res Result, done bool, err error) {
	holder, err := x.gov.ClaimedBy(ctx, retryOnceKey(c.TraceID, c.RetryKey))
	if errors.Is(err, blackboard.ErrNotFound) {
		return Result{}, false, nil
	}
	if err != nil {
		return Result{}, true, err
	}
	var d audit.Entry
	var act blackboard.Record
	committed := false
	if holderRec, err := x.reader.Get(ctx, holder); err != nil {
		return Result{}, true, err
	} else if holderRec.Slot == blackboard.Actions && holderRec.Mode == blackboard.ModeCommit {
		act2, e2, gd, err := x.gated(ctx, holder)
		if err != nil {
			return Result{}, true, err
		}
		if e2 != e {
			return x.conflict(ctx, c, e, cc, "it named tool "+quote(e2.Name))
		}
		act, d, committed = act2, gd, true
	} else if d, err = audit.About(ctx, x.reader, holder); err != nil {
		return Result{}, true, err
	}
	if res, refused, err := x.sameCall(ctx, c, e, cc, d); refused || err != nil {
		return res, true, err
	}
	if !committed {
		dec := kernel.Decision{Code: d.Code, Rule: d.Rule, Failed: d.Failed, Detail: d.Detail, Causes: d.Causes}
		root := dec.RootCause()
		return Result{Outcome: audit.OutcomeRefused, Code: d.Code, RootCause: root, Hint: x.hint(ctx, e, d.Code, root, ""), DecisionID: d.ID}, true, nil
	}
	// The recorded result, if there is one; an attempt another driver
	// holds says the call is running; anything else (waiting for its
	// approval, approved, left by a crashed driver) continues as
	// [Gate.Execute] would, exactly once.
	j, err := x.newJob(ctx, e, act, d.Context)
	if err != nil {
		return Result{ActionID: act.ID}, true, err
	}
	if id, ok, err := x.resultOf(ctx, j); err != nil || ok {
		if err != nil {
			return Result{ActionID: act.ID}, true, err
		}
		res, err := x.recorded(ctx, j, id)
		return res, true, err
	}
	n, att, err := x.lastAttempt(ctx, j, 0)
	if err != nil {
		return Result{ActionID: act.ID}, true, err
	}
	if n > 0 && !x.leaseOver(att) {
		return Result{Outcome: audit.OutcomeCommitted, Code: reason.CallRunning, ActionID: act.ID, DecisionID: d.ID,
			Hint: x.hint(ctx, e, reason.CallRunning, kernel.Cause{}, "")}, true, nil
	}
	var given json.RawMessage
	if len(e.Masked) > 0 {
		// The store holds only the masked values; the call in hand has
		// the real ones, and sameCall found them equal to the first's.
		given = c.Args
	}
	res, err = x.executeAction(ctx, e, act, d, given, c.Effect)
	return res, true, err
}

// sameCall refuses a call that is not the one that used its retry key:
// the key is bound to the tool, the caller and the arguments' digest that
// the decision record d of the first call holds.
func (x *executor) sameCall(ctx context.Context, c Call, e *entry, cc blackboard.Payload, d audit.Entry) (Result, bool, error) {
	if !retryKeyBound() {
		return Result{}, false, nil
	}
	tool, _ := d.Context["tool"].(string)
	caller, _ := d.Context["caller"].(string)
	digest, _ := d.Context["args_digest"].(string)
	switch {
	case e == nil || tool != e.Name:
		res, _, err := x.conflict(ctx, c, e, cc, "it named tool "+quote(tool))
		return res, true, err
	case caller != c.Caller:
		res, _, err := x.conflict(ctx, c, e, cc, "another caller made it")
		return res, true, err
	}
	args, prob := e.schema.check(c.Args)
	got := ""
	if prob == nil {
		// The first call's digest is of its masked arguments.
		masked, err := x.g.mask.payload(ctx, c.TraceID, args, e.Masked)
		if keyFailed(err) {
			return Result{}, true, err
		}
		if err == nil {
			got, _ = ArgsDigest(masked)
		}
	}
	if got == "" || got != digest {
		res, _, err := x.conflict(ctx, c, e, cc, "its arguments differ")
		return res, true, err
	}
	return Result{}, false, nil
}

// conflict refuses a call that reuses the retry key of another call.
func (x *executor) conflict(ctx context.Context, c Call, e *entry, cc blackboard.Payload, why string) (Result, bool, error) {
	res, err := x.refuse(ctx, c.TraceID, e, toolLabel(c.Tool), reason.RetryKeyConflict,
		"the retry key "+quote(clip(c.RetryKey))+" was used in this trace for another call: "+why, withRawArgs(cc, c, e))
	return res, true, err
}

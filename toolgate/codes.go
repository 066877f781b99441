package toolgate

import (
	"errors"

	"github.com/blackboardkernel/bk/blackboard"
)

// Codes the gate adds to the kernel's. A refusal by the kernel's pipeline
// keeps the kernel's code (STALE_EVIDENCE, DUPLICATE_ACTION, a rule's
// RULE_VIOLATED, ...); these are the gate's own. Like the kernel's they
// are stable strings: compare them with ==.
const (
	// CodeToolUnknown: the call names no registered tool. Checked first.
	CodeToolUnknown = blackboard.Code("TOOL_UNKNOWN")
	// CodeToolNotPermitted: the caller's contract does not list the
	// tool (or the caller has no contract). Check 1, permission level.
	CodeToolNotPermitted = blackboard.Code("TOOL_NOT_PERMITTED")
	// CodeToolNotForIntent: intents are configured and the call names no
	// intent, an unknown one, or one that does not list the tool. Check 2,
	// rule level.
	CodeToolNotForIntent = blackboard.Code("TOOL_NOT_FOR_INTENT")
	// CodeInvalidArguments: the arguments are not a JSON object, do not
	// fit the tool's JSON Schema (a missing required property, a wrong
	// type, a value outside its enum, bounds or pattern, a property the
	// schema forbids, ...), or use a key the kernel reserves
	// (requires_beliefs, type, the derived flags).
	CodeInvalidArguments = blackboard.Code("INVALID_ARGUMENTS")
	// CodeArgumentNotBound: an argument does not follow from the
	// observation the call's grounding rests on, as the tool's
	// [Binding] says it must (a refund of another order than the one the
	// refund_due belief rests on, or of more than its amount), or the
	// binding cannot be evaluated. The root cause names the percept; the
	// decision record's context the argument and the percept.
	CodeArgumentNotBound = blackboard.Code("ARGUMENT_NOT_BOUND")
	// CodeOutOfScope: the call is not within the request its trace serves
	// ([Gate.RecordRequest]): an argument the tool's [Tool.Scope] ties to
	// the request names another resource (a refund of another order than
	// the ticket's), or another principal; the trace has no request
	// recorded and the tool is scoped; or the call is made for another
	// principal than the request's ([Call.Principal]). The decision
	// record's context names the request record and its principal.
	CodeOutOfScope = blackboard.Code("OUT_OF_SCOPE")

	// CodeApprovalRequired: the action committed, but its policy needs an
	// approval and no approver has decided yet. It comes with the
	// [audit.OutcomePendingApproval] outcome, not a refusal.
	CodeApprovalRequired = blackboard.Code("APPROVAL_REQUIRED")
	// CodeApprovalDenied: the latest approval decision denied the action;
	// the gate took the safe fallback instead.
	CodeApprovalDenied = blackboard.Code("APPROVAL_DENIED")
	// CodeApprovalExpired: the latest approval ran out before the action
	// started; the gate took the safe fallback instead.
	CodeApprovalExpired = blackboard.Code("APPROVAL_EXPIRED")
	// CodeApprovalMismatch: the approval does not bind these arguments:
	// the arguments about to run (given to [Gate.Resume]) differ from the
	// approved ones. A changed argument needs a new call and a new
	// approval.
	CodeApprovalMismatch = blackboard.Code("APPROVAL_MISMATCH")
	// CodeArgumentsChanged: [Gate.Resume] was given arguments that differ
	// from the committed action's, for an action that needs no approval.
	CodeArgumentsChanged = blackboard.Code("ARGUMENTS_CHANGED")

	// CodeRetryKeyConflict: the call's retry key ([Call.RetryKey]) was
	// used in its trace by another call: another tool, caller or
	// arguments. The key is bound to the call that used it first; a new
	// call needs a new key.
	CodeRetryKeyConflict = blackboard.Code("RETRY_KEY_CONFLICT")
	// CodeCallRunning: a call with the same retry key ([Call.RetryKey]) committed its
	// action and another driver is running its effect now. It comes with
	// the [audit.OutcomeCommitted] outcome, not a refusal: the result is
	// not known yet.
	CodeCallRunning = blackboard.Code("CALL_RUNNING")

	// CodeEffectSucceeded: the effect ran and returned its output.
	CodeEffectSucceeded = blackboard.Code("EFFECT_SUCCEEDED")
	// CodeEffectFailed: the effect returned an error retrying cannot fix
	// (one not marked with [Retryable]), or panicked.
	CodeEffectFailed = blackboard.Code("EFFECT_FAILED")
	// CodeRetriesExhausted: every attempt the tool's [RetryPolicy] allows
	// failed with a retryable error, or was left without a result by a
	// crashed driver.
	CodeRetriesExhausted = blackboard.Code("EFFECT_RETRIES_EXHAUSTED")
	// CodeOutputInvalid: the effect succeeded but its output cannot be
	// recorded (not JSON-encodable, too large, or using the reserved key
	// "effect"). The effect is not run again.
	CodeOutputInvalid = blackboard.Code("EFFECT_OUTPUT_INVALID")
	// CodeEffectUnknown: an attempt of an effect that may run at most once
	// (its tool has no once-key and is not [Tool.Idempotent]) began and
	// left no result: its driver crashed, gave up, or the effect failed
	// after its lease ran out. It may or may not have taken effect, so the
	// gate does not start it again; a person checks the external system.
	// Its typed failure is FAILED_UNKNOWN, not retryable.
	CodeEffectUnknown = blackboard.Code("EFFECT_UNKNOWN")
	// CodeMaskedUnavailable: a committed action of a tool with masked
	// fields ([Tool.Masked]) was to start its effect without the real
	// values, which the store never holds (Execute after approval, Recover
	// after a crash): nothing ran and nothing is recorded. [Gate.Resume]
	// with the arguments runs it.
	CodeMaskedUnavailable = blackboard.Code("MASKED_UNAVAILABLE")
	// CodeEffectUnavailable: an action of a caller-driven tool (one with
	// no [Tool.Effect]) was to start without the caller's effect
	// ([Call.Effect]): by [Gate.Execute], [Gate.Recover] or
	// [Approver.Resolve], or by a call that brought none. Nothing ran and
	// nothing is recorded: its approval, once-key and retry key stay as
	// they were, and the caller's next call under the same
	// [Call.RetryKey], with the effect, runs it.
	CodeEffectUnavailable = blackboard.Code("EFFECT_UNAVAILABLE")
)

// Sentinel errors. Errors from [New] and from the gate's methods wrap one
// of these (or a kernel sentinel, for store failures) for errors.Is. A
// refusal is never an error: it is a [Result].
var (
	// ErrInvalidTool: New was given a tool it cannot accept (a name that
	// is not one, a duplicate, a bad parameters schema or one
	// [Func] could not make, an uncompilable approval or derivation rule, a bad retry policy, bad bindings, a
	// tool resting on beliefs that declares neither Bindings nor Unbound, bad scope, or an effectful tool
	// that declares neither Scope nor Unscoped), or a tool that can never
	// work (see [New]).
	ErrInvalidTool = errors.New("toolgate: invalid tool")
	// ErrInvalidConfig: a bad contract or intent (no name, a
	// duplicate, a tool that is not registered), a bad lease or mask key,
	// a kernel configuration the kernel refuses, a tool's action type also
	// given as a kernel action spec ([Config.Kernel]; the gate registers
	// its tools' types itself), or a fallback that is not a registered
	// safe fallback, or is a tool's.
	ErrInvalidConfig = errors.New("toolgate: invalid configuration")
	// ErrInvalidCall: a call the gate cannot even record (no valid trace
	// id), or a [Gate.Surface] for a caller with no contract or an intent
	// that is not configured.
	ErrInvalidCall = errors.New("toolgate: invalid call")
	// ErrUnknownAction: [Gate.Execute] or [Gate.Resume] was given an id
	// that is not a committed action the gate proposed for one of its
	// tools (in that trace).
	ErrUnknownAction = errors.New("toolgate: not an action of the gate")
)

package reason

// The codes of the tool-call gate (package toolgate). A refusal by the
// kernel's pipeline keeps the kernel's code (STALE_EVIDENCE,
// DUPLICATE_ACTION, a rule's RULE_VIOLATED, ...); these are the gate's own.
const (
	// ToolUnknown: the call names no registered tool. Checked first.
	ToolUnknown = Code("TOOL_UNKNOWN")
	// ToolNotPermitted: the caller's contract does not list the
	// tool (or the caller has no contract). Check 1, permission level.
	ToolNotPermitted = Code("TOOL_NOT_PERMITTED")
	// ToolNotForIntent: intents are configured and the call names no
	// intent, an unknown one, or one that does not list the tool. Check 2,
	// rule level.
	ToolNotForIntent = Code("TOOL_NOT_FOR_INTENT")
	// InvalidArguments: the arguments are not a JSON object, do not
	// fit the tool's JSON Schema (a missing required property, a wrong
	// type, a value outside its enum, bounds or pattern, a property the
	// schema forbids, ...), or use a key the kernel reserves
	// (requires_beliefs, type, the derived flags).
	InvalidArguments = Code("INVALID_ARGUMENTS")
	// ArgumentNotBound: an argument does not follow from the
	// observation the call's grounding rests on, as the tool's
	// toolgate.Binding says it must (a refund of another order than the one the
	// refund_due belief rests on, or of more than its amount), or the
	// binding cannot be evaluated. The root cause names the percept; the
	// decision record's context the argument and the percept.
	ArgumentNotBound = Code("ARGUMENT_NOT_BOUND")
	// OutOfScope: the call is not within the request its trace serves
	// (toolgate.Gate.RecordRequest): an argument the tool's toolgate.Tool.Scope ties to
	// the request names another resource (a refund of another order than
	// the ticket's), or another principal; the trace has no request
	// recorded and the tool is scoped; or the call is made for another
	// principal than the request's (toolgate.Call.Principal). The decision
	// record's context names the request record and its principal.
	OutOfScope = Code("OUT_OF_SCOPE")
	// ApprovalRequired: the action committed, but its policy needs an
	// approval and no approver has decided yet. It comes with the
	// audit.OutcomePendingApproval outcome, not a refusal.
	ApprovalRequired = Code("APPROVAL_REQUIRED")
	// ApprovalDenied: the latest approval decision denied the action;
	// the gate took the safe fallback instead.
	ApprovalDenied = Code("APPROVAL_DENIED")
	// ApprovalExpired: the latest approval ran out before the action
	// started; the gate took the safe fallback instead.
	ApprovalExpired = Code("APPROVAL_EXPIRED")
	// ApprovalMismatch: the approval does not bind these arguments:
	// the arguments about to run (given to toolgate.Gate.Resume) differ from the
	// approved ones. A changed argument needs a new call and a new
	// approval.
	ApprovalMismatch = Code("APPROVAL_MISMATCH")
	// ArgumentsChanged: toolgate.Gate.Resume was given arguments that differ
	// from the committed action's, for an action that needs no approval.
	ArgumentsChanged = Code("ARGUMENTS_CHANGED")
	// RetryKeyConflict: the call's retry key (toolgate.Call.RetryKey) was
	// used in its trace by another call: another tool, caller or
	// arguments. The key is bound to the call that used it first; a new
	// call needs a new key.
	RetryKeyConflict = Code("RETRY_KEY_CONFLICT")
	// CallRunning: a call with the same retry key (toolgate.Call.RetryKey) committed its
	// action and another driver is running its effect now. It comes with
	// the audit.OutcomeCommitted outcome, not a refusal: the result is
	// not known yet.
	CallRunning = Code("CALL_RUNNING")
	// EffectSucceeded: the effect ran and returned its output.
	EffectSucceeded = Code("EFFECT_SUCCEEDED")
	// EffectFailed: the effect returned an error retrying cannot fix
	// (one not marked with toolgate.Retryable), or panicked.
	EffectFailed = Code("EFFECT_FAILED")
	// RetriesExhausted: every attempt the tool's toolgate.RetryPolicy allows
	// failed with a retryable error, or was left without a result by a
	// crashed driver.
	RetriesExhausted = Code("EFFECT_RETRIES_EXHAUSTED")
	// OutputInvalid: the effect succeeded but its output cannot be
	// recorded (not JSON-encodable, too large, or using the reserved key
	// "effect"). The effect is not run again.
	OutputInvalid = Code("EFFECT_OUTPUT_INVALID")
	// EffectUnknown: an attempt of an effect that may run at most once
	// (its tool has no once-key and is not toolgate.Tool.Idempotent) began and
	// left no result: its driver crashed, gave up, or the effect failed
	// after its lease ran out. It may or may not have taken effect, so the
	// gate does not start it again; a person checks the external system.
	// Its typed failure is FAILED_UNKNOWN, not retryable.
	EffectUnknown = Code("EFFECT_UNKNOWN")
	// MaskedUnavailable: a committed action of a tool with masked
	// fields (toolgate.Tool.Masked) was to start its effect without the real
	// values, which the store never holds (Execute after approval, Recover
	// after a crash): nothing ran and nothing is recorded. toolgate.Gate.Resume
	// with the arguments runs it.
	MaskedUnavailable = Code("MASKED_UNAVAILABLE")
	// EffectUnavailable: an action of a caller-driven tool (one with
	// no toolgate.Tool.Effect) was to start without the caller's effect
	// (toolgate.Call.Effect): by toolgate.Gate.Execute, toolgate.Gate.Recover or
	// toolgate.Approver.Resolve, or by a call that brought none. Nothing ran and
	// nothing is recorded: its approval, once-key and retry key stay as
	// they were, and the caller's next call under the same
	// toolgate.Call.RetryKey, with the effect, runs it.
	EffectUnavailable = Code("EFFECT_UNAVAILABLE")
	// ContextInvalid: the call's toolgate.Call.Context names no compiled context
	// of its trace: no record, another kind or slot, another trace, or a
	// record not written by the kernel's Governor. Nothing was proposed.
	ContextInvalid = Code("CONTEXT_INVALID")
	// ReadOnlyMode: the trace is read-only (toolgate.Controls.ReadOnly)
	// and the tool is effectful. Nothing was proposed; an action of the tool not yet
	// started when the trace became read-only never starts.
	ReadOnlyMode = Code("READ_ONLY_MODE")
	// ToolProhibited: the trace's run controls prohibit the tool.
	ToolProhibited = Code("TOOL_PROHIBITED")
	// DerivationFailed: a tool's result did not let the gate evaluate a
	// toolgate.Derive (its value is not a bool, a field cannot be evaluated): the
	// belief was not proposed. It is the code of the decision record that
	// says so, and of the toolgate.Derived entry of the call's Result.
	DerivationFailed = Code("DERIVATION_FAILED")
	// EffectIncomplete: the effect returned without error, but its output
	// fails the tool's toolgate.Tool.Expect: some resources failed, data expected was
	// absent, or required fields were missing. The output is not recorded as
	// the tool's result; the failure is, with its typed status.
	EffectIncomplete = Code("EFFECT_INCOMPLETE")
)

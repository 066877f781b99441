package reason

const (
	// The kernel's pipeline.

	Committed = Code("COMMITTED") // a proposal or a direct write was committed
	// Belief validation (paper §6.3, t3–t5).
	MissingEvidence    = Code("MISSING_EVIDENCE")    // a dependency has no percept, or the belief names none
	StaleEvidence      = Code("STALE_EVIDENCE")      // a dependency is flagged stale or its TTL ran out
	UnresolvedConflict = Code("UNRESOLVED_CONFLICT") // a conflicted dependency below the arbitration threshold
	LowConfidence      = Code("LOW_CONFIDENCE")      // a dependency's confidence is below the minimum, or its source flags it low_confidence
	// SupersededEvidence: a belief names, by id, an observation of a
	// percept kind that a newer observation in the trace has replaced.
	SupersededEvidence = Code("SUPERSEDED_EVIDENCE")
	// Plan feasibility (t7).
	PlanFeasible           = Code("PLAN_FEASIBLE")
	PlanMissingBelief      = Code("PLAN_MISSING_BELIEF")
	PlanBeliefNotSatisfied = Code("PLAN_BELIEF_NOT_SATISFIED")
	// PlanUngrounded: a step's action declares no required beliefs (and is
	// not a safe fallback) or fewer than its registered spec demands.
	PlanUngrounded = Code("PLAN_UNGROUNDED_ACTION")
	// Action gating (t9).
	NoCommittedBelief  = Code("NO_COMMITTED_BELIEF")
	BeliefNotSatisfied = Code("BELIEF_NOT_SATISFIED")
	NoPrediction       = Code("NO_PREDICTION")
	NegativePrediction = Code("NEGATIVE_PREDICTION")
	// UngroundedAction: an action that declares no required beliefs and is
	// not a registered safe fallback, or declares fewer than its spec needs.
	UngroundedAction  = Code("UNGROUNDED_ACTION")
	UnknownActionType = Code("UNKNOWN_ACTION_TYPE") // strict registry: unregistered type
	NoFeasiblePlan    = Code("NO_FEASIBLE_PLAN")    // spec requires a plan; no committed plan has this action
	// DuplicateAction: the action's once-key is used up in the
	// namespace, or an observation it rests on (through any belief)
	// already grounded a commit of its type and the spec is not
	// Repeatable. The refusal names the action that holds the key or,
	// for observations, the earliest commit of the type that used one.
	DuplicateAction = Code("DUPLICATE_ACTION")
	// OnceKeyMissing: a once-keyed action whose key cannot be read (a
	// field absent, or the key percept missing or failing its checks).
	OnceKeyMissing = Code("ONCE_KEY_MISSING")
	// Rules and constraints.
	RuleViolated = Code("RULE_VIOLATED") // a declarative rule evaluated to false (Decision.Rule names it)
	RuleError    = Code("RULE_ERROR")    // a rule could not be evaluated (a missing field, a type error): fail closed
	// Predictions.
	PredictionMissingBelief = Code("PREDICTION_MISSING_BELIEF")
	// Record life cycle.
	SupersededByCommit = Code("SUPERSEDED_BY_COMMIT") // a proposal replaced by its committed record
	TTLExpired         = Code("TTL_EXPIRED")          // a record whose time to live ran out
	// Bad requests. These come with an error, except FIELD_MISMATCH, which
	// is how the gate rejects a proposal (a Decision, no error).
	InvalidProposal  = Code("INVALID_PROPOSAL")  // malformed, already decided, or from another trace
	InvalidReference = Code("INVALID_REFERENCE") // a reference to a record that does not exist in reach
	FieldMismatch    = Code("FIELD_MISMATCH")    // a payload disagrees with a bound percept or a derived flag
	InvalidInput     = Code("INVALID_INPUT")     // bad slot, mode, kind, trace, confidence, TTL or payload
	PermissionDenied = Code("PERMISSION_DENIED") // outside the handle's authority

	// The tool-call gate (package toolgate).

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
	// [Binding] says it must (a refund of another order than the one the
	// refund_due belief rests on, or of more than its amount), or the
	// binding cannot be evaluated. The root cause names the percept; the
	// decision record's context the argument and the percept.
	ArgumentNotBound = Code("ARGUMENT_NOT_BOUND")
	// OutOfScope: the call is not within the request its trace serves
	// ([Gate.RecordRequest]): an argument the tool's [Tool.Scope] ties to
	// the request names another resource (a refund of another order than
	// the ticket's), or another principal; the trace has no request
	// recorded and the tool is scoped; or the call is made for another
	// principal than the request's ([Call.Principal]). The decision
	// record's context names the request record and its principal.
	OutOfScope = Code("OUT_OF_SCOPE")
	// ApprovalRequired: the action committed, but its policy needs an
	// approval and no approver has decided yet. It comes with the
	// [audit.OutcomePendingApproval] outcome, not a refusal.
	ApprovalRequired = Code("APPROVAL_REQUIRED")
	// ApprovalDenied: the latest approval decision denied the action;
	// the gate took the safe fallback instead.
	ApprovalDenied = Code("APPROVAL_DENIED")
	// ApprovalExpired: the latest approval ran out before the action
	// started; the gate took the safe fallback instead.
	ApprovalExpired = Code("APPROVAL_EXPIRED")
	// ApprovalMismatch: the approval does not bind these arguments:
	// the arguments about to run (given to [Gate.Resume]) differ from the
	// approved ones. A changed argument needs a new call and a new
	// approval.
	ApprovalMismatch = Code("APPROVAL_MISMATCH")
	// ArgumentsChanged: [Gate.Resume] was given arguments that differ
	// from the committed action's, for an action that needs no approval.
	ArgumentsChanged = Code("ARGUMENTS_CHANGED")
	// RetryKeyConflict: the call's retry key ([Call.RetryKey]) was
	// used in its trace by another call: another tool, caller or
	// arguments. The key is bound to the call that used it first; a new
	// call needs a new key.
	RetryKeyConflict = Code("RETRY_KEY_CONFLICT")
	// CallRunning: a call with the same retry key ([Call.RetryKey]) committed its
	// action and another driver is running its effect now. It comes with
	// the [audit.OutcomeCommitted] outcome, not a refusal: the result is
	// not known yet.
	CallRunning = Code("CALL_RUNNING")
	// EffectSucceeded: the effect ran and returned its output.
	EffectSucceeded = Code("EFFECT_SUCCEEDED")
	// EffectFailed: the effect returned an error retrying cannot fix
	// (one not marked with [Retryable]), or panicked.
	EffectFailed = Code("EFFECT_FAILED")
	// RetriesExhausted: every attempt the tool's [RetryPolicy] allows
	// failed with a retryable error, or was left without a result by a
	// crashed driver.
	RetriesExhausted = Code("EFFECT_RETRIES_EXHAUSTED")
	// OutputInvalid: the effect succeeded but its output cannot be
	// recorded (not JSON-encodable, too large, or using the reserved key
	// "effect"). The effect is not run again.
	OutputInvalid = Code("EFFECT_OUTPUT_INVALID")
	// EffectUnknown: an attempt of an effect that may run at most once
	// (its tool has no once-key and is not [Tool.Idempotent]) began and
	// left no result: its driver crashed, gave up, or the effect failed
	// after its lease ran out. It may or may not have taken effect, so the
	// gate does not start it again; a person checks the external system.
	// Its typed failure is FAILED_UNKNOWN, not retryable.
	EffectUnknown = Code("EFFECT_UNKNOWN")
	// MaskedUnavailable: a committed action of a tool with masked
	// fields ([Tool.Masked]) was to start its effect without the real
	// values, which the store never holds (Execute after approval, Recover
	// after a crash): nothing ran and nothing is recorded. [Gate.Resume]
	// with the arguments runs it.
	MaskedUnavailable = Code("MASKED_UNAVAILABLE")
	// EffectUnavailable: an action of a caller-driven tool (one with
	// no [Tool.Effect]) was to start without the caller's effect
	// ([Call.Effect]): by [Gate.Execute], [Gate.Recover] or
	// [Approver.Resolve], or by a call that brought none. Nothing ran and
	// nothing is recorded: its approval, once-key and retry key stay as
	// they were, and the caller's next call under the same
	// [Call.RetryKey], with the effect, runs it.
	EffectUnavailable = Code("EFFECT_UNAVAILABLE")
	// ContextInvalid: the call's [Call.Context] names no compiled context
	// of its trace: no record, another kind or slot, another trace, or a
	// record not written by the kernel's Governor. Nothing was proposed.
	ContextInvalid = Code("CONTEXT_INVALID")
	// ReadOnlyMode: the trace is read-only (toolgate.Controls.ReadOnly) and the tool is
	// effectful. Nothing was proposed; an action of the tool not yet
	// started when the trace became read-only never starts.
	ReadOnlyMode = Code("READ_ONLY_MODE")
	// ToolProhibited: the trace's run controls prohibit the tool.
	ToolProhibited = Code("TOOL_PROHIBITED")
	// DerivationFailed: a tool's result did not let the gate evaluate a
	// [Derive] (its value is not a bool, a field cannot be evaluated): the
	// belief was not proposed. It is the code of the decision record that
	// says so, and of the [Derived] entry of the call's Result.
	DerivationFailed = Code("DERIVATION_FAILED")
	// EffectIncomplete: the effect returned without error, but its output
	// fails the tool's [Tool.Expect]: some resources failed, data expected was
	// absent, or required fields were missing. The output is not recorded as
	// the tool's result; the failure is, with its typed status.
	EffectIncomplete = Code("EFFECT_INCOMPLETE")

	// Budgets and the loop guard (package budget).

	// BudgetExceeded: a call was refused before it was made because a
	// budget of the run (or of a run it draws on) had nothing left for it.
	BudgetExceeded = Code("BUDGET_EXCEEDED")
	// LoopDetected: a call or a round was stopped by the loop guard,
	// because the same call came again too often or rounds went by that
	// changed nothing.
	LoopDetected = Code("LOOP_DETECTED")

	// Declarative rules (package rules).

	// RuleInputTooLarge: a proposal, or a belief or percept a rule would read,
	// holds more than a rule may be given (see the package doc's bounds). The proposal is refused
	// before any rule is evaluated: a rule is only bounded in time because its
	// input is bounded.
	RuleInputTooLarge = Code("RULE_INPUT_TOO_LARGE")

	// Findings of sub-agents (package orchestrator).

	// FindingInvalid: an assertion without a kind, or with a confidence
	// outside [0, 1]; a failure without a status.
	FindingInvalid = Code("FINDING_INVALID")
	// FindingMissingAssertion: an assertion kind the contract requires is
	// absent.
	FindingMissingAssertion = Code("FINDING_MISSING_ASSERTION")
	// FindingLowConfidence: an assertion below the contract's minimum
	// confidence.
	FindingLowConfidence = Code("FINDING_LOW_CONFIDENCE")
	// FindingNoEvidence: the contract wants evidence and an assertion
	// cites none.
	FindingNoEvidence = Code("FINDING_NO_EVIDENCE")
	// FindingUnresolvedEvidence: an assertion cites a record that is not in
	// the trace.
	FindingUnresolvedEvidence = Code("FINDING_UNRESOLVED_EVIDENCE")

	// The validators of package validator.

	// OverLimit: a numeric field exceeds its ceiling, or is not a number.
	OverLimit = Code("OVER_LIMIT")
	// MissingField: a required payload field is absent or null.
	MissingField = Code("MISSING_FIELD")

	// The LLM planner (package worker/llm): the model, not the kernel, stopped the episode.

	// LLMNoBelief: the model declined to propose the belief.
	LLMNoBelief = Code("LLM_NO_BELIEF")
	// LLMNoPlan: the model declined to propose the plan.
	LLMNoPlan = Code("LLM_NO_PLAN")
	// LLMError: the endpoint failed after its retries, or its answer could
	// not be read as advice.
	LLMError = Code("LLM_ERROR")
)

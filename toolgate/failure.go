package toolgate

import (
	"strings"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/rules"
)

// CodeEffectIncomplete: the effect returned without error, but its output
// fails the tool's [Tool.Expect]: some resources failed, data expected was
// absent, or required fields were missing. The output is not recorded as
// the tool's result; the failure is, with its typed status.
const CodeEffectIncomplete = blackboard.Code("EFFECT_INCOMPLETE")

// codeStatus is the one table from the codes of a refused or failed call
// to execution statuses. Read by [Result.Failure]; see its documentation
// for the reasons.
var codeStatus = map[blackboard.Code]failure.ExecStatus{
	// The call itself was wrong: the worker corrects it.
	CodeToolUnknown:      failure.StatusFunctionMismatch,
	CodeInvalidArguments: failure.StatusFormat,
	CodeContextInvalid:   failure.StatusFormat,
	CodeApprovalMismatch: failure.StatusFormat,
	CodeArgumentsChanged: failure.StatusFormat,
	CodeArgumentNotBound: failure.StatusFormat,
	// A policy forbids the call as made; another call may pass.
	blackboard.CodeRuleViolated:  failure.StatusFormat,
	blackboard.CodeRuleError:     failure.StatusFormat,
	blackboard.CodeFieldMismatch: failure.StatusFormat,
	rules.CodeInputTooLarge:      failure.StatusFormat,
	// The call came before what it rests on: the worker establishes it
	// with its own tools (refresh, look up) and calls again.
	blackboard.CodeMissingEvidence:         failure.StatusFunctionMismatch,
	blackboard.CodeStaleEvidence:           failure.StatusFunctionMismatch,
	blackboard.CodeSupersededEvidence:      failure.StatusFunctionMismatch,
	blackboard.CodeTTLExpired:              failure.StatusFunctionMismatch,
	blackboard.CodeNoCommittedBelief:       failure.StatusFunctionMismatch,
	blackboard.CodeBeliefNotSatisfied:      failure.StatusFunctionMismatch,
	blackboard.CodePlanMissingBelief:       failure.StatusFunctionMismatch,
	blackboard.CodePlanBeliefNotSatisfied:  failure.StatusFunctionMismatch,
	blackboard.CodeOnceKeyMissing:          failure.StatusFunctionMismatch,
	blackboard.CodePredictionMissingBelief: failure.StatusFunctionMismatch,
	// The operation is not available as called: a plan, a grounding or a
	// registration is missing. Research (or planning) comes first.
	blackboard.CodeNoFeasiblePlan:    failure.StatusEndpointUnknown,
	blackboard.CodeUngroundedAction:  failure.StatusEndpointUnknown,
	blackboard.CodePlanUngrounded:    failure.StatusEndpointUnknown,
	blackboard.CodeUnknownActionType: failure.StatusEndpointUnknown,
	// The effect exists already; or the retry key names another call.
	blackboard.CodeDuplicateAction: failure.StatusDuplicate,
	CodeRetryKeyConflict:           failure.StatusDuplicate,
	// Authority the worker lacks: its caller, the intent, a person's say.
	CodeToolNotPermitted: failure.StatusAuthDenied,
	CodeToolNotForIntent: failure.StatusAuthDenied,
	CodeReadOnlyMode:     failure.StatusAuthDenied,
	CodeToolProhibited:   failure.StatusAuthDenied,
	CodeApprovalDenied:   failure.StatusAuthDenied,
	CodeApprovalExpired:  failure.StatusAuthDenied,
	CodeApprovalRequired: failure.StatusAuthDenied,
	// Evidence only a person can settle.
	blackboard.CodeUnresolvedConflict: failure.StatusUnknown,
	blackboard.CodeLowConfidence:      failure.StatusUnknown,
	blackboard.CodeNoPrediction:       failure.StatusUnknown,
	blackboard.CodeNegativePrediction: failure.StatusUnknown,
	// Limits of the run.
	budget.CodeBudgetExceeded: failure.StatusRateLimited,
	budget.CodeLoopDetected:   failure.StatusDuplicate,
	// The tool ran and its output cannot be kept.
	CodeOutputInvalid: failure.StatusFormat,
	// The effect may have run: only a person can tell.
	CodeEffectUnknown: failure.StatusUnknown,
}

// notRetryable lists the codes whose failures the router must not retry,
// whatever their category's row says: retrying cannot change the answer.
var notRetryable = map[blackboard.Code]bool{
	CodeToolNotPermitted: true, CodeToolNotForIntent: true, CodeReadOnlyMode: true, CodeToolProhibited: true,
	CodeApprovalDenied: true, CodeApprovalExpired: true, CodeApprovalRequired: true,
	budget.CodeBudgetExceeded: true, CodeOutputInvalid: true, CodeEffectUnknown: true,
	CodeRetryKeyConflict: true,
}

// Failure types the result of a call as a [failure.Failure], for a
// worker's grant of turns ([failure.Grant.Turn]) and the repair router
// ([failure.RemedyFor]). ok is false for a call that did not fail: Executed,
// [audit.OutcomePendingApproval] (the call is waiting, not failing) and
// [audit.OutcomeCommitted] (CALL_RUNNING: its effect is running).
//
// A failed effect whose error was typed (a [failure.Failure], an
// error with an HTTPStatus method, a network error, ...) or whose output failed
// [Tool.Expect] gives that failure exactly: the gate recorded its status,
// and Output carries it. A failed effect whose error was untyped goes to
// failure's legacy text matcher, and the Failure says so
// ([failure.Failure.Legacy]).
//
// Any other refusal or failure is typed by its code, the root cause's code
// first (a NO_COMMITTED_BELIEF because of STALE_EVIDENCE is a stale
// evidence problem):
//
//	code                                           status                    class     the worker
//	TOOL_UNKNOWN                                   FAILED_FUNCTION_MISMATCH  skill     calls a tool it has
//	INVALID_ARGUMENTS, APPROVAL_MISMATCH,          FAILED_FORMAT             skill     fixes its arguments
//	  ARGUMENTS_CHANGED, ARGUMENT_NOT_BOUND
//	RULE_VIOLATED, RULE_ERROR, FIELD_MISMATCH,     FAILED_FORMAT             skill     makes a call the policy allows
//	  RULE_INPUT_TOO_LARGE, <CONSTRAINT>_BLOCKED
//	MISSING_, STALE_, SUPERSEDED_EVIDENCE,         FAILED_FUNCTION_MISMATCH  skill     establishes the precondition
//	  TTL_EXPIRED, NO_COMMITTED_BELIEF,                                                first, then calls again
//	  BELIEF_NOT_SATISFIED, PLAN_*_BELIEF*,
//	  ONCE_KEY_MISSING, PREDICTION_MISSING_BELIEF
//	NO_FEASIBLE_PLAN, UNGROUNDED_ACTION,           FAILED_ENDPOINT_UNKNOWN   spec      waits for research or a plan
//	  PLAN_UNGROUNDED_ACTION, UNKNOWN_ACTION_TYPE
//	DUPLICATE_ACTION                               FAILED_DUPLICATE          state     stops: the effect exists
//	RETRY_KEY_CONFLICT                               FAILED_DUPLICATE ¹        state     stops: the key is another call's
//	TOOL_NOT_PERMITTED, TOOL_NOT_FOR_INTENT,       FAILED_AUTH_DENIED ¹      state     lacks the authority
//	  APPROVAL_DENIED, APPROVAL_EXPIRED,
//	  APPROVAL_REQUIRED
//	UNRESOLVED_CONFLICT, LOW_CONFIDENCE,           FAILED_UNKNOWN            unknown   hands over to a person
//	  NO_PREDICTION, NEGATIVE_PREDICTION
//	BUDGET_EXCEEDED                                FAILED_RATE_LIMITED ¹     infra     stops: the budget is spent
//	LOOP_DETECTED                                  FAILED_DUPLICATE          state     stops repeating itself
//	EFFECT_OUTPUT_INVALID                          FAILED_FORMAT ¹           skill     stops: the tool's output is bad
//	EFFECT_UNKNOWN                                 FAILED_UNKNOWN ¹          unknown   hands over to a person
//	anything else                                  FAILED_UNKNOWN            unknown   hands over to a person
//
// ¹ not retryable: waiting or retrying cannot change the answer, so the
// router stops (escalate for authority, abort for the rest).
//
// So a lease lets a worker go on after its own mistakes (the skill rows)
// and ends it on everything else. The Failure's message is the code and
// the detail (or the hint). For BUDGET_EXCEEDED and LOOP_DETECTED results
// the gate produced itself, the Failure wraps the budget's refusal, so
// that errors.As finds the *budget.Refusal through it.
func (r Result) Failure() (failure.Failure, bool) {
	switch r.Outcome {
	case audit.OutcomeExecuted, audit.OutcomePendingApproval, audit.OutcomeCommitted, "":
		return failure.Failure{}, false
	}
	if r.Outcome == audit.OutcomeFailed {
		if f, ok := failure.FromResult(r.Output); ok {
			return f, true
		}
		if r.Code == CodeEffectFailed || r.Code == CodeRetriesExhausted {
			// An untyped effect error: only its text is left.
			f, _ := failure.FromResult(map[string]any{"error": message(r)})
			return f, true
		}
	}
	code := r.Code
	st, ok := statusOf(r.RootCause.Code)
	if ok {
		code = r.RootCause.Code
	} else if st, ok = statusOf(r.Code); !ok {
		st = failure.StatusUnknown
	}
	f := failure.New(st, message(r))
	if notRetryable[code] {
		f = f.WithRetryable(false)
	}
	if r.refusal != nil {
		f = f.WithCause(r.refusal)
	}
	return f, true
}

// statusOf looks a code up in the table; constraint blocks are policy.
func statusOf(c blackboard.Code) (failure.ExecStatus, bool) {
	if c == "" {
		return "", false
	}
	if st, ok := codeStatus[c]; ok {
		return st, true
	}
	if strings.HasSuffix(string(c), "_BLOCKED") {
		return failure.StatusFormat, true
	}
	return "", false
}

// message is what a Failure built from r says: the code, then the root
// cause's detail or, without one, the hint.
func message(r Result) string {
	detail := r.RootCause.Detail
	if detail == "" {
		detail = r.Hint
	}
	if detail == "" {
		return string(r.Code)
	}
	return string(r.Code) + ": " + detail
}

// typedFailure is the typed failure of an effect's error, or the zero
// Failure for an error that carries no type: the gate records only what
// it knows.
func typedFailure(err error) failure.Failure {
	if err == nil {
		return failure.Failure{}
	}
	f := failure.Classify(err)
	if f.Legacy() {
		return failure.Failure{}
	}
	return f
}

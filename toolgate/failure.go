package toolgate

import (
	"strings"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/reason"
)

// codeStatus is the one table from the codes of a refused or failed call
// to execution statuses. Read by [Result.Failure]; see its documentation
// for the reasons.
var codeStatus = map[reason.Code]failure.ExecStatus{
	// The call itself was wrong: the worker corrects it.
	reason.ToolUnknown:      failure.StatusFunctionMismatch,
	reason.InvalidArguments: failure.StatusFormat,
	reason.ContextInvalid:   failure.StatusFormat,
	reason.ApprovalMismatch: failure.StatusFormat,
	reason.ArgumentsChanged: failure.StatusFormat,
	reason.ArgumentNotBound: failure.StatusFormat,
	// A policy forbids the call as made; another call may pass.
	reason.RuleViolated:      failure.StatusFormat,
	reason.RuleError:         failure.StatusFormat,
	reason.FieldMismatch:     failure.StatusFormat,
	reason.RuleInputTooLarge: failure.StatusFormat,
	// The call came before what it rests on: the worker establishes it
	// with its own tools (refresh, look up) and calls again.
	reason.MissingEvidence:         failure.StatusFunctionMismatch,
	reason.StaleEvidence:           failure.StatusFunctionMismatch,
	reason.SupersededEvidence:      failure.StatusFunctionMismatch,
	reason.TTLExpired:              failure.StatusFunctionMismatch,
	reason.NoCommittedBelief:       failure.StatusFunctionMismatch,
	reason.BeliefNotSatisfied:      failure.StatusFunctionMismatch,
	reason.PlanMissingBelief:       failure.StatusFunctionMismatch,
	reason.PlanBeliefNotSatisfied:  failure.StatusFunctionMismatch,
	reason.OnceKeyMissing:          failure.StatusFunctionMismatch,
	reason.PredictionMissingBelief: failure.StatusFunctionMismatch,
	// The operation is not available as called: a plan, a grounding or a
	// registration is missing. Research (or planning) comes first.
	reason.NoFeasiblePlan:    failure.StatusEndpointUnknown,
	reason.UngroundedAction:  failure.StatusEndpointUnknown,
	reason.PlanUngrounded:    failure.StatusEndpointUnknown,
	reason.UnknownActionType: failure.StatusEndpointUnknown,
	// The effect exists already; or the retry key names another call.
	reason.DuplicateAction:  failure.StatusDuplicate,
	reason.RetryKeyConflict: failure.StatusDuplicate,
	// Authority the worker lacks: its caller, the intent, a person's say.
	reason.ToolNotPermitted: failure.StatusAuthDenied,
	reason.ToolNotForIntent: failure.StatusAuthDenied,
	reason.ReadOnlyMode:     failure.StatusAuthDenied,
	reason.ToolProhibited:   failure.StatusAuthDenied,
	reason.ApprovalDenied:   failure.StatusAuthDenied,
	reason.ApprovalExpired:  failure.StatusAuthDenied,
	reason.ApprovalRequired: failure.StatusAuthDenied,
	// Evidence only a person can settle.
	reason.UnresolvedConflict: failure.StatusUnknown,
	reason.LowConfidence:      failure.StatusUnknown,
	reason.NoPrediction:       failure.StatusUnknown,
	reason.NegativePrediction: failure.StatusUnknown,
	// Limits of the run.
	reason.BudgetExceeded: failure.StatusRateLimited,
	reason.LoopDetected:   failure.StatusDuplicate,
	// The tool ran and its output cannot be kept.
	reason.OutputInvalid: failure.StatusFormat,
	// The effect may have run: only a person can tell.
	reason.EffectUnknown: failure.StatusUnknown,
}

// notRetryable lists the codes whose failures the router must not retry,
// whatever their category's row says: retrying cannot change the answer.
var notRetryable = map[reason.Code]bool{
	reason.ToolNotPermitted: true, reason.ToolNotForIntent: true, reason.ReadOnlyMode: true, reason.ToolProhibited: true,
	reason.ApprovalDenied: true, reason.ApprovalExpired: true, reason.ApprovalRequired: true,
	reason.BudgetExceeded: true, reason.OutputInvalid: true, reason.EffectUnknown: true,
	reason.RetryKeyConflict: true,
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
		if r.Code == reason.EffectFailed || r.Code == reason.RetriesExhausted {
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
func statusOf(c reason.Code) (failure.ExecStatus, bool) {
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

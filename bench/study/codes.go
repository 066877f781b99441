package study

import (
	"slices"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/worker/llm"
)

// kernelCodes are the codes blackboard/code.go declares. A reason that merely
// looks like a code (upper case, digits, '_') proves nothing; a reason
// counts for failure transparency only if it is registered here, among
// the task's constraint codes or among the declines. TestKernelCodesRegistered
// reads blackboard/code.go and fails when a constant is missing here.
var kernelCodes = []blackboard.Code{
	blackboard.CodeCommitted,
	blackboard.CodeMissingEvidence, blackboard.CodeStaleEvidence, blackboard.CodeUnresolvedConflict,
	blackboard.CodeLowConfidence, blackboard.CodeSupersededEvidence,
	blackboard.CodePlanFeasible, blackboard.CodePlanMissingBelief, blackboard.CodePlanBeliefNotSatisfied, blackboard.CodePlanUngrounded,
	blackboard.CodeNoCommittedBelief, blackboard.CodeBeliefNotSatisfied, blackboard.CodeNoPrediction, blackboard.CodeNegativePrediction,
	blackboard.CodeUngroundedAction, blackboard.CodeUnknownActionType, blackboard.CodeNoFeasiblePlan, blackboard.CodeDuplicateAction,
	blackboard.CodeOnceKeyMissing,
	blackboard.CodeRuleViolated, blackboard.CodeRuleError,
	blackboard.CodePredictionMissingBelief,
	blackboard.CodeSupersededByCommit, blackboard.CodeTTLExpired,
	blackboard.CodeInvalidProposal, blackboard.CodeInvalidReference, blackboard.CodeFieldMismatch, blackboard.CodeInvalidInput,
	blackboard.CodePermissionDenied,
}

// declineCodes are the study's own codes: a planner's decider declining
// to propose (worker/llm's codes, paper §10.6).
var declineCodes = []blackboard.Code{llm.CodeNoBelief, llm.CodeNoPlan, llm.CodeError}

// registered reports whether c is a code the study knows in task t: a
// kernel code, a blocked code of one of t's constraints, or a decline.
func registered(c blackboard.Code, t *Task) bool {
	if slices.Contains(kernelCodes, c) || slices.Contains(declineCodes, c) {
		return true
	}
	for _, k := range t.Constraints {
		if c == "PLAN_"+blackboard.BlockedCode(k.Name) || c == blackboard.BlockedCode(k.Name) {
			return true
		}
	}
	// adversarial_bk's owner adds a constraint of its own in one profile.
	return c == "PLAN_"+blackboard.BlockedCode(harmConstraint.Name) || c == blackboard.BlockedCode(harmConstraint.Name)
}

// refusal reports whether c says why something did not happen; the codes
// of a positive decision and of a proposal replaced by its commit do not.
func refusal(c blackboard.Code) bool {
	return !c.OK() && c != blackboard.CodeSupersededByCommit && c != ""
}

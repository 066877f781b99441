package study

import (
	"slices"

	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/worker/llm"
)

// kernelCodes are the codes kernel/code.go declares. A reason that merely
// looks like a code (upper case, digits, '_') proves nothing; a reason
// counts for failure transparency only if it is registered here, among
// the task's constraint codes or among the declines. TestKernelCodesRegistered
// reads kernel/code.go and fails when a constant is missing here.
var kernelCodes = []kernel.Code{
	kernel.CodeCommitted,
	kernel.CodeMissingEvidence, kernel.CodeStaleEvidence, kernel.CodeUnresolvedConflict,
	kernel.CodeLowConfidence, kernel.CodeSupersededEvidence,
	kernel.CodePlanFeasible, kernel.CodePlanMissingBelief, kernel.CodePlanBeliefNotSatisfied, kernel.CodePlanUngrounded,
	kernel.CodeNoCommittedBelief, kernel.CodeBeliefNotSatisfied, kernel.CodeNoPrediction, kernel.CodeNegativePrediction,
	kernel.CodeUngroundedAction, kernel.CodeUnknownActionType, kernel.CodeNoFeasiblePlan, kernel.CodeDuplicateAction,
	kernel.CodeOnceKeyMissing,
	kernel.CodeRuleViolated, kernel.CodeRuleError,
	kernel.CodePredictionMissingBelief,
	kernel.CodeSupersededByCommit, kernel.CodeTTLExpired,
	kernel.CodeInvalidProposal, kernel.CodeInvalidReference, kernel.CodeFieldMismatch, kernel.CodeInvalidInput,
	kernel.CodePermissionDenied,
}

// declineCodes are the study's own codes: a planner's decider declining
// to propose (worker/llm's codes, paper §10.6).
var declineCodes = []kernel.Code{llm.CodeNoBelief, llm.CodeNoPlan, llm.CodeError}

// registered reports whether c is a code the study knows in task t: a
// kernel code, a blocked code of one of t's constraints, or a decline.
func registered(c kernel.Code, t *Task) bool {
	if slices.Contains(kernelCodes, c) || slices.Contains(declineCodes, c) {
		return true
	}
	for _, k := range t.Constraints {
		if c == kernel.PlanBlockedCode(k.Name) || c == kernel.BlockedCode(k.Name) {
			return true
		}
	}
	// adversarial_bk's owner adds a constraint of its own in one profile.
	return c == kernel.PlanBlockedCode(harmConstraint.Name) || c == kernel.BlockedCode(harmConstraint.Name)
}

// refusal reports whether c says why something did not happen; the codes
// of a positive decision and of a proposal replaced by its commit do not.
func refusal(c kernel.Code) bool {
	return !c.OK() && c != kernel.CodeSupersededByCommit && c != ""
}

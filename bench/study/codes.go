package study

import (
	"slices"

	"github.com/blackboardkernel/bk/reason"
)

// kernelCodes are the codes reason/kernel.go declares. A reason that merely
// looks like a code (upper case, digits, '_') proves nothing; a reason
// counts for failure transparency only if it is registered here, among
// the task's constraint codes or among the declines. TestKernelCodesRegistered
// reads reason/kernel.go and fails when a constant is missing here.
var kernelCodes = []reason.Code{
	reason.Committed,
	reason.MissingEvidence, reason.StaleEvidence, reason.UnresolvedConflict,
	reason.LowConfidence, reason.SupersededEvidence,
	reason.PlanFeasible, reason.PlanMissingBelief, reason.PlanBeliefNotSatisfied, reason.PlanUngrounded,
	reason.NoCommittedBelief, reason.BeliefNotSatisfied, reason.NoPrediction, reason.NegativePrediction,
	reason.UngroundedAction, reason.UnknownActionType, reason.NoFeasiblePlan, reason.DuplicateAction,
	reason.OnceKeyMissing,
	reason.RuleViolated, reason.RuleError,
	reason.PredictionMissingBelief,
	reason.SupersededByCommit, reason.TTLExpired,
	reason.InvalidProposal, reason.InvalidReference, reason.FieldMismatch, reason.InvalidInput,
	reason.PermissionDenied,
}

// declineCodes are the study's own codes: a planner's decider declining
// to propose (worker/llm's codes, paper §10.6).
var declineCodes = []reason.Code{reason.LLMNoBelief, reason.LLMNoPlan, reason.LLMError}

// registered reports whether c is a code the study knows in task t: a
// kernel code, a blocked code of one of t's constraints, or a decline.
func registered(c reason.Code, t *Task) bool {
	if slices.Contains(kernelCodes, c) || slices.Contains(declineCodes, c) {
		return true
	}
	for _, k := range t.Constraints {
		if c == "PLAN_"+reason.Blocked(k.Name) || c == reason.Blocked(k.Name) {
			return true
		}
	}
	// adversarial_bk's owner adds a constraint of its own in one profile.
	return c == "PLAN_"+reason.Blocked(harmConstraint.Name) || c == reason.Blocked(harmConstraint.Name)
}

// refusal reports whether c says why something did not happen; the codes
// of a positive decision and of a proposal replaced by its commit do not.
func refusal(c reason.Code) bool {
	return !c.OK() && c != reason.SupersededByCommit && c != ""
}

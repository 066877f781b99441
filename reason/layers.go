package reason

// The codes of the layers above the kernel and the gate.
const (
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

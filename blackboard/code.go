package blackboard

import "strings"

// Code is a machine-readable reason code. Codes are stable strings: compare
// them with ==, never parse error messages.
type Code string

// Codes the pipeline emits. Constraint-blocked codes are built from the
// constraint's name with [BlockedCode].
const (
	CodeCommitted = Code("COMMITTED") // a proposal or a direct write was committed

	// Belief validation (paper §6.3, t3–t5).
	CodeMissingEvidence    = Code("MISSING_EVIDENCE")    // a dependency has no percept, or the belief names none
	CodeStaleEvidence      = Code("STALE_EVIDENCE")      // a dependency is flagged stale or its TTL ran out
	CodeUnresolvedConflict = Code("UNRESOLVED_CONFLICT") // a conflicted dependency below the arbitration threshold
	CodeLowConfidence      = Code("LOW_CONFIDENCE")      // a dependency's confidence is below the minimum, or its source flags it low_confidence
	// CodeSupersededEvidence: a belief names, by id, an observation of a
	// percept kind that a newer observation in the trace has replaced.
	CodeSupersededEvidence = Code("SUPERSEDED_EVIDENCE")

	// Plan feasibility (t7).
	CodePlanFeasible           = Code("PLAN_FEASIBLE")
	CodePlanMissingBelief      = Code("PLAN_MISSING_BELIEF")
	CodePlanBeliefNotSatisfied = Code("PLAN_BELIEF_NOT_SATISFIED")
	// CodePlanUngrounded: a step's action declares no required beliefs (and is
	// not a safe fallback) or fewer than its registered spec demands.
	CodePlanUngrounded = Code("PLAN_UNGROUNDED_ACTION")

	// Action gating (t9).
	CodeNoCommittedBelief  = Code("NO_COMMITTED_BELIEF")
	CodeBeliefNotSatisfied = Code("BELIEF_NOT_SATISFIED")
	CodeNoPrediction       = Code("NO_PREDICTION")
	CodeNegativePrediction = Code("NEGATIVE_PREDICTION")
	// CodeUngroundedAction: an action that declares no required beliefs and is
	// not a registered safe fallback, or declares fewer than its spec needs.
	CodeUngroundedAction  = Code("UNGROUNDED_ACTION")
	CodeUnknownActionType = Code("UNKNOWN_ACTION_TYPE") // strict registry: unregistered type
	CodeNoFeasiblePlan    = Code("NO_FEASIBLE_PLAN")    // spec requires a plan; no committed plan has this action
	// CodeDuplicateAction: the action's once-key is used up in the
	// namespace, or an observation it rests on (through any belief)
	// already grounded a commit of its type and the spec is not
	// Repeatable. The refusal names the action that holds the key or,
	// for observations, the earliest commit of the type that used one.
	CodeDuplicateAction = Code("DUPLICATE_ACTION")
	// CodeOnceKeyMissing: a once-keyed action whose key cannot be read (a
	// field absent, or the key percept missing or failing its checks).
	CodeOnceKeyMissing = Code("ONCE_KEY_MISSING")

	// Rules and constraints.
	CodeRuleViolated = Code("RULE_VIOLATED") // a declarative rule evaluated to false (Decision.Rule names it)
	CodeRuleError    = Code("RULE_ERROR")    // a rule could not be evaluated (a missing field, a type error): fail closed

	// Predictions.
	CodePredictionMissingBelief = Code("PREDICTION_MISSING_BELIEF")

	// Record life cycle.
	CodeSupersededByCommit = Code("SUPERSEDED_BY_COMMIT") // a proposal replaced by its committed record
	CodeTTLExpired         = Code("TTL_EXPIRED")          // a record whose time to live ran out

	// Bad requests. These come with an error, except FIELD_MISMATCH, which
	// is how the gate rejects a proposal (a Decision, no error).
	CodeInvalidProposal  = Code("INVALID_PROPOSAL")  // malformed, already decided, or from another trace
	CodeInvalidReference = Code("INVALID_REFERENCE") // a reference to a record that does not exist in reach
	CodeFieldMismatch    = Code("FIELD_MISMATCH")    // a payload disagrees with a bound percept or a derived flag
	CodeInvalidInput     = Code("INVALID_INPUT")     // bad slot, mode, kind, trace, confidence, TTL or payload
	CodePermissionDenied = Code("PERMISSION_DENIED") // outside the handle's authority
)

// OK reports whether c records a positive decision (COMMITTED or
// PLAN_FEASIBLE).
func (c Code) OK() bool { return c == CodeCommitted || c == CodePlanFeasible }

// BlockedCode is the code an action gets when the named constraint blocks
// it: "<NAME>_BLOCKED". A plan step the constraint blocks gets it prefixed
// with "PLAN_": "PLAN_<NAME>_BLOCKED".
func BlockedCode(constraint string) Code {
	return Code(codeName(constraint) + "_BLOCKED")
}

// codeName upper-cases a constraint name and turns anything outside
// [A-Z0-9_] into '_' so that a code stays one token.
func codeName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			return r
		}
		return '_'
	}, name)
}

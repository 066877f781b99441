package reason

// The codes of the kernel's pipeline (package kernel). Constraint-blocked
// codes are built from the constraint's name with [Blocked].
const (
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
)

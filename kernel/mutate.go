//go:build bkmutate

package kernel

import "github.com/blackboardkernel/bk/internal/mutant"

// This file exists only in builds with the bkmutate tag, for mutation
// testing: each switch below disables one check of the gate, so that a
// test run can show that something notices when the check is gone
// (`make mutation`). The default build declares the same names as false
// constants (nomutate.go). The switches are registered with
// internal/mutant, which turns them on and off.

// Mutation switches; at most one is on.
var (
	mutPermissions         bool
	mutPersistentScope     bool
	mutMissingEvidence     bool
	mutSuperseded          bool
	mutStale               bool
	mutConflict            bool
	mutLowConfidence       bool
	mutBeliefSpec          bool
	mutReferences          bool
	mutNamespace           bool
	mutStrictActions       bool
	mutGrounding           bool
	mutMinBeliefs          bool
	mutRequirePlan         bool
	mutCommittedBelief     bool
	mutRecheck             bool
	mutUsedGrounding       bool
	mutOnceKey             bool
	mutPredictionGate      bool
	mutTrustedPredictions  bool
	mutGroundedPredictions bool
	mutDerivedFlags        bool
	mutBoundPercept        bool
	mutFailClosed          bool
	mutConstraints         bool
	mutAppliesTo           bool
	mutTypeMismatch        bool
	mutValidators          bool
	mutCommitOnce          bool
	mutActionExpiry        bool
	mutFiniteNumbers       bool
	// Mutation switches of the governance capability and of deciding a
	// committed action's evidence again.
	mutGovernedKeys   bool
	mutRecheckCurrent bool
	// Mutation switches of exact grounding and reserved kinds (issue 36). The study's adversary plays a planner on a
	// kernel that reserves nothing and derives no belief, so only tests judge
	// them.
	mutExactGrounding  bool
	mutReservedBeliefs bool
	mutReservedActions bool
	// Mutation switches of the once-key and grounding checks of the second
	// adversarial review.
	mutUsedObservation bool
	mutOnceNamespace   bool
	mutOnceEncoding    bool
	mutOnceCanon       bool
	mutRetiredHolder   bool
	mutRetireFence     bool
	mutOnceLegacy      bool
	// Mutation switches of the per-trace decision state .
	mutStateVersion    bool
	mutStateFold       bool
	mutSharedCache     bool
	mutPolicyTraceOpen bool
	// mutCheckpointTraceOpen lets a handle write the checkpoint trace.
	mutCheckpointTraceOpen bool
)

// The switches, registered in the order the gate runs the checks.
func init() {
	mutant.Register("github.com/blackboardkernel/bk/kernel",
		mutant.Def{Name: "permissions", Check: "a handle writes only the slots and modes of its role (Allowed); a role decides only slots it may propose in", On: &mutPermissions},
		mutant.Def{Name: "persistent_scope", Check: "planner and simulator handles cannot write persistent scope", On: &mutPersistentScope},
		mutant.Def{Name: "references", Check: "input refs, evidence refs and depends_on ids must name records in reach (INVALID_REFERENCE)", On: &mutReferences},
		mutant.Def{Name: "namespace", Check: "a kernel reads, cites and enforces only its own namespace's records and persistent constraints", On: &mutNamespace},
		// Played by tests only: every store refuses a non-finite number
		// too (a record's chain digest needs its canonical form), so the
		// adversary's payload_abuse cannot win without this check alone.
		mutant.Def{Name: "finite_numbers", Check: "payloads hold only finite numbers (NaN and infinities are INVALID_INPUT)", On: &mutFiniteNumbers, ByTests: true},
		mutant.Def{Name: "commit_once", Check: "only an active proposal can be decided (INVALID_PROPOSAL for a decided, expired or committed record)", On: &mutCommitOnce},
		mutant.Def{Name: "missing_evidence", Check: "a belief names evidence, and every dependency has an observation (MISSING_EVIDENCE)", On: &mutMissingEvidence},
		mutant.Def{Name: "belief_spec", Check: "a belief rests on the percepts its BeliefSpec requires (MISSING_EVIDENCE)", On: &mutBeliefSpec},
		mutant.Def{Name: "superseded", Check: "evidence is the current observation: a belief may not name a superseded one, and newer observations count at the gate (SUPERSEDED_EVIDENCE)", On: &mutSuperseded},
		mutant.Def{Name: "stale", Check: "evidence is fresh: not flagged stale, not past its TTL (STALE_EVIDENCE)", On: &mutStale},
		mutant.Def{Name: "conflict", Check: "conflicted evidence is arbitrated only at or above the threshold (UNRESOLVED_CONFLICT)", On: &mutConflict},
		mutant.Def{Name: "low_confidence", Check: "evidence below the minimum confidence, or flagged low_confidence by its source, is refused (LOW_CONFIDENCE)", On: &mutLowConfidence},
		mutant.Def{Name: "strict_actions", Check: "with strict actions, unregistered action types are refused (UNKNOWN_ACTION_TYPE)", On: &mutStrictActions},
		mutant.Def{Name: "grounding", Check: "a plan step or action that is not a safe fallback declares required beliefs (UNGROUNDED_ACTION)", On: &mutGrounding},
		mutant.Def{Name: "min_beliefs", Check: "it declares at least its spec's MinBeliefs (UNGROUNDED_ACTION)", On: &mutMinBeliefs},
		mutant.Def{Name: "require_plan", Check: "a RequirePlan action commits only as a step of a committed feasible plan (NO_FEASIBLE_PLAN)", On: &mutRequirePlan},
		mutant.Def{Name: "committed_belief", Check: "its required beliefs are committed and true (NO_COMMITTED_BELIEF, BELIEF_NOT_SATISFIED)", On: &mutCommittedBelief},
		mutant.Def{Name: "recheck", Check: "the evidence of its beliefs is re-checked against the trace at the gate", On: &mutRecheck},
		mutant.Def{Name: "used_grounding", Check: "a grounding grounds one commit per action type (DUPLICATE_ACTION)", On: &mutUsedGrounding},
		mutant.Def{Name: "prediction_gate", Check: "RequirePrediction: a counted, non-negative prediction exists (NO_PREDICTION, NEGATIVE_PREDICTION)", On: &mutPredictionGate},
		mutant.Def{Name: "trusted_predictions", Check: "only predictions of trusted writers count", On: &mutTrustedPredictions},
		mutant.Def{Name: "grounded_predictions", Check: "a prediction names committed beliefs to be committed and to count (PREDICTION_MISSING_BELIEF)", On: &mutGroundedPredictions},
		mutant.Def{Name: "type_mismatch", Check: "an action payload's type equals its kind (FIELD_MISMATCH)", On: &mutTypeMismatch},
		mutant.Def{Name: "derived_flags", Check: "derived flags are the kernel's: constraints read its computation, and a proposal may not contradict it (FIELD_MISMATCH)", On: &mutDerivedFlags},
		mutant.Def{Name: "applies_to", Check: "a constraint guards only the action types it names (none: all but safe fallbacks)", On: &mutAppliesTo},
		mutant.Def{Name: "bound_percept", Check: "a bound constraint's percept passes the evidence checks, and the proposal agrees with it (FIELD_MISMATCH)", On: &mutBoundPercept},
		mutant.Def{Name: "fail_closed", Check: "a constraint that cannot read its field blocks", On: &mutFailClosed},
		mutant.Def{Name: "constraints", Check: "an enabled constraint whose field is set blocks (<NAME>_BLOCKED)", On: &mutConstraints},
		mutant.Def{Name: "validators", Check: "custom validators and rules run on what passed the built-in checks (RULE_VIOLATED, ...)", On: &mutValidators},
		mutant.Def{Name: "once_key", Check: "an action's once-key is claimed in the store (DUPLICATE_ACTION, ONCE_KEY_MISSING)", On: &mutOnceKey},
		mutant.Def{Name: "committed_no_expiry", Check: "committed plans and actions never expire", On: &mutActionExpiry},
		mutant.Def{Name: "governed_keys", Check: "only the Governor claims once-keys: a handle's write with OnceKeys is refused (PERMISSION_DENIED)", On: &mutGovernedKeys,
			ByTests: true, Also: []string{"github.com/blackboardkernel/bk/toolgate"}},
		mutant.Def{Name: "recheck_current", Check: "RecheckAction: a committed action's beliefs and observations are still the current ones (SUPERSEDED_EVIDENCE)", On: &mutRecheckCurrent,
			ByTests: true, Also: []string{"github.com/blackboardkernel/bk/toolgate"}},
		mutant.Def{Name: "exact_grounding", Check: "a belief that names its evidence by record id grounds a plan or action only while that record is the current observation of its kind (SUPERSEDED_EVIDENCE)", On: &mutExactGrounding,
			ByTests: true, Also: []string{"github.com/blackboardkernel/bk/toolgate", "github.com/blackboardkernel/bk/examples/support_desk"}},
		mutant.Def{Name: "reserved_beliefs", Check: "a belief kind reserved to governance code (a tool's derived belief) is proposed only by the Governor as its writer (PERMISSION_DENIED)", On: &mutReservedBeliefs,
			ByTests: true, Also: []string{"github.com/blackboardkernel/bk/toolgate"}},
		mutant.Def{Name: "reserved_actions", Check: "an action type reserved to governance code (a tool's) is proposed only by the Governor as one of its writers, so no other commit holds its once-key (PERMISSION_DENIED)", On: &mutReservedActions,
			ByTests: true, Also: []string{"github.com/blackboardkernel/bk/toolgate"}},
		mutant.Def{Name: "used_observation", Check: "an observation grounds at most one commit of an action type, through any belief that rests on it (DUPLICATE_ACTION)", On: &mutUsedObservation},
		mutant.Def{Name: "once_namespace", Check: "once-keys are claimed and looked up in the kernel's namespace only", On: &mutOnceNamespace, ByTests: true,
			Also: []string{"github.com/blackboardkernel/bk/toolgate"}},
		mutant.Def{Name: "once_encoding", Check: "a once-key encodes namespace, action type, values and slot unambiguously (canonical JSON array)", On: &mutOnceEncoding, ByTests: true},
		mutant.Def{Name: "once_legacy", Check: "once-keys claimed by a release before the canonical key stay in force (DUPLICATE_ACTION)", On: &mutOnceLegacy, ByTests: true},
		mutant.Def{Name: "once_canon", Check: "once-key values are canonical: 0 and -0, 2 and 2.0 are one value", On: &mutOnceCanon, ByTests: true},
		mutant.Def{Name: "retired_holder", Check: "a once-key slot held by a retired action (denied, expired, refused before any attempt) does not block a later action", On: &mutRetiredHolder, ByTests: true,
			Also: []string{"github.com/blackboardkernel/bk/toolgate"}},
		mutant.Def{Name: "retire_fence", Check: "an action is retired only if its first attempt never started: Retire claims the attempt's fence key in the same batch", On: &mutRetireFence, ByTests: true,
			Also: []string{"github.com/blackboardkernel/bk/toolgate"}},
		mutant.Def{Name: "state_version", Check: "a batch's trace state is refused unless the trace is still at the version it was derived from (a change the state missed cannot be kept)", On: &mutStateVersion, ByTests: true, Also: []string{"github.com/blackboardkernel/bk/store/memstore"}},
		mutant.Def{Name: "shared_cache", Check: "the persistent constraints a decision enforces are listed again whenever any changed (TraceState.Shared), never taken from a stale cache", On: &mutSharedCache, ByTests: true, Also: []string{"github.com/blackboardkernel/bk/store/memstore"}},
		mutant.Def{Name: "state_fold", Check: "a stored trace state that misses a change (a write the kernel did not make) is not used: the kernel reads the trace", On: &mutStateFold, ByTests: true},
		mutant.Def{Name: "checkpoint_trace_reserved", Check: "trace bk.checkpoints is written only by the kernel's checkpoints: no handle can append a forged or junk checkpoint", On: &mutCheckpointTraceOpen, ByTests: true},
		mutant.Def{Name: "policy_trace_reserved", Check: "trace bk.policy.<namespace> is written only by kernels of that namespace: no other application can take a gate's policy trace (PERMISSION_DENIED)", On: &mutPolicyTraceOpen, ByTests: true,
			Also: []string{"github.com/blackboardkernel/bk/toolgate"}},
	)
}

//go:build bkmutate

package kernel

import (
	"fmt"
	"os"
)

// This file exists only in builds with the bkmutate tag, for mutation
// testing: each switch below disables one check of the gate, so that a
// test run can show that something notices when the check is gone
// (`make mutation`). The default build declares the same names as false
// constants (nomutate.go) and has neither these variables nor [Mutate].
//
// The environment variable BK_MUTATE names the switch a process starts
// with; [Mutate] changes it in-process between runs.

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
)

// Mutation is one switch of a bkmutate build: its name and the check it
// disables.
type Mutation struct {
	Name  string
	Check string
	on    *bool
}

// mutations lists the switches in the order the gate runs the checks.
var mutations = []Mutation{
	{"permissions", "a handle writes only the slots and modes of its role (Allowed); a role decides only slots it may propose in", &mutPermissions},
	{"persistent_scope", "planner and simulator handles cannot write persistent scope", &mutPersistentScope},
	{"references", "input refs, evidence refs and depends_on ids must name records in reach (INVALID_REFERENCE)", &mutReferences},
	{"namespace", "a kernel reads, cites and enforces only its own namespace's records and persistent constraints", &mutNamespace},
	{"finite_numbers", "payloads hold only finite numbers (NaN and infinities are INVALID_INPUT)", &mutFiniteNumbers},
	{"commit_once", "only an active proposal can be decided (INVALID_PROPOSAL for a decided, expired or committed record)", &mutCommitOnce},
	{"missing_evidence", "a belief names evidence, and every dependency has an observation (MISSING_EVIDENCE)", &mutMissingEvidence},
	{"belief_spec", "a belief rests on the percepts its BeliefSpec requires (MISSING_EVIDENCE)", &mutBeliefSpec},
	{"superseded", "evidence is the current observation: a belief may not name a superseded one, and newer observations count at the gate (SUPERSEDED_EVIDENCE)", &mutSuperseded},
	{"stale", "evidence is fresh: not flagged stale, not past its TTL (STALE_EVIDENCE)", &mutStale},
	{"conflict", "conflicted evidence is arbitrated only at or above the threshold (UNRESOLVED_CONFLICT)", &mutConflict},
	{"low_confidence", "evidence below the minimum confidence, or flagged low_confidence by its source, is refused (LOW_CONFIDENCE)", &mutLowConfidence},
	{"strict_actions", "with strict actions, unregistered action types are refused (UNKNOWN_ACTION_TYPE)", &mutStrictActions},
	{"grounding", "a plan step or action that is not a safe fallback declares required beliefs (UNGROUNDED_ACTION)", &mutGrounding},
	{"min_beliefs", "it declares at least its spec's MinBeliefs (UNGROUNDED_ACTION)", &mutMinBeliefs},
	{"require_plan", "a RequirePlan action commits only as a step of a committed feasible plan (NO_FEASIBLE_PLAN)", &mutRequirePlan},
	{"committed_belief", "its required beliefs are committed and true (NO_COMMITTED_BELIEF, BELIEF_NOT_SATISFIED)", &mutCommittedBelief},
	{"recheck", "the evidence of its beliefs is re-checked against the trace at the gate", &mutRecheck},
	{"used_grounding", "a grounding grounds one commit per action type (DUPLICATE_ACTION)", &mutUsedGrounding},
	{"prediction_gate", "RequirePrediction: a counted, non-negative prediction exists (NO_PREDICTION, NEGATIVE_PREDICTION)", &mutPredictionGate},
	{"trusted_predictions", "only predictions of trusted writers count", &mutTrustedPredictions},
	{"grounded_predictions", "a prediction names committed beliefs to be committed and to count (PREDICTION_MISSING_BELIEF)", &mutGroundedPredictions},
	{"type_mismatch", "an action payload's type equals its kind (FIELD_MISMATCH)", &mutTypeMismatch},
	{"derived_flags", "derived flags are the kernel's: constraints read its computation, and a proposal may not contradict it (FIELD_MISMATCH)", &mutDerivedFlags},
	{"applies_to", "a constraint guards only the action types it names (none: all but safe fallbacks)", &mutAppliesTo},
	{"bound_percept", "a bound constraint's percept passes the evidence checks, and the proposal agrees with it (FIELD_MISMATCH)", &mutBoundPercept},
	{"fail_closed", "a constraint that cannot read its field blocks", &mutFailClosed},
	{"constraints", "an enabled constraint whose field is set blocks (<NAME>_BLOCKED)", &mutConstraints},
	{"validators", "custom validators and rules run on what passed the built-in checks (RULE_VIOLATED, ...)", &mutValidators},
	{"once_key", "an action's once-key is claimed in the store (DUPLICATE_ACTION, ONCE_KEY_MISSING)", &mutOnceKey},
	{"committed_no_expiry", "committed plans and actions never expire", &mutActionExpiry},
}

// Mutations returns every switch of a bkmutate build, in gate order.
func Mutations() []Mutation {
	out := make([]Mutation, len(mutations))
	copy(out, mutations)
	for i := range out {
		out[i].on = nil
	}
	return out
}

// Mutate turns on the named switch and every other off; "" turns all off.
// It must not run while a kernel decides. An unknown name is an error.
func Mutate(name string) error {
	var found *bool
	for _, m := range mutations {
		*m.on = false
		if m.Name == name {
			found = m.on
		}
	}
	if name == "" {
		return nil
	}
	if found == nil {
		return fmt.Errorf("kernel: no mutation %q", name)
	}
	*found = true
	return nil
}

func init() {
	if err := Mutate(os.Getenv("BK_MUTATE")); err != nil {
		panic(err)
	}
}

//go:build !bkmutate

package kernel

// The mutation switches of a bkmutate build (see mutate.go) are constants
// here: every check is compiled in unconditionally, and the compiler drops
// the switch from each condition it guards, so the default build pays
// nothing for them.
const (
	mutPermissions         = false
	mutPersistentScope     = false
	mutMissingEvidence     = false
	mutSuperseded          = false
	mutStale               = false
	mutConflict            = false
	mutLowConfidence       = false
	mutBeliefSpec          = false
	mutReferences          = false
	mutNamespace           = false
	mutStrictActions       = false
	mutGrounding           = false
	mutMinBeliefs          = false
	mutRequirePlan         = false
	mutCommittedBelief     = false
	mutRecheck             = false
	mutUsedGrounding       = false
	mutOnceKey             = false
	mutPredictionGate      = false
	mutTrustedPredictions  = false
	mutGroundedPredictions = false
	mutDerivedFlags        = false
	mutBoundPercept        = false
	mutFailClosed          = false
	mutConstraints         = false
	mutAppliesTo           = false
	mutTypeMismatch        = false
	mutValidators          = false
	mutCommitOnce          = false
	mutActionExpiry        = false
	mutFiniteNumbers       = false
	mutGovernedKeys        = false
	mutRecheckCurrent      = false
	mutExactGrounding      = false
	mutReservedBeliefs     = false
	mutReservedActions     = false
	mutUsedObservation     = false
	mutOnceNamespace       = false
	mutOnceEncoding        = false
	mutOnceCanon           = false
	mutRetiredHolder       = false
	mutRetireFence         = false
	mutOnceLegacy          = false
	mutStateVersion        = false
	mutStateFold           = false
	mutSharedCache         = false
	mutPolicyTraceOpen     = false
	mutCheckpointTraceOpen = false
)

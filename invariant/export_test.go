package invariant

// The invariants' names, for the package's external tests.
const (
	EffectAction    = effectAction
	EffectGrounding = effectGrounding
	OnceHolder      = onceHolder
	ApprovalBinding = approvalBinding
	MaskedValue     = maskedValue
	DerivedSource   = derivedSource
	ScopeHeld       = scopeHeld
)

//go:build !bkmutate

package invariant

// The switches of mutate.go, compiled out.
const (
	mutEffectAction    = false
	mutEffectGrounding = false
	mutOnceHolder      = false
	mutApprovalBinding = false
	mutMaskedValue     = false
	mutDerivedSource   = false
	mutScopeHeld       = false
)

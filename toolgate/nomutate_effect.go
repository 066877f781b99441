//go:build !bkmutate

package toolgate

// The switch of mutate_effect.go, off for good in the default build.
const mutCallerEffect = false

// The switches of effect_error.go's records, off.
const (
	mutPanicFailed     = false
	mutEffectErrorText = false
)

// The retirement's own fence, off.
const mutRetireOwnFence = false

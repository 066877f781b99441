//go:build !bkmutate

package invariant

// The switches of mutate.go, compiled out.
const (
	mutEffectAction    = false
	mutEffectGrounding = false
)

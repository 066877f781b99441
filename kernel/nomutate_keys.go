//go:build !bkmutate

package kernel

// The switches of mutate_keys.go, off (see nomutate.go).
const (
	mutUsedObservation = false
	mutOnceNamespace   = false
	mutOnceEncoding    = false
	mutOnceCanon       = false
	mutRetiredHolder   = false
	mutRetireFence     = false
	mutOnceLegacy      = false
)

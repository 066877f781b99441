//go:build !bkmutate

package kernel

// The switches of mutate_grounding.go, compiled out (see nomutate.go).
const (
	mutExactGrounding  = false
	mutReservedBeliefs = false
	mutReservedActions = false
)

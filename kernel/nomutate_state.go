//go:build !bkmutate

package kernel

// The switches of mutate_state.go, off (see nomutate.go).
const (
	mutStateVersion = false
	mutStateFold    = false
	mutSharedCache  = false
)

//go:build !bkmutate

package toolgate

// The switches of mutate_controls.go, off.
const (
	mutControlsCall    = false
	mutControlsDecide  = false
	mutControlsTighten = false
	mutContextRef      = false
)

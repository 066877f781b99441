//go:build !bkmutate

package kernel

// The switches of mutate_governor.go, compiled out (see nomutate.go).
const (
	mutGovernedKeys   = false
	mutRecheckCurrent = false
)

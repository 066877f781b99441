//go:build !bkmutate

package pack

// The switches of mutate.go, compiled out.
const (
	mutFlags      = false
	mutProhibited = false
	mutReadOnly   = false
)

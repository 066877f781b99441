//go:build !bkmutate

package toolgate

// The switches of mutate_tools.go, off.
const (
	mutSchemaCheck = false
	mutDeriveOpen  = false
	mutDeriveExact = false
)

//go:build !bkmutate

package toolgate

// The switches of mutate_leaks.go, off.
const (
	mutSchemaQuote = false
	mutOversize    = false
)

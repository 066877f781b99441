//go:build !bkmutate

package sqlitestore

// Without the bkmutate tag every check is on (see mutate.go).
const (
	mutReadOnlyFiles = false
	mutCancelError   = false
	mutNoCheck       = false
)

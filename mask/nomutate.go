//go:build !bkmutate

package mask

// The mutation switches of mutate.go, off for good in the default build.
const (
	mutErase        = false
	mutKeyNamespace = false
)

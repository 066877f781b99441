//go:build !bkmutate

package memstore

// The switches of mutate.go, off.
func mutStateVersion() bool   { return false }
func mutSharedCache() bool    { return false }
func mutTraceNamespace() bool { return false }

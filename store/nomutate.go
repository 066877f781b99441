//go:build !bkmutate

package store

// The switch of mutate.go, off.
const mutTrustAll = false

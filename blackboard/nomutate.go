//go:build !bkmutate

package blackboard

// The switch of mutate.go, off.
const mutTrustAll = false

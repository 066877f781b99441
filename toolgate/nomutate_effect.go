//go:build !bkmutate

package toolgate

// The switch of mutate_effect.go, off for good in the default build.
const mutCallerEffect = false

// The switch of mutate_effect.go, off for good in the default build.
const mutRetireOwnFence = false

//go:build !bkmutate

package kernel

// See inert_mutate.go.
const mutInertText = false

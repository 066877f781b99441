//go:build !bkmutate

package inspect

// The switch of mutate_inert.go, compiled out.
const mutInertText = false

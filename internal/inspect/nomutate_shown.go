//go:build !bkmutate

package inspect

// The switch of mutate_shown.go, compiled out.
const mutShown = false

//go:build !bkmutate

package adaptive

// The switch of mutate.go, compiled out.
const mutLearnOnce = false

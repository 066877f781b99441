//go:build !bkmutate

package console

// The switches of mutate_console.go, compiled out.
const mutCSRF, mutIdentity, mutSVG = false, false, false

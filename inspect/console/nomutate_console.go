//go:build !bkmutate

package console

// The switches of mutate_console.go, compiled out.
const mutCSRF, mutIdentity, mutSVG, mutHost, mutTokenMode = false, false, false, false, false

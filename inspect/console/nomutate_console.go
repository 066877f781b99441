//go:build !bkmutate

package console

// The switches of mutate_console.go, compiled out.
const mutCSRF, mutIdentity, mutCaller = false, false, false

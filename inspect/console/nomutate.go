//go:build !bkmutate

package console

// The console's mutation switches, off in the default build (mutate.go
// declares them for the bkmutate build).
const mutCSRF, mutIdentity, mutSVG, mutHost, mutTokenMode = false, false, false, false, false

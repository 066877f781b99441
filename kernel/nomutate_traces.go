//go:build !bkmutate

package kernel

// The switch of mutate_traces.go, off (see nomutate.go).
const mutPolicyTraceOpen = false

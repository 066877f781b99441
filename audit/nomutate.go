//go:build !bkmutate

package audit

// The switch of mutate.go, compiled out.
const mutKernelOnly = false

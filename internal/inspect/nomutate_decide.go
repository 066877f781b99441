//go:build !bkmutate

package inspect

// The switches of mutate_decide.go, compiled out.
const mutApprovePending = false

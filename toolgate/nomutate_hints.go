//go:build !bkmutate

package toolgate

// The switch of mutate_hints.go, off.
const mutDuplicateHint = false

// The switch of mutRawErrorHint in mutate_hints.go, off.
const mutRawErrorHint = false

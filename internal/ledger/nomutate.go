//go:build !bkmutate

package ledger

// The switch of mutate.go, off.
const mutMissingTrace = false

//go:build !bkmutate

package replay

// The switch of mutate.go, off.
const mutPolicyHash = false

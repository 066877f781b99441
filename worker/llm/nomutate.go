//go:build !bkmutate

package llm

// The mutation switch of a bkmutate build (see mutate.go), compiled out.
const mutUsageSaturate = false

//go:build !bkmutate

package llm

// The mutation switch of a bkmutate build (see mutate.go), compiled out.
const mutUsageSaturate = false

// The switch of the compiled context's last result (mutate.go), off.
const mutCompiledReal = false

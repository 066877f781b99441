//go:build !bkmutate

package mcp

// mutSessionTrace is the mutation switch of the per-session default trace
// (see mutate.go); off in every build without the bkmutate tag.
const mutSessionTrace = false

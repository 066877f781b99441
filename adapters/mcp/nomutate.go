//go:build !bkmutate

package mcp

// mutSessionTrace is the mutation switch of the per-session default trace
// (see mutate.go); off in every build without the bkmutate tag.
const mutSessionTrace = false

// mutSubjectTrace and mutPrincipal are the switches of the subject in the
// default trace and of the calls' principal (see mutate.go); off.
const (
	mutSubjectTrace = false
	mutPrincipal    = false
)

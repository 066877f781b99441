//go:build !bkmutate

package inspect

// The inspector's mutation switches, off in the default build (mutate.go
// declares them for the bkmutate build).
const (
	mutApproverView   = false
	mutApprovePending = false
	mutInertText      = false
	mutShown          = false
)

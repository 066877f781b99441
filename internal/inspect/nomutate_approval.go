//go:build !bkmutate

package inspect

// The switch of mutate_approval.go, compiled out.
const mutApproverView = false

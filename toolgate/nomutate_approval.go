//go:build !bkmutate

package toolgate

// The switches of mutate_approval.go, compiled out.
const (
	mutRecheckEvidence          = false
	mutApproverView             = false
	mutRecheckYields            = false
	mutApprovalDigest           = false
	mutApproverCaller           = false
	mutApprovalClaim            = false
	mutEscalationClaimsApproval = false
)

//go:build !bkmutate

package toolgate

// The mutation switches of mutate.go, off for good in the default build.
const (
	mutApprovalClaim            = false
	mutApprovalDigest           = false
	mutApproverCaller           = false
	mutApproverView             = false
	mutArgBinding               = false
	mutBindCommitted            = false
	mutBindingsDeclared         = false
	mutBudgetCompose            = false
	mutCallerEffect             = false
	mutContextRef               = false
	mutControlsCall             = false
	mutControlsDecide           = false
	mutControlsTighten          = false
	mutDeriveExact              = false
	mutDeriveOpen               = false
	mutDuplicateHint            = false
	mutEffectErrorText          = false
	mutPanicFailed              = false
	mutEscalationClaimsApproval = false
	mutLeaseDeadline            = false
	mutLeaseLeft                = false
	mutMaskStore                = false
	mutOversize                 = false
	mutRawErrorHint             = false
	mutReadOnlyDeclared         = false
	mutRecheckEvidence          = false
	mutRecheckYields            = false
	mutRequestOnce              = false
	mutRequestPrincipal         = false
	mutRequestScope             = false
	mutRetireOwnFence           = false
	mutRetryKeyBinding          = false
	mutRetryKeyOnce             = false
	mutSchemaCheck              = false
	mutSchemaQuote              = false
	mutScopeDeclared            = false
	mutToolName                 = false
	mutUnkeyedRedrive           = false
)

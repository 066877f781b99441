package toolgate

// The checks a mutation switch can turn off (mutate.go), one small function
// each, so that the code a check guards reads the check by its name and no
// logic runs past a switch. In the default build each is constant true.

// approvalClaimed reports whether a decision on an action claims a once-key of the action and the decision it supersedes (always, but for the mutation switch
// toolgate.approval_claim).
func approvalClaimed() bool { return !mutApprovalClaim }

// approvalDigestBound reports whether a decision binds the digest of the action's committed arguments (always, but for the mutation switch
// toolgate.approval_digest).
func approvalDigestBound() bool { return !mutApprovalDigest }

// approverNotCaller reports whether an approver named as the caller that proposed an action cannot decide it (always, but for the mutation switch
// toolgate.approver_caller).
func approverNotCaller() bool { return !mutApproverCaller }

// approverViewFromAction reports whether Pending reads an action from the action itself, never from a decision record (always, but for the mutation switch
// toolgate.approver_view).
func approverViewFromAction() bool { return !mutApproverView }

// argsBound reports whether a call's arguments are checked against the tool's bindings (always, but for the mutation switch
// toolgate.arg_binding).
func argsBound() bool { return !mutArgBinding }

// bindingsDeclared reports whether a tool resting on beliefs must declare Bindings or Unbound (always, but for the mutation switch
// toolgate.bindings_declared).
func bindingsDeclared() bool { return !mutBindingsDeclared }

// budgetsCompose reports whether a call's own budget adds to the gate's rather than replacing it (always, but for the mutation switch
// toolgate.budget_compose).
func budgetsCompose() bool { return !mutBudgetCompose }

// callerEffectNeeded reports whether an action of a caller-driven tool runs only with its caller's effect (always, but for the mutation switch
// toolgate.caller_effect).
func callerEffectNeeded() bool { return !mutCallerEffect }

// committedBound reports whether a committed action whose grounding changed has its arguments checked against its own grounding (always, but for the mutation switch
// toolgate.arg_binding_committed).
func committedBound() bool { return !mutBindCommitted }

// contextRefChecked reports whether a call's context reference is checked (always, but for the mutation switch
// toolgate.context_ref).
func contextRefChecked() bool { return !mutContextRef }

// controlsAtCall reports whether an effectful tool's call is checked against the run controls before the kernel decides it (always, but for the mutation switch
// toolgate.controls_call).
func controlsAtCall() bool { return !mutControlsCall }

// controlsDecide reports whether the trace's run controls decide in the kernel's decision and before a waiting action starts (always, but for the mutation switch
// toolgate.controls_decide).
func controlsDecide() bool { return !mutControlsDecide }

// controlsTighten reports whether run controls may only be tightened (always, but for the mutation switch
// toolgate.controls_tighten).
func controlsTighten() bool { return !mutControlsTighten }

// deriveClosed reports whether a derived value or field that cannot be evaluated fails the derivation (always, but for the mutation switch
// toolgate.derive_fail_closed).
func deriveClosed() bool { return !mutDeriveOpen }

// deriveExact reports whether a derived belief rests on the exact result record (always, but for the mutation switch
// toolgate.derive_exact).
func deriveExact() bool { return !mutDeriveExact }

// duplicateHintTrue reports whether a DUPLICATE_ACTION hint says what became of the key's holder (always, but for the mutation switch
// toolgate.duplicate_hint).
func duplicateHintTrue() bool { return !mutDuplicateHint }

// effectErrorRecordable reports whether an effect's error text is recorded only when the effect marks it recordable (always, but for the mutation switch
// toolgate.effect_error_text).
func effectErrorRecordable() bool { return !mutEffectErrorText }

// errorTextHidden reports whether an effect's raw error text stays out of what the model is shown (always, but for the mutation switch
// toolgate.raw_error_hidden).
func errorTextHidden() bool { return !mutRawErrorHint }

// escalationClaimsApproval reports whether the escalation of an expired approval claims the approval's use (always, but for the mutation switch
// toolgate.escalation_claim).
func escalationClaimsApproval() bool { return !mutEscalationClaimsApproval }

// leaseDeadlineKept reports whether an attempt's effect ends a margin before its lease and no driver takes over until a margin after (always, but for the mutation switch
// toolgate.lease_deadline).
func leaseDeadlineKept() bool { return !mutLeaseDeadline }

// leaseLeftChecked reports whether an attempt whose write left less than the margin of its lease does not start its effect (always, but for the mutation switch
// toolgate.lease_left).
func leaseLeftChecked() bool { return !mutLeaseLeft }

// masksStored reports whether masked fields stay out of what the gate stores and records (always, but for the mutation switch
// toolgate.mask_store).
func masksStored() bool { return !mutMaskStore }

// oversizeShrunk reports whether arguments over the size limit are recorded by their size and digest (always, but for the mutation switch
// toolgate.oversize_refusal).
func oversizeShrunk() bool { return !mutOversize }

// panicUnknown reports whether an effect's panic leaves its outcome unknown, never failed (always, but for the mutation switch
// toolgate.effect_panic_unknown).
func panicUnknown() bool { return !mutPanicFailed }

// principalChecked reports whether a call made for another principal than its trace's request is refused (always, but for the mutation switch
// toolgate.request_principal).
func principalChecked() bool { return !mutRequestPrincipal }

// readOnlyDeclared reports whether only a tool that declares ReadOnly is taken for one that changes nothing (always, but for the mutation switch
// toolgate.read_only_declared).
func readOnlyDeclared() bool { return !mutReadOnlyDeclared }

// recheckEvidence reports whether an action that waited is decided again before its first attempt (always, but for the mutation switch
// toolgate.recheck_evidence).
func recheckEvidence() bool { return !mutRecheckEvidence }

// recheckYields reports whether a recheck refusal claims the first attempt's key (always, but for the mutation switch
// toolgate.recheck_yields).
func recheckYields() bool { return !mutRecheckYields }

// requestOnce reports whether a trace's request is recorded once (always, but for the mutation switch
// toolgate.request_once).
func requestOnce() bool { return !mutRequestOnce }

// requestScoped reports whether a call's arguments must lie within its trace's request (always, but for the mutation switch
// toolgate.request_scope).
func requestScoped() bool { return !mutRequestScope }

// retireFenceOwn reports whether a retirement whose refusal holds the first attempt's key fences on a key of its own (always, but for the mutation switch
// toolgate.retire_own_fence).
func retireFenceOwn() bool { return !mutRetireOwnFence }

// retryKeyBound reports whether a retry key is bound to the tool, caller and arguments of its first call (always, but for the mutation switch
// toolgate.retry_key_binding).
func retryKeyBound() bool { return !mutRetryKeyBinding }

// retryKeyOnce reports whether a retry key makes one action per trace (always, but for the mutation switch
// toolgate.retry_key_once).
func retryKeyOnce() bool { return !mutRetryKeyOnce }

// schemaChecked reports whether a call's arguments are checked against the tool's schema (always, but for the mutation switch
// toolgate.schema_check).
func schemaChecked() bool { return !mutSchemaCheck }

// schemaNoValue reports whether a schema refusal names the rule, never the argument's value (always, but for the mutation switch
// toolgate.schema_no_value).
func schemaNoValue() bool { return !mutSchemaQuote }

// scopeDeclared reports whether an effectful tool must declare Scope or Unscoped (always, but for the mutation switch
// toolgate.scope_declared).
func scopeDeclared() bool { return !mutScopeDeclared }

// toolNameChecked reports whether tool names are checked to be names (always, but for the mutation switch
// toolgate.tool_name).
func toolNameChecked() bool { return !mutToolName }

// unkeyedOnce reports whether an effect without a key is started at most once per call (always, but for the mutation switch
// toolgate.unkeyed_at_most_once).
func unkeyedOnce() bool { return !mutUnkeyedRedrive }

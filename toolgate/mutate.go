//go:build bkmutate

package toolgate

import "github.com/blackboardkernel/bk/internal/mutant"

// The gate's mutation switches (see internal/mutant for the scheme): each
// turns off one check, so that a test run shows which tests notice. The
// default build declares them as false constants (nomutate.go). Each is
// read by one small function whose only job is to read it (checks.go), so
// that no logic runs past a switch.
var (
	mutApprovalClaim            bool
	mutApprovalDigest           bool
	mutApproverCaller           bool
	mutApproverView             bool
	mutArgBinding               bool
	mutBindCommitted            bool
	mutBindingsDeclared         bool
	mutBudgetCompose            bool
	mutCallerEffect             bool
	mutContextRef               bool
	mutControlsCall             bool
	mutControlsDecide           bool
	mutControlsTighten          bool
	mutDeriveExact              bool
	mutDeriveOpen               bool
	mutDuplicateHint            bool
	mutEffectErrorText          bool
	mutPanicFailed              bool
	mutEscalationClaimsApproval bool
	mutLeaseDeadline            bool
	mutLeaseLeft                bool
	mutMaskStore                bool
	mutOversize                 bool
	mutRawErrorHint             bool
	mutReadOnlyDeclared         bool
	mutRecheckEvidence          bool
	mutRecheckYields            bool
	mutRequestOnce              bool
	mutRequestPrincipal         bool
	mutRequestScope             bool
	mutRetireOwnFence           bool
	mutRetryKeyBinding          bool
	mutRetryKeyOnce             bool
	mutSchemaCheck              bool
	mutSchemaQuote              bool
	mutScopeDeclared            bool
	mutToolName                 bool
	mutUnkeyedRedrive           bool
)

func init() {
	mutant.Register("github.com/blackboardkernel/bk/toolgate",
		mutant.Def{Name: "toolgate.approval_claim", Check: "a decision on an action claims a once-key of (action, the decision it supersedes) in its own batch: of decisions made at once over one store exactly one is written, the others are ErrDecided", On: &mutApprovalClaim},
		mutant.Def{Name: "toolgate.approval_digest", Check: "an approval or denial binds the digest of the action's committed arguments: another digest is refused (ErrInvalidInput) and nothing is recorded or run", On: &mutApprovalDigest},
		mutant.Def{Name: "toolgate.approver_caller", Check: "an approver named as the gate caller that proposed the action (its writer is caller:NAME) cannot decide it (ErrPermission), whether through Approve, bk approve or bk serve", On: &mutApproverCaller,
			Also: []string{"github.com/blackboardkernel/bk/internal/inspect", "github.com/blackboardkernel/bk/inspect/console"}},
		mutant.Def{Name: "toolgate.approver_view", Check: "Pending shows a committed action of the gate's, its tool and arguments read from the action itself, never from a decision record's context", On: &mutApproverView},
		mutant.Def{Name: "toolgate.arg_binding", On: &mutArgBinding,
			Check: "a call's arguments follow from the observations its grounding rests on, as the tool's bindings say (ARGUMENT_NOT_BOUND)"},
		mutant.Def{Name: "toolgate.arg_binding_committed", On: &mutBindCommitted,
			Check: "a committed action whose kernel grounding is not the one checked before the decision has its arguments checked against its own grounding, and never runs if they break a binding (ARGUMENT_NOT_BOUND)"},
		mutant.Def{Name: "toolgate.bindings_declared", On: &mutBindingsDeclared,
			Check: "New refuses a tool resting on beliefs that declares neither Bindings nor Unbound"},
		mutant.Def{Name: "toolgate.budget_compose", On: &mutBudgetCompose, Also: []string{"github.com/blackboardkernel/bk/worker/llm"},
			Check: "a call's own budget adds to the gate's, never replaces it: every limit that applies is checked (BUDGET_EXCEEDED)"},
		mutant.Def{Name: "toolgate.caller_effect", On: &mutCallerEffect,
			Check: "an action of a caller-driven tool never starts without the caller's effect: Execute, Recover and Resolve answer EFFECT_UNAVAILABLE, record nothing and leave its approval and keys to the caller's retry"},
		mutant.Def{Name: "toolgate.context_ref", On: &mutContextRef,
			Check: "a call's compiled context is recorded only when it names a compiled_context record of the call's trace written by the kernel: a forged reference is CONTEXT_INVALID"},
		mutant.Def{Name: "toolgate.controls_call", On: &mutControlsCall,
			Check: "a call of an effectful tool that the trace's run controls forbid (read_only, or the tool prohibited) is refused before the kernel, with READ_ONLY_MODE or TOOL_PROHIBITED: nothing is proposed"},
		mutant.Def{Name: "toolgate.controls_decide", On: &mutControlsDecide,
			Check: "the kernel decides every tool's action against the trace's run controls (failing closed on a controls record the gate did not write), and an action not yet started is refused for good when executed, resumed or recovered in a trace that now forbids it: an earlier approval never runs it"},
		mutant.Def{Name: "toolgate.controls_tighten", On: &mutControlsTighten,
			Check: "run controls only tighten: a Restrict that would loosen them is ErrPermission and records nothing"},
		mutant.Def{Name: "toolgate.derive_exact", On: &mutDeriveExact, Also: []string{"github.com/blackboardkernel/bk/examples/support_desk"},
			Check: "a derived belief depends on the result record it was computed from, by id, never on the result kind's current observation (SUPERSEDED_EVIDENCE)"},
		mutant.Def{Name: "toolgate.derive_fail_closed", On: &mutDeriveOpen,
			Check: "a derived belief whose rule cannot be evaluated over a result (a missing field, a non-bool value) is not proposed: the derivation fails closed"},
		mutant.Def{Name: "toolgate.duplicate_hint", Check: "a DUPLICATE_ACTION hint says the action was taken only when its holder executed (pending, running, refused otherwise)", On: &mutDuplicateHint},
		mutant.Def{Name: "toolgate.effect_error_text", On: &mutEffectErrorText,
			Check: "the raw text of an effect's error is never stored: a record keeps its kind, or the masked text of a Recordable error"},
		mutant.Def{Name: "toolgate.effect_panic_unknown", On: &mutPanicFailed,
			Check: "an effect that panics is EFFECT_UNKNOWN (it may have acted), never EFFECT_FAILED; the operator's logger gets the panic and its stack, the store neither"},
		mutant.Def{Name: "toolgate.escalation_claim", Check: "the escalation of an expired approval claims the approval's use, as a new decision superseding it does: a driver that read the approval as the latest cannot escalate the action beside a fresh approval", On: &mutEscalationClaimsApproval},
		mutant.Def{Name: "toolgate.lease_deadline", On: &mutLeaseDeadline,
			Check: "an attempt's effect loses its context a margin before the deadline its record holds, and no driver takes over until a margin after it (exactly once under a slow store)"},
		mutant.Def{Name: "toolgate.lease_left", On: &mutLeaseLeft,
			Check: "an attempt whose write left less than the margin of its lease does not start its effect"},
		mutant.Def{Name: "toolgate.mask_store", On: &mutMaskStore,
			Check: "a masked field's value never reaches the store: actions, decision records and results hold its keyed hash"},
		mutant.Def{Name: "toolgate.oversize_refusal", On: &mutOversize,
			Check: "an argument too large to store is a refusal with a decision record holding its size and digest, never an error that ends the run"},
		mutant.Def{Name: "toolgate.raw_error_hidden", On: &mutRawErrorHint,
			Check: "an effect's raw error text (a panic's message, a stack trace) never reaches the model: the hint and Result.ForModel carry the code and the failure's kind"},
		mutant.Def{Name: "toolgate.read_only_declared", On: &mutReadOnlyDeclared,
			Check: "a read_only trace runs only tools that declare ReadOnly: a tool that rests on no belief (an email) is still an effect, refused with READ_ONLY_MODE and not surfaced"},
		mutant.Def{Name: "toolgate.recheck_evidence", Check: "an action that waited is decided again before its first attempt: stale, superseded or used-up evidence, or a rule that no longer holds, refuses it for good (STALE_EVIDENCE, ...)", On: &mutRecheckEvidence},
		mutant.Def{Name: "toolgate.recheck_yields", Check: "a recheck refusal claims the first attempt's key too, so it never becomes the result of an attempt another driver started", On: &mutRecheckYields},
		mutant.Def{Name: "toolgate.request_once", On: &mutRequestOnce,
			Check: "a trace's request is recorded once for good: RecordRequest of another request is ErrDuplicateKey and records nothing"},
		mutant.Def{Name: "toolgate.request_principal", On: &mutRequestPrincipal,
			Check: "a call made for another principal than the trace's recorded request is OUT_OF_SCOPE, whatever the tool"},
		mutant.Def{Name: "toolgate.request_scope", On: &mutRequestScope, Also: []string{"github.com/blackboardkernel/bk/examples/support_desk"},
			Check: "a call of a scoped tool whose argument is not within the trace's recorded request (a refund of another order than the ticket's), or made in a trace with no request, is OUT_OF_SCOPE, before the kernel and as the kernel decides: nothing runs"},
		mutant.Def{Name: "toolgate.retire_own_fence", On: &mutRetireOwnFence,
			Check: "an action refused for good by the recheck or the run controls before any attempt frees its once-key: a later call of the same order in another trace runs once"},
		mutant.Def{Name: "toolgate.retry_key_binding", On: &mutRetryKeyBinding,
			Check: "a retry key is bound to the tool, caller and arguments that used it: another call under it is RETRY_KEY_CONFLICT and learns nothing of the first"},
		mutant.Def{Name: "toolgate.retry_key_once", On: &mutRetryKeyOnce,
			Check: "a retry key makes one action per trace: a retry with the same key gets the recorded decision and result, and the effect never runs twice"},
		mutant.Def{Name: "toolgate.schema_check", On: &mutSchemaCheck,
			Check: "a call whose arguments do not fit the tool's JSON Schema (bounds, patterns, nested objects, arrays) is INVALID_ARGUMENTS and never reaches the kernel"},
		mutant.Def{Name: "toolgate.schema_no_value", On: &mutSchemaQuote,
			Check: "a schema refusal names the argument and the rule it broke, never the value: no masked value in an INVALID_ARGUMENTS record"},
		mutant.Def{Name: "toolgate.scope_declared", On: &mutScopeDeclared,
			Check: "New refuses an effectful tool (not ReadOnly) that declares neither Scope nor Unscoped, naming the tool"},
		mutant.Def{Name: "toolgate.tool_name", On: &mutToolName,
			Check: "a tool name is 1 to 64 of A-Z, a-z, 0-9, _, . and - at registration, and a call naming anything else is TOOL_UNKNOWN with the name escaped in its record"},
		mutant.Def{Name: "toolgate.unkeyed_at_most_once", On: &mutUnkeyedRedrive,
			Check: "an effect without a once-key (not Idempotent, not read-only) is started at most once per call: an attempt that began and left no result is EFFECT_UNKNOWN, never started again"},
	)
}

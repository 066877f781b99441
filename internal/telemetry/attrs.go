package telemetry

// The attributes the kernel and the gate put on their spans, metrics and
// debug logs (docs/observability.md has the full table).
const (
	AttrNamespace   = "bk.namespace"    // the kernel's namespace
	AttrTraceID     = "bk.trace_id"     // the blackboard trace (episode) id
	AttrSlot        = "bk.slot"         // the slot written or decided
	AttrKind        = "bk.kind"         // the record's kind (an action type, a tool's action)
	AttrRecordID    = "bk.record_id"    // the record written, or the proposal decided
	AttrCommittedID = "bk.committed_id" // the record a commit wrote
	AttrRole        = "bk.role"         // the role of the handle that asked
	AttrWriter      = "bk.writer"       // the writer id of that handle
	AttrCode        = "bk.code"         // the resulting code
	AttrRule        = "bk.rule"         // the constraint or rule that decided a refusal
	AttrFailed      = "bk.failed"       // the record that failed the check
	AttrRootCause   = "bk.root_cause"   // the deepest cause of a refusal
	AttrExpired     = "bk.expired"      // how many records an expiry marked
)

// The OpenTelemetry GenAI semantic-convention attributes the tool-call gate
// sets on a tool call's span, and the gate's own.
const (
	AttrGenAIOperation = "gen_ai.operation.name" // "execute_tool"
	AttrGenAIToolName  = "gen_ai.tool.name"
	AttrGenAIToolCall  = "gen_ai.tool.call.id"
	AttrGenAIToolType  = "gen_ai.tool.type"   // "function"
	AttrCallCaller     = "bk.toolgate.caller" // the contract the call was made under
	AttrActionID       = "bk.action_id"       // the committed action
	AttrReceipt        = "bk.receipt"         // the chain link of the decision record (package chain)
	AttrContext        = "bk.context"         // the compiled context the call names (toolgate.Call.Context), once checked
	AttrAttempt        = "bk.attempt"         // the effect attempt's number
	AttrOutcome        = "bk.outcome"         // a call's outcome, an effect's status
	// AttrBudgetPrefix prefixes the figures of the budget snapshot a call
	// is checked against (see toolgate.Config.Budget): bk.budget.run_id,
	// bk.budget.pressure, bk.budget.used.tool_calls, ...
	AttrBudgetPrefix = "bk.budget."
)

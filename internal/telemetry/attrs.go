package telemetry

// The OpenTelemetry GenAI semantic-convention attributes the tool-call gate
// sets on a tool call's span, and the gate's own.
const (
	AttrGenAIOperation = "gen_ai.operation.name" // "execute_tool"
	AttrGenAIToolName  = "gen_ai.tool.name"
	AttrGenAIToolCall  = "gen_ai.tool.call.id"
	AttrGenAIToolType  = "gen_ai.tool.type"   // "function"
	AttrCallCaller     = "bk.toolgate.caller" // the contract the call was made under
	AttrActionID       = "bk.action_id"       // the committed action
	AttrContext        = "bk.context"         // the compiled context the call names (toolgate.Call.Context), once checked
	AttrAttempt        = "bk.attempt"         // the effect attempt's number
	AttrOutcome        = "bk.outcome"         // a call's outcome, an effect's status
	// AttrBudgetPrefix prefixes the figures of the budget snapshot a call
	// is checked against (see toolgate.WithBudget): bk.budget.run_id,
	// bk.budget.pressure, bk.budget.used.tool_calls, ...
	AttrBudgetPrefix = "bk.budget."
)

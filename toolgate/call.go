package toolgate

import (
	"encoding/json"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
)

// Spec is a tool as a model is shown it: the shape of OpenAI-compatible
// function tools, MCP tools and most frameworks' tool declarations.
type Spec struct {
	Name        string          `json:"name"`                  // the tool's name
	Description string          `json:"description,omitempty"` // what it does, for the model
	Parameters  json.RawMessage `json:"parameters,omitempty"`  // a JSON Schema object
}

// Call is one tool call an agent's model made, as the agent loop hands it
// to the gate.
type Call struct {
	// ID is the framework's call id, when it has one; it is recorded in
	// the decision record.
	ID string `json:"id,omitempty"`
	// Tool is the tool's name as the model called it.
	Tool string `json:"tool"`
	// Args are the model's arguments: a JSON object.
	Args json.RawMessage `json:"args"`
	// Caller names the calling worker's contract.
	Caller string `json:"caller"`
	// TraceID is the episode the call belongs to.
	TraceID string `json:"trace_id"`
	// Intent, when set, names the intent the call serves; with intents
	// configured, a call must name one that allows the tool.
	Intent string `json:"intent,omitempty"`
	// Budget, when set, is charged before anything else is checked: its
	// loop guard, then its run's tool-call budget. It adds to the gate's
	// [WithBudget], never replaces it: every limit of both applies. A
	// sub-agent lane passes its own sub-run and guard here. It is not
	// encoded.
	Budget *Budget `json:"-"`
}

// Result is the gate's answer to a call. It is a value for the agent loop,
// not an error: a refusal goes back to the model as the tool's result.
type Result struct {
	// Outcome says what the gate did with the call.
	Outcome audit.Outcome `json:"outcome"`
	// Code is the typed reason: the refusal's code (the gate's or the
	// kernel's), APPROVAL_REQUIRED while the action waits for approval,
	// EFFECT_SUCCEEDED once the effect ran, or the failure's code.
	Code blackboard.Code `json:"code"`
	// RootCause is the deepest cause of a refusal or a failure.
	RootCause kernel.Cause `json:"root_cause,omitzero"`
	// Hint is a short repair hint written for the model.
	Hint string `json:"hint,omitempty"`
	// ActionID is the committed action, when there is one.
	ActionID string `json:"action_id,omitempty"`
	// ApprovalID names what an approver must approve (the action id).
	ApprovalID string `json:"approval_id,omitempty"`
	// DecisionID identifies the latest decision record of the call: the
	// refusal, the commit (pending approval), the result or the
	// escalation.
	DecisionID string `json:"decision_id,omitempty"`
	// Output is the effect's result, when it ran and succeeded. For a
	// Failed call whose failure is typed, it is the typed signal instead
	// (execution_status, category, error, retryable; see
	// failure.Failure.Payload), which [Result.Failure] reads back.
	Output blackboard.Payload `json:"output,omitempty"`
	// FallbackID is the safe fallback action the gate committed instead
	// of a call whose approval was denied or expired.
	FallbackID string `json:"fallback_id,omitempty"`
	// Derived says what became of each belief the tool's result derives
	// ([Tool.Derives]), in declaration order, on the call that recorded
	// the result.
	Derived []Derived `json:"derived,omitempty"`

	// refusal is the budget's refusal behind a BUDGET_EXCEEDED or
	// LOOP_DETECTED result, kept for [Result.Failure].
	refusal error
}

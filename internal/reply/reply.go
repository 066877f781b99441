package reply

import (
	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/reason"
)

// Content is what a model is shown of a gate's result: each field only
// when set. It never holds an effect's error text: a failed call shows its
// code, the typed failure's status and category, and the hint; the text (a
// panic's message, a stack trace, an internal error) stays in the
// decision record, for the operator.
type Content struct {
	Outcome audit.Outcome `json:"outcome"`
	Code    reason.Code   `json:"code,omitempty"`
	// RootCause and RootRecord are the deepest cause's code and the
	// record it names (the stale observation, say).
	RootCause  reason.Code `json:"root_cause,omitempty"`
	RootRecord string      `json:"root_cause_record,omitempty"`
	// Status and Category are the typed failure's kind of a failed call.
	Status   failure.ExecStatus `json:"execution_status,omitempty"`
	Category failure.Category   `json:"category,omitempty"`
	// Hint is the repair hint.
	Hint string `json:"hint,omitempty"`
	// ApprovalID names the action that waits for approval.
	ApprovalID string `json:"approval_id,omitempty"`
	// Output is the effect's output, of an executed call only.
	Output blackboard.Payload `json:"output,omitempty"`
	// OutputError says that the output could not be encoded as JSON and
	// was left out.
	OutputError string `json:"output_error,omitempty"`
}

// IsError reports whether a result of outcome o is an error to the model's
// framework (MCP's isError, ADK's error flag): a refusal or a failure.
func IsError(o audit.Outcome) bool {
	return o == audit.OutcomeRefused || o == audit.OutcomeFailed
}

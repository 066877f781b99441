package toolgate

import (
	"encoding/json"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/failure"
)

// Reply is a [Result] as a model is shown it, in the forms frameworks
// hand a tool's result back: text (an OpenAI-compatible "tool" message),
// structured content and an error flag (MCP's structuredContent and
// isError). Build it with [Result.ForModel].
type Reply struct {
	// Text is Content as one line of JSON.
	Text string
	// Content is what the model is shown.
	Content ReplyContent
	// IsError reports a call that was refused or failed.
	IsError bool
}

// ReplyContent is what a model is shown of a Result: each field only when
// set. It never holds an effect's error text: a failed call shows its code,
// the typed failure's status and category, and the hint; the text (a
// panic's message, a stack trace, an internal error) stays in the
// decision record, for the operator.
type ReplyContent struct {
	Outcome audit.Outcome   `json:"outcome"`
	Code    blackboard.Code `json:"code,omitempty"`
	// RootCause and RootRecord are the deepest cause's code and the
	// record it names (the stale observation, say).
	RootCause  blackboard.Code `json:"root_cause,omitempty"`
	RootRecord string          `json:"root_cause_record,omitempty"`
	// Status and Category are the typed failure's kind ([Result.Failure])
	// of a failed call.
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

// ForModel renders r for the model that made the call: the one rendering
// every agent loop and adapter hands back, so that a model reads the same
// answer whatever the framework. The text is compact JSON, for example
//
//	{"outcome":"refused","code":"RULE_VIOLATED","root_cause":"RULE_VIOLATED","hint":"refund at most the charged amount"}
//	{"outcome":"failed","code":"EFFECT_FAILED","root_cause":"EFFECT_FAILED","root_cause_record":"percepts:t:7","execution_status":"FAILED_UNKNOWN","category":"unknown","hint":"The tool failed. Do not retry unless the user asks."}
//
// An output that cannot be encoded as JSON is left out and replaced by
// OutputError. The Reply shares the output's values with r. A masked
// output field ([Tool.Masked]) holds its real value: the reply is for the
// model's conversation, never for a record ([Result.ForRecord]).
func (r Result) ForModel() Reply {
	return r.reply(r.Output)
}

// ForRecord renders r as [Result.ForModel] does, with each masked output
// field ([Tool.Masked]) holding its masked form, as the store holds it:
// the rendering for anything that is itself recorded, such as the last
// result a compiled context shows the model (package pack). For a tool
// that masks nothing it is ForModel.
func (r Result) ForRecord() Reply {
	if r.stored != nil && masksStored() {
		return r.reply(r.stored)
	}
	return r.reply(r.Output)
}

// reply renders r with out as the output of an executed call.
func (r Result) reply(out blackboard.Payload) Reply {
	c := ReplyContent{Outcome: r.Outcome, Code: r.Code, RootCause: r.RootCause.Code, RootRecord: r.RootCause.Record,
		Hint: r.Hint, ApprovalID: r.ApprovalID}
	switch {
	case r.Outcome == audit.OutcomeExecuted:
		c.Output = out
	case r.Outcome == audit.OutcomeFailed:
		if f, ok := r.Failure(); ok {
			c.Status, c.Category = f.Status(), f.Category()
		}
		if !errorTextHidden() {
			c.Output = r.Output
		}
	}
	b, err := json.Marshal(c)
	if err != nil {
		c.Output, c.OutputError = nil, "the tool's output could not be encoded as JSON"
		b, _ = json.Marshal(c) // only strings are left
	}
	return Reply{Text: string(b), Content: c, IsError: r.Outcome == audit.OutcomeRefused || r.Outcome == audit.OutcomeFailed}
}

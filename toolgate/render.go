package toolgate

import (
	"encoding/json"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/reply"
	"github.com/blackboardkernel/bk/reason"
)

// ForModel renders r for the model that made the call, as the text of the
// tool's result: the one rendering every agent loop and adapter hands
// back, so that a model reads the same answer whatever the framework. It
// is one line of compact JSON, each field only when set: outcome, code,
// root_cause and root_cause_record (the deepest cause and the record it
// names), execution_status and category (a failed call's typed failure,
// [Result.Failure]), hint, approval_id (the action that waits for
// approval) and output (an executed call's), for example
//
//	{"outcome":"refused","code":"RULE_VIOLATED","root_cause":"RULE_VIOLATED","hint":"refund at most the charged amount"}
//	{"outcome":"failed","code":"EFFECT_FAILED","root_cause":"EFFECT_FAILED","root_cause_record":"percepts:t:7","execution_status":"FAILED_UNKNOWN","category":"unknown","hint":"The tool failed. Do not retry unless the user asks."}
//
// It never holds an effect's error text (a panic's message, a stack
// trace, an internal error), which stays in the decision record, for the
// operator. An output that cannot be encoded as JSON is left out and
// replaced by output_error. A masked output field ([Tool.Masked]) holds its
// real value: the text is for the model's conversation, never for a
// record ([Result.ForRecord]). A refused or failed call is one a
// framework flags as an error (MCP's isError).
func (r Result) ForModel() string {
	return r.render(r.Output)
}

// ForRecord renders r as [Result.ForModel] does, with each masked output
// field ([Tool.Masked]) holding its masked form, as the store holds it:
// the rendering for anything that is itself recorded, such as the last
// result a compiled context shows the model (package pack). For a tool
// that masks nothing it is ForModel.
func (r Result) ForRecord() string {
	if r.stored != nil && masksStored() {
		return r.render(r.stored)
	}
	return r.render(r.Output)
}

// render renders r with out as the output of an executed call.
func (r Result) render(out blackboard.Payload) string {
	c := reply.Content{Outcome: r.Outcome, Code: r.Code, RootCause: r.RootCause.Code, RootRecord: r.RootCause.Record,
		Hint: r.Hint}
	if r.Outcome == audit.OutcomePendingApproval || r.Code == reason.ApprovalMismatch {
		c.ApprovalID = r.ActionID // what the person is (again) asked to approve
	}
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
	return string(b)
}

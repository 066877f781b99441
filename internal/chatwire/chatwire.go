package chatwire

import (
	"bytes"
	"encoding/json"
)

// Message is one chat message.
type Message struct {
	// Role is "system", "user", "assistant" or "tool".
	Role string `json:"role"`
	// Content is the message's text. An assistant message that only calls
	// tools has none; it is then sent as null.
	Content string `json:"content"`
	// ToolCalls are the tool calls of an assistant message.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is, on a "tool" message, the id of the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// MarshalJSON writes the message in the chat completions format: content
// is null on an assistant message that has tool calls and no text, as the
// OpenAI API sends it, and a string otherwise.
func (m Message) MarshalJSON() ([]byte, error) {
	type wire struct {
		Role       string     `json:"role"`
		Content    *string    `json:"content"`
		ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
		ToolCallID string     `json:"tool_call_id,omitempty"`
	}
	w := wire{Role: m.Role, Content: &m.Content, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID}
	if m.Content == "" && len(m.ToolCalls) > 0 {
		w.Content = nil
	}
	return json.Marshal(w)
}

// ToolCall is one tool call a model made, in the chat completions format:
// {"id": ..., "type": "function", "function": {"name": ..., "arguments":
// "..."}}.
type ToolCall struct {
	// ID is the call's id, which the "tool" message answering it repeats.
	// Some servers send none; the agent of package worker/llm then makes one up.
	ID string `json:"id"`
	// Type is "function", the only kind of tool this package speaks.
	Type string `json:"type"`
	// Function is the function called and its arguments.
	Function FunctionCall `json:"function"`
}

// FunctionCall is the function a ToolCall calls.
type FunctionCall struct {
	// Name is the tool's name as the model wrote it.
	Name string `json:"name"`
	// Arguments is the text of the arguments as the model wrote it: meant
	// to be a JSON object, but nothing guarantees that it is valid JSON.
	Arguments string `json:"arguments"`
}

// UnmarshalJSON reads a function call. The API sends arguments as a string
// holding JSON; some OpenAI-compatible servers send the object itself, which
// is read as its JSON text. Absent or null arguments read as "".
func (f *FunctionCall) UnmarshalJSON(data []byte) error {
	var w struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	f.Name, f.Arguments = w.Name, ""
	raw := bytes.TrimSpace(w.Arguments)
	switch {
	case len(raw) == 0 || string(raw) == "null":
	case raw[0] == '"':
		if err := json.Unmarshal(raw, &f.Arguments); err != nil {
			return err
		}
	default:
		f.Arguments = string(raw)
	}
	return nil
}

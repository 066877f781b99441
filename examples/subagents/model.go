package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/blackboardkernel/bk/internal/chatwire"
)

// script is how the scripted model behaves in one case.
type script struct {
	// docs is the version of the docs the researcher reads first.
	docs string
	// brokenDraft makes the coder's first draft fail to parse.
	brokenDraft bool
	// dryRun makes the executor try a dry run before the real one.
	dryRun bool
	// dithers makes the researcher read the same docs again and again.
	dithers bool
	// prompt and completion are the tokens each call reports.
	prompt, completion int
}

// model is a chat completions endpoint in the process: an
// http.RoundTripper that answers every request from the script, so the
// llm client talks to it exactly as it would to a server, and nothing
// leaves the process.
type model struct{ s script }

// The source the coder writes: its first draft misses a colon.
const (
	goodSource   = "def fetch(endpoint):\n    return get(endpoint)\n"
	brokenSource = "def fetch(endpoint)\n    return get(endpoint)\n"
)

// chatMessage, toolCall and functionCall are the parts of the chat
// completions format the scripted model reads and writes.
type (
	chatMessage  = chatwire.Message
	toolCall     = chatwire.ToolCall
	functionCall = chatwire.FunctionCall
)

// RoundTrip answers a chat completions request from the script.
func (m model) RoundTrip(req *http.Request) (*http.Response, error) {
	var body struct {
		Messages []chatMessage `json:"messages"`
		Tools    []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.NewDecoder(req.Body).Decode(&body); err != nil {
		return nil, err
	}
	req.Body.Close()
	content, calls := m.answer(body.Messages, len(body.Tools) > 0)
	msg := map[string]any{"role": "assistant", "content": content}
	finish := "stop"
	if len(calls) > 0 {
		msg["tool_calls"], finish = calls, "tool_calls"
	}
	out, err := json.Marshal(map[string]any{
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage": map[string]any{"prompt_tokens": m.s.prompt, "completion_tokens": m.s.completion,
			"total_tokens": m.s.prompt + m.s.completion},
	})
	if err != nil {
		return nil, err
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(out)), ContentLength: int64(len(out)), Request: req}, nil
}

// answer decides the next message from the conversation: which worker is
// asking (the system prompt), what it was told (the user message) and how
// many of its tool calls came back.
func (m model) answer(msgs []chatMessage, tools bool) (string, []toolCall) {
	var system, user string
	results := 0
	for _, msg := range msgs {
		switch msg.Role {
		case "system":
			system = msg.Content
		case "user":
			user = msg.Content
		case "tool":
			results++
		}
	}
	if !tools {
		return "done: " + firstLine(user), nil
	}
	call := func(tool string, args any) []toolCall {
		b, _ := json.Marshal(args)
		return []toolCall{{ID: fmt.Sprintf("%s_%d", tool, results+1), Type: "function",
			Function: functionCall{Name: tool, Arguments: string(b)}}}
	}
	switch {
	case strings.Contains(system, "researcher"):
		v := m.s.docs
		switch {
		case m.s.dithers:
		case strings.Contains(user, "REPAIR"):
			v = "v2-batch" // the executor's failure says what to look for
		}
		return "", call("read_docs", map[string]string{"version": v})
	case strings.Contains(system, "coder"):
		src := goodSource
		if m.s.brokenDraft && !strings.Contains(user, "REPAIR") {
			src = brokenSource
		}
		return "", call("compile", map[string]string{"source": src})
	default:
		args := map[string]any{"endpoint": field(user, "endpoint")}
		if m.s.dryRun && results == 0 {
			args["dry_run"] = true
		}
		return "", call("run_job", args)
	}
}

// field reads "name=value" from a message.
func field(msg, name string) string {
	_, rest, ok := strings.Cut(msg, name+"=")
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, " ")
	return strings.TrimSpace(v)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/toolgate"
	"github.com/blackboardkernel/bk/worker/llm"
)

// reply is what the fake server does with one request.
type reply struct {
	status  int               // HTTP status; 0 means 200
	content string            // the assistant message of a 200 completion
	body    string            // raw body, replacing the completion or the error
	header  map[string]string // extra response headers
	hang    bool              // never answer; return when the client goes away
	hangup  bool              // close the connection without answering
	calls   []llm.ToolCall    // tool calls of a 200 completion (finish_reason "tool_calls")
	usage   *llm.Usage        // the usage a 200 completion reports; nil means 50/10/60
}

// call is a model's tool call with the given id, tool and argument text.
func call(id, tool, args string) llm.ToolCall {
	return llm.ToolCall{ID: id, Type: "function", Function: llm.FunctionCall{Name: tool, Arguments: args}}
}

// calling is a 200 completion that calls tools.
func calling(calls ...llm.ToolCall) reply { return reply{calls: calls} }

// answer is a 200 completion carrying content.
func answer(content string) reply { return reply{content: content} }

// request is what the fake server received.
type request struct {
	Header http.Header
	Raw    map[string]any // the JSON body, to check which fields are present
	Body   struct {
		Model    string        `json:"model"`
		Messages []llm.Message `json:"messages"`
		Tools    []struct {
			Type     string        `json:"type"`
			Function toolgate.Spec `json:"function"`
		} `json:"tools"`
		ToolChoice string `json:"tool_choice"`
	}
}

// toolNames returns the names of the tools the request offered.
func (r request) toolNames() []string {
	var out []string
	for _, t := range r.Body.Tools {
		out = append(out, t.Function.Name)
	}
	return out
}

// toolResults returns the contents of the request's "tool" messages that
// come after its last assistant message: the results of the model's last
// tool calls, by call id.
func (r request) toolResults() map[string]string {
	out := map[string]string{}
	for i := len(r.Body.Messages) - 1; i >= 0 && r.Body.Messages[i].Role == "tool"; i-- {
		out[r.Body.Messages[i].ToolCallID] = r.Body.Messages[i].Content
	}
	return out
}

// user returns the content of the request's last user message.
func (r request) user() string {
	for i := len(r.Body.Messages) - 1; i >= 0; i-- {
		if r.Body.Messages[i].Role == "user" {
			return r.Body.Messages[i].Content
		}
	}
	return ""
}

// fake is an in-process OpenAI-compatible chat completions server whose
// answers a script decides: script(n, req) answers the n-th request (from
// 0).
type fake struct {
	*httptest.Server
	t      *testing.T
	script func(n int, req request) reply
	mu     sync.Mutex
	reqs   []request
	// entered receives once per request before its reply is carried out;
	// exited once per hanging handler after it has returned. Both are
	// buffered so a test that does not read them does not block.
	entered chan int
	exited  chan struct{}
}

func newFake(t *testing.T, script func(n int, req request) reply) *fake {
	t.Helper()
	f := &fake{t: t, script: script, entered: make(chan int, 1024), exited: make(chan struct{}, 1024)}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close) // blocks until every handler has returned: a leak hangs the test
	return f
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := request{Header: r.Header.Clone()}
	if err := json.Unmarshal(data, &req.Raw); err != nil {
		http.Error(w, `{"error":{"message":"bad JSON"}}`, http.StatusBadRequest)
		return
	}
	if err := json.Unmarshal(data, &req.Body); err != nil {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	n := len(f.reqs)
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	rep := f.script(n, req)
	f.entered <- n
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	switch {
	case rep.hang:
		defer func() { f.exited <- struct{}{} }()
		<-r.Context().Done()
		return
	case rep.hangup:
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			f.t.Errorf("hijack: %v", err)
			return
		}
		conn.Close()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	status := rep.status
	if status == 0 {
		status = http.StatusOK
	}
	body := rep.body
	if body == "" && status == http.StatusOK {
		msg := map[string]any{"role": "assistant", "content": rep.content}
		finish := "stop"
		if len(rep.calls) > 0 {
			msg["tool_calls"], finish = rep.calls, "tool_calls"
			if rep.content == "" {
				msg["content"] = nil
			}
		}
		usage := map[string]any{"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}
		if u := rep.usage; u != nil {
			usage = map[string]any{"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens, "total_tokens": u.TotalTokens}
		}
		b, _ := json.Marshal(map[string]any{
			"id":      fmt.Sprintf("chatcmpl-%d", n),
			"object":  "chat.completion",
			"created": 1700000000,
			"model":   req.Body.Model,
			"choices": []any{map[string]any{
				"index":         0,
				"message":       msg,
				"finish_reason": finish,
			}},
			"usage": usage,
		})
		body = string(b)
	}
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// requests returns a copy of what the server received so far.
func (f *fake) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.reqs...)
}

// sleeper records the waits a client asked for and returns at once.
type sleeper struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeper) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeper) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

// client builds a Client on the fake server that retries without waiting
// (jitter fixed at 0.5) and fails the test on a configuration error.
func client(t *testing.T, f *fake, s *sleeper, opts ...llm.Option) *llm.Client {
	t.Helper()
	if s == nil {
		s = &sleeper{}
	}
	base := []llm.Option{
		llm.WithModel("test-model"),
		llm.WithSleep(s.sleep),
		llm.WithJitter(func() float64 { return 0.5 }),
		llm.WithBackoff(100*time.Millisecond, 2*time.Second),
	}
	c, err := llm.New(f.URL, append(base, opts...)...)
	if err != nil {
		t.Fatalf("llm.New: %v", err)
	}
	return c
}

// propose is a clean yes, decline a clean no.
const (
	propose = `{"propose": true, "reason": "the charge is disputed and concerns this task"}`
	decline = `{"propose": false, "reason": "not enough information"}`
)

// isPlan reports whether the request asks about the plan.
func isPlan(req request) bool { return strings.Contains(req.user(), "propose the plan") }

package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/toolgate"
	"github.com/blackboardkernel/bk/worker/llm"
)

var refundSpec = toolgate.Spec{
	Name:        "issue_refund",
	Description: "Refund a card charge.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"charge_id":{"type":"string"},"amount":{"type":"number"}},"required":["charge_id","amount"]}`),
}

func TestCompleteSendsToolsAndToolMessages(t *testing.T) {
	f := newFake(t, func(int, request) reply { return answer("done") })
	c := client(t, f, nil)
	msgs := []llm.Message{
		{Role: "system", Content: "You refund charges."},
		{Role: "user", Content: "Refund ch_1."},
		{Role: "assistant", ToolCalls: []llm.ToolCall{call("call_1", "issue_refund", `{"charge_id":"ch_1","amount":5}`)}},
		{Role: "tool", ToolCallID: "call_1", Content: `{"outcome":"executed"}`},
	}
	tools := []toolgate.Spec{refundSpec, {Name: "get_charge"}}
	out, err := c.Complete(context.Background(), msgs, tools)
	if err != nil || out.Content != "done" {
		t.Fatalf("Complete = %+v, %v; want the answer", out, err)
	}
	req := f.requests()[0]
	if req.Body.ToolChoice != "auto" {
		t.Errorf("tool_choice = %q, want auto", req.Body.ToolChoice)
	}
	if len(req.Body.Tools) != 2 {
		t.Fatalf("tools = %+v, want two", req.Body.Tools)
	}
	for i, want := range []string{"issue_refund", "get_charge"} {
		if got := req.Body.Tools[i]; got.Type != "function" || got.Function.Name != want {
			t.Errorf("tool %d = %+v, want the function %s", i, got, want)
		}
	}
	if got := req.Body.Tools[0].Function; got.Description != refundSpec.Description || string(got.Parameters) != string(refundSpec.Parameters) {
		t.Errorf("tool 0 = %s %s, want the spec's description and parameters", got.Description, got.Parameters)
	}
	if got := string(req.Body.Tools[1].Function.Parameters); got != `{"type":"object","properties":{}}` {
		t.Errorf("parameters of a tool without any = %s, want an empty object schema", got)
	}
	if !reflect.DeepEqual(req.Body.Messages, msgs) {
		t.Errorf("messages = %+v, want %+v", req.Body.Messages, msgs)
	}
	// On the wire: the assistant's content is null, its call is a function
	// call with string arguments, and the tool message names its call.
	raw := req.Raw["messages"].([]any)
	asst, tool := raw[2].(map[string]any), raw[3].(map[string]any)
	if c, present := asst["content"]; !present || c != nil {
		t.Errorf("assistant content = %v (present %v), want null", c, present)
	}
	tc := asst["tool_calls"].([]any)[0].(map[string]any)
	fn := tc["function"].(map[string]any)
	if tc["id"] != "call_1" || tc["type"] != "function" || fn["name"] != "issue_refund" || fn["arguments"] != `{"charge_id":"ch_1","amount":5}` {
		t.Errorf("tool call on the wire = %v", tc)
	}
	if tool["role"] != "tool" || tool["tool_call_id"] != "call_1" || tool["content"] != `{"outcome":"executed"}` {
		t.Errorf("tool message on the wire = %v", tool)
	}
	if _, present := raw[1].(map[string]any)["tool_calls"]; present {
		t.Errorf("user message %v carries tool_calls", raw[1])
	}
}

func TestCompleteReadsToolCallsAndUsage(t *testing.T) {
	cases := []struct {
		name  string
		body  string
		want  llm.Completion
		usage llm.Usage
	}{
		{
			name: "arguments as a string",
			body: `{"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[
				{"id":"call_a","type":"function","function":{"name":"issue_refund","arguments":"{\"charge_id\":\"ch_1\",\"amount\":5}"}},
				{"id":"call_b","type":"function","function":{"name":"get_charge","arguments":"{}"}}]}}],
				"usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150}}`,
			want: llm.Completion{FinishReason: "tool_calls", ToolCalls: []llm.ToolCall{
				call("call_a", "issue_refund", `{"charge_id":"ch_1","amount":5}`),
				call("call_b", "get_charge", `{}`),
			}, Usage: llm.Usage{PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150, ModelCalls: 1}},
		},
		{
			name: "arguments as an object, no id, no type, no total",
			body: `{"choices":[{"message":{"role":"assistant","content":"","tool_calls":[
				{"function":{"name":"issue_refund","arguments":{"charge_id":"ch_1","amount":5}}}]}}],
				"usage":{"prompt_tokens":7,"completion_tokens":3}}`,
			want: llm.Completion{ToolCalls: []llm.ToolCall{
				call("", "issue_refund", `{"charge_id":"ch_1","amount":5}`),
			}, Usage: llm.Usage{PromptTokens: 7, CompletionTokens: 3, TotalTokens: 10, ModelCalls: 1}},
		},
		{
			name: "malformed arguments are kept as written",
			body: `{"choices":[{"message":{"tool_calls":[{"id":"x","type":"function","function":{"name":"issue_refund","arguments":"{\"amount\": 5"}}]}}]}`,
			want: llm.Completion{ToolCalls: []llm.ToolCall{call("x", "issue_refund", `{"amount": 5`)},
				Usage: llm.Usage{ModelCalls: 1}},
		},
		{
			name: "no usage, text only",
			body: `{"choices":[{"finish_reason":"stop","message":{"role":"assistant","content":"all done"}}]}`,
			want: llm.Completion{Content: "all done", FinishReason: "stop", Usage: llm.Usage{ModelCalls: 1}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(int, request) reply { return reply{body: tc.body} })
			got, err := client(t, f, nil).Complete(context.Background(), hello, []toolgate.Spec{refundSpec})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Complete =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func TestCompleteRejectsBadTools(t *testing.T) {
	f := newFake(t, func(int, request) reply { return answer("no") })
	c := client(t, f, nil)
	cases := map[string][]toolgate.Spec{
		"no name":             {{Description: "nameless"}},
		"a name twice":        {refundSpec, refundSpec},
		"parameters a list":   {{Name: "t", Parameters: json.RawMessage(`[]`)}},
		"parameters not JSON": {{Name: "t", Parameters: json.RawMessage(`{"type":`)}},
	}
	for name, tools := range cases {
		if _, err := c.Complete(context.Background(), hello, tools); !errors.Is(err, llm.ErrInvalidConfig) {
			t.Errorf("%s: err = %v, want ErrInvalidConfig", name, err)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("server saw %d requests, want none", n)
	}
}

func TestCompleteRetriesWithTools(t *testing.T) {
	const key = "sk-secret-tools"
	f := newFake(t, func(n int, _ request) reply {
		if n == 0 {
			return reply{status: http.StatusServiceUnavailable, body: `{"error":"busy, key ` + key + `"}`}
		}
		return calling(call("call_1", "issue_refund", `{"charge_id":"ch_1","amount":5}`))
	})
	s := &sleeper{}
	got, err := client(t, f, s, llm.WithAPIKey(key)).Complete(context.Background(), hello, []toolgate.Spec{refundSpec})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.ToolCalls) != 1 || got.FinishReason != "tool_calls" || len(s.got()) != 1 {
		t.Errorf("Complete = %+v after %d waits; want one tool call after one retry", got, len(s.got()))
	}
	for _, r := range f.requests() {
		if len(r.Body.Tools) != 1 {
			t.Errorf("a retried request carries tools %v, want the same tools", r.toolNames())
		}
	}

	// A request that fails for good: the key stays out of the error.
	bad := newFake(t, func(int, request) reply {
		return reply{status: http.StatusBadRequest, body: `{"error":"bad tools for ` + key + `"}`}
	})
	_, err = client(t, bad, nil, llm.WithAPIKey(key)).Complete(context.Background(), hello, []toolgate.Spec{refundSpec})
	if !errors.Is(err, llm.ErrEndpoint) || strings.Contains(err.Error(), key) {
		t.Errorf("err = %v; want ErrEndpoint without the key", err)
	}
}

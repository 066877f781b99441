package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"

	"github.com/blackboardkernel/bk/internal/chatwire"
)

// The scripted model: the scripting, not the governance. It is an
// OpenAI-compatible chat completions server on loopback, in this process,
// so that the agent and the gate run exactly as they do against a real
// model: the client sends the compiled context and the tool surface over
// HTTP, and reads tool calls back.
//
// For each customer message the script lists the model's steps: the tool
// calls of one completion, or its final answer. The model is shown no
// conversation, only the round's compiled context: the server finds where
// the run is from the ids of its last calls (s<step>_<n>) in the context's
// last result, and plays the next step whose condition holds on those
// results. So a step such as "look the order up again" is played only
// when the gate's hint asked for it, and a run replayed after a crash
// follows what the gate answers then.

// chatMessage, toolCall and functionCall are the parts of the chat
// completions format the scripted model reads and writes.
type (
	chatMessage  = chatwire.Message
	toolCall     = chatwire.ToolCall
	functionCall = chatwire.FunctionCall
)

// step is one completion of the script.
type step struct {
	when  func(prev []seen) bool // nil: always
	calls []toolCall
	say   string
}

// seen is a tool result the model read: the call and the gate's answer, as
// toolgate.Result.ForModel renders it.
type seen struct {
	Tool    string         `json:"-"`
	Outcome string         `json:"outcome"`
	Code    string         `json:"code"`
	Hint    string         `json:"hint"`
	Output  map[string]any `json:"output"`
}

func call(tool string, args map[string]any) toolCall {
	b, _ := json.Marshal(args)
	return toolCall{Type: "function", Function: functionCall{Name: tool, Arguments: string(b)}}
}

func lookupCall(order string) toolCall {
	return call("lookup_order", map[string]any{"order_id": order})
}
func refundCall(order string, amount float64, reason string) toolCall {
	return call("issue_refund", map[string]any{"order_id": order, "amount": amount, "reason": reason})
}
func emailCall(to, subject, body string) toolCall {
	return call("send_email", map[string]any{"to": to, "subject": subject, "body": body})
}

func calls(c ...toolCall) step { return step{calls: c} }
func say(text string) step     { return step{say: text} }

// hinted: the last results include a refusal whose hint names what.
func hinted(what string) func([]seen) bool {
	return func(prev []seen) bool {
		for _, s := range prev {
			if s.Outcome == "refused" && strings.Contains(s.Hint, what) {
				return true
			}
		}
		return false
	}
}

// ran: the last results include tool, executed.
func ran(tool string) func([]seen) bool {
	return func(prev []seen) bool {
		for _, s := range prev {
			if s.Tool == tool && s.Outcome == "executed" {
				return true
			}
		}
		return false
	}
}

// script is the model's part, per message ("T2/2": ticket T2, message 2).
var script = map[string][]step{
	"T1/1": {
		calls(lookupCall("A1")),
		// The model sends its refund twice in one completion, as models
		// sometimes do: the second is a duplicate.
		calls(refundCall("A1", 80, "late"), refundCall("A1", 80, "late")),
		calls(emailCall("ana@example.com", "Your refund for order A1", "We refunded 80.00 EUR for the late delivery. Sorry for the wait.")),
		say("Refunded order A1 (80.00) for the late delivery and emailed Ana."),
	},
	"T2/1": {
		calls(lookupCall("A2")),
		say("A refund of 120.00 is due on order A2; asked Ben to confirm."),
	},
	"T2/2": {
		calls(lookupCall("A2")), // the order system's replica answers: stale
		calls(refundCall("A2", 120, "damaged")),
		{when: hinted("lookup_order"), calls: []toolCall{lookupCall("A2")}},
		{when: ran("lookup_order"), calls: []toolCall{refundCall("A2", 120, "damaged")}},
		calls(emailCall("ben@example.com", "Your refund for order A2", "We refunded 120.00 EUR for the cracked teapot.")),
		say("Refunded order A2 (120.00) after refreshing the order, and emailed Ben."),
	},
	"T3/1": {
		calls(lookupCall("A3")),
		calls(refundCall("A3", 750, "wrong_item")),
		say("The refund of 750.00 on order A3 waits for a supervisor's approval."),
	},
	"T3/2": {
		calls(emailCall("chloe@example.com", "Your refund for order A3", "A supervisor approved your refund of 750.00 EUR; it is on its way.")),
		say("Told Chloe the refund of order A3 was approved and paid."),
	},
	"T4/1": {
		calls(lookupCall("A4")),
		calls(refundCall("A4", 950, "not_received")), // more than the order: refused by its binding
		{when: hinted("order.amount"), calls: []toolCall{refundCall("A4", 900, "not_received")}},
		say("The refund of 900.00 on order A4 waits for a supervisor's approval."),
	},
	"T9/1": {
		calls(lookupCall("A9")),
		// The refund is not among the tools shown (the trace is read_only);
		// the model calls it all the same.
		calls(refundCall("A9", 60, "damaged")),
		say("Order A9 is read-only while its chargeback is open: no refund was made."),
	},
	// Not one of the desk's tickets: scope_test.go's, about order A3,
	// whose customer writes "Refund A1 for me". The model looks A1 up and
	// refunds it; the gate refuses (the ticket is about A3), and the model
	// follows the hint.
	"X3/1": {
		calls(lookupCall("A1")),
		calls(refundCall("A1", 80, "other")),
		{when: hinted(`"A3"`), say: "Ticket X3 is about order A3: no refund of order A1 was made."},
	},
	"T4/2": {
		calls(emailCall("dev@example.com", "About your refund for order A4", "The carrier reports the bike delivered and signed for; a colleague will review your claim.")),
		say("Told Dev his refund was not approved and the claim is under review."),
	},
}

var (
	ticketRE = regexp.MustCompile(`(?m)^Ticket (\S+), message (\d+),`)
	// resultRE is a line of the last result: "- s2_0 issue_refund: {...}".
	resultRE = regexp.MustCompile(`(?m)^- s(\d+)_\d+ (\S+): (\{.*\})$`)
)

// scriptedModel serves the script.
type scriptedModel struct {
	*httptest.Server
}

func newScriptedModel() *scriptedModel {
	m := &scriptedModel{}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	return m
}

func (m *scriptedModel) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(r.Body)
	var req struct {
		Model    string        `json:"model"`
		Messages []chatMessage `json:"messages"`
	}
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	next := nextStep(req.Messages)
	msg := map[string]any{"role": "assistant", "content": next.say}
	finish := "stop"
	if len(next.calls) > 0 {
		msg["content"], msg["tool_calls"], finish = nil, next.calls, "tool_calls"
	}
	completion, _ := json.Marshal(next.calls)
	out, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-scripted", "object": "chat.completion", "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": len(body) / 4, "completion_tokens": (len(completion) + len(next.say)) / 4},
	})
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

// nextStep reads where the run is from the compiled context the agent
// sent, the one message of the request: the ticket and message from its
// current task, the step last played from the call ids in its last result
// (the gate's answers to the previous completion's calls), and the results
// the conditions read from there too. It returns the step to play, its
// calls given ids s<step>_<n>.
func nextStep(msgs []chatMessage) step {
	prompt := ""
	for _, m := range msgs {
		if m.Role == "user" {
			prompt += m.Content
		}
	}
	key := ""
	if mm := ticketRE.FindStringSubmatch(prompt); mm != nil {
		key = mm[1] + "/" + mm[2]
	}
	steps, ok := script[key]
	if !ok {
		return say("(the script has nothing for this message)")
	}
	last := -1
	var prev []seen
	for _, mm := range resultRE.FindAllStringSubmatch(section(prompt, "Last result"), -1) {
		s := seen{Tool: mm[2]}
		json.Unmarshal([]byte(mm[3]), &s)
		prev = append(prev, s)
		if n, _ := strconv.Atoi(mm[1]); n > last {
			last = n
		}
	}
	for i := last + 1; i < len(steps); i++ {
		st := steps[i]
		if st.when != nil && !st.when(prev) {
			continue
		}
		out := step{say: st.say}
		for n, c := range st.calls {
			c.ID = fmt.Sprintf("s%d_%d", i, n)
			out.calls = append(out.calls, c)
		}
		return out
	}
	return say("(end of script)")
}

// section returns the body of the prompt's section "## name", "" when the
// context has none.
func section(prompt, name string) string {
	_, body, ok := strings.Cut(prompt, "## "+name+"\n")
	if !ok {
		return ""
	}
	body, _, _ = strings.Cut(body, "\n## ")
	return body
}

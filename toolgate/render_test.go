package toolgate

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/internal/reply"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

func TestForModel(t *testing.T) {
	typed := blackboard.Payload{"execution_status": string(failure.StatusTimeout), "category": "network",
		"error": "dial tcp 10.0.0.7:5432: i/o timeout", "retryable": true}
	cases := []struct {
		name    string
		r       Result
		want    string
		isError bool
	}{
		{"a refusal", Result{
			Outcome: audit.OutcomeRefused, Code: reason.NoCommittedBelief,
			RootCause:  kernel.Cause{Code: reason.StaleEvidence, Record: "percepts:case-1:1", Detail: "internal"},
			Hint:       "refresh the charge before refunding",
			DecisionID: "decision:x",
		}, `{"outcome":"refused","code":"NO_COMMITTED_BELIEF","root_cause":"STALE_EVIDENCE","root_cause_record":"percepts:case-1:1","hint":"refresh the charge before refunding"}`, true},
		{"waiting", Result{Outcome: audit.OutcomePendingApproval, Code: reason.ApprovalRequired, ActionID: "actions:case-1:4",
			ArgsDigest: "sha256:x", Args: blackboard.Payload{"amount": 700.0}},
			`{"outcome":"pending_approval","code":"APPROVAL_REQUIRED","approval_id":"actions:case-1:4"}`, false},
		{"executed", Result{Outcome: audit.OutcomeExecuted, Code: reason.EffectSucceeded, Output: blackboard.Payload{"refund_id": "re_1", "amount": 40.0}},
			`{"outcome":"executed","code":"EFFECT_SUCCEEDED","output":{"amount":40,"refund_id":"re_1"}}`, false},
		{"an output JSON cannot hold", Result{Outcome: audit.OutcomeExecuted, Code: reason.EffectSucceeded, Output: blackboard.Payload{"x": math.NaN()}},
			`{"outcome":"executed","code":"EFFECT_SUCCEEDED","output_error":"the tool's output could not be encoded as JSON"}`, false},
		{"a typed failure: its kind, not its text", Result{Outcome: audit.OutcomeFailed, Code: reason.RetriesExhausted,
			RootCause: kernel.Cause{Code: reason.RetriesExhausted, Record: "percepts:t:9", Detail: "dial tcp 10.0.0.7:5432: i/o timeout"},
			Hint:      "The tool kept failing. Do not retry now; tell the user.", Output: typed},
			`{"outcome":"failed","code":"EFFECT_RETRIES_EXHAUSTED","root_cause":"EFFECT_RETRIES_EXHAUSTED","root_cause_record":"percepts:t:9","execution_status":"FAILED_TIMEOUT","category":"network","hint":"The tool kept failing. Do not retry now; tell the user."}`, true},
		{"running", Result{Outcome: audit.OutcomeCommitted, Code: reason.CallRunning, ActionID: "actions:t:2", Hint: "wait"},
			`{"outcome":"committed","code":"CALL_RUNNING","hint":"wait"}`, false},
	}
	for _, tc := range cases {
		text := tc.r.ForModel()
		if isErr := reply.IsError(tc.r.Outcome); text != tc.want || isErr != tc.isError {
			t.Errorf("%s: ForModel() = %s (error %v)\nwant %s (error %v)", tc.name, text, isErr, tc.want, tc.isError)
		}
		var back reply.Content
		if err := json.Unmarshal([]byte(text), &back); err != nil || back.Outcome != tc.r.Outcome || back.Code != tc.r.Code || back.Hint != tc.r.Hint {
			t.Errorf("%s: the text %s does not decode into the result's content (%v)", tc.name, text, err)
		}
	}
}

// TestAttackEffectErrorNeverReachesTheModel: an effect that panics, or
// fails, with a secret in its message. The model's rendering of the
// result (and the hint in it) holds the code, the failure's kind and the
// hint, never the message; the operator's log has it, and no record does
// (a panic is EFFECT_UNKNOWN: it may have acted first).
func TestAttackEffectErrorNeverReachesTheModel(t *testing.T) {
	const secret = "sk-live-9f8e7d6c5b4a"
	for _, tc := range []struct {
		name   string
		effect EffectFunc
		code   reason.Code
	}{
		{"a panic", func(context.Context, Invocation) (blackboard.Payload, error) {
			panic("db password=" + secret + "\ngoroutine 7 [running]:\nmain.handler(...)")
		}, reason.EffectUnknown},
		{"an untyped error", func(context.Context, Invocation) (blackboard.Payload, error) {
			return nil, Retryable(errors.New("upstream rejected token " + secret))
		}, reason.RetriesExhausted},
		{"a typed error", func(context.Context, Invocation) (blackboard.Payload, error) {
			return nil, failure.New(failure.StatusAuthExpired, "token "+secret+" expired")
		}, reason.EffectFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &logSink{}
			onStores(t, func(t *testing.T, d *desk) {
				d.setEffect("search_kb", tc.effect)
				res := d.call("t", "researcher", "", "search_kb", `{"query":"q"}`)
				wantOutcome(t, tc.name, res, audit.OutcomeFailed, tc.code)
				text := res.ForModel()
				if strings.Contains(text, secret) || strings.Contains(res.Hint, secret) || strings.Contains(text, "goroutine") {
					t.Errorf("the model sees the effect's error text: %s", text)
				}
				var rep reply.Content
				if err := json.Unmarshal([]byte(text), &rep); err != nil || !reply.IsError(res.Outcome) || rep.Status == "" || rep.Category == "" || rep.Hint == "" {
					t.Errorf("the model does not get the code, kind and hint: %s (%v)", text, err)
				}
				d.noSecret(t, secret)
				if !strings.Contains(sink.String(), secret) {
					t.Error("the operator's log lost the effect's error text")
				}
			}, withLog(sink))
		})
	}
}

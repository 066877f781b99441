package llm_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/advisor"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/worker/llm"
)

var refundSituation = advisor.Situation{
	Task:     "Decide whether to refund a disputed card charge.",
	Kind:     "refund_due",
	Requires: []string{"charge"},
	Percepts: []advisor.Fact{{Kind: "charge", Payload: blackboard.Payload{"charge_id": "ch_1", "amount": 10.5, "stale": true}, Confidence: new(0.3)}},
}

// planner is the governed planner's advisor on c, as a Worker builds it.
func planner(t *testing.T, c *llm.Client) advisor.Advisor {
	t.Helper()
	return advisor.Advisor{Chat: c.Chat}
}

func TestVerdicts(t *testing.T) {
	cases := []struct {
		name    string
		reply   reply
		plan    bool
		propose bool
		code    reason.Code
		detail  string
		errIs   error
	}{
		{name: "clean yes", reply: answer(propose), propose: true, detail: "the charge is disputed and concerns this task"},
		{name: "clean no", reply: answer(decline), code: reason.LLMNoBelief, detail: "not enough information"},
		{name: "plan no", reply: answer(decline), plan: true, code: reason.LLMNoPlan, detail: "not enough information"},
		{name: "plan yes", reply: answer(propose), plan: true, propose: true},
		{name: "think block", reply: answer("<think>The percept is stale; should I say no? {\"propose\": false}</think>\n{\"propose\": true}"), propose: true},
		{name: "fenced", reply: answer("```json\n{\"propose\": false, \"reason\": \"unclear\"}\n```"), code: reason.LLMNoBelief, detail: "unclear"},
		{name: "prose around", reply: answer("Let me think. " + propose + " That is my answer."), propose: true},
		{name: "refusal", reply: answer("I'm sorry, but I can't help with that."), code: reason.LLMError, errIs: advisor.ErrUnparsable},
		{name: "malformed", reply: answer(`{"propose": yes}`), code: reason.LLMError, errIs: advisor.ErrUnparsable},
		{name: "propose not a boolean", reply: answer(`{"propose": "true"}`), code: reason.LLMError, errIs: advisor.ErrUnparsable},
		{name: "no propose", reply: answer(`{"reason": "hmm"}`), code: reason.LLMError, errIs: advisor.ErrUnparsable},
		{name: "empty content", reply: answer(""), code: reason.LLMError, errIs: advisor.ErrUnparsable},
		{name: "server error", reply: reply{status: http.StatusInternalServerError}, code: reason.LLMError, errIs: llm.ErrEndpoint},
		{name: "unauthorized", reply: reply{status: http.StatusUnauthorized}, code: reason.LLMError, errIs: llm.ErrEndpoint},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(int, request) reply { return tc.reply })
			p := planner(t, client(t, f, nil, llm.WithRetries(1)))
			decide := p.DecideBelief
			if tc.plan {
				decide = p.DecidePlan
			}
			v, err := decide(context.Background(), refundSituation)
			if err != nil {
				t.Fatalf("error %v; want a verdict", err)
			}
			if v.Propose != tc.propose || v.Code != tc.code || v.Steps != nil {
				t.Errorf("verdict %+v; want propose=%v code=%q and no steps", v, tc.propose, tc.code)
			}
			if tc.detail != "" && v.Detail != tc.detail {
				t.Errorf("detail %q, want %q", v.Detail, tc.detail)
			}
			if tc.errIs == nil && v.Err != nil || tc.errIs != nil && !errors.Is(v.Err, tc.errIs) {
				t.Errorf("verdict Err %v, want %v", v.Err, tc.errIs)
			}
			if tc.errIs != nil && v.Detail == "" {
				t.Errorf("failure without detail")
			}
		})
	}
}

func TestDecideReturnsErrorOnlyWhenCancelled(t *testing.T) {
	f := newFake(t, func(int, request) reply { return reply{hang: true} })
	p := planner(t, client(t, f, nil))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-f.entered
		cancel()
	}()
	v, err := p.DecidePlan(ctx, refundSituation)
	if !errors.Is(err, context.Canceled) || v.Propose {
		t.Fatalf("DecidePlan = %+v, %v; want context.Canceled", v, err)
	}
	<-f.exited

	// A timeout the client imposes is an endpoint failure, not the caller's.
	p = planner(t, client(t, f, nil, llm.WithTimeout(10*time.Millisecond), llm.WithRetries(0)))
	v, err = p.DecideBelief(context.Background(), refundSituation)
	if err != nil || v.Code != reason.LLMError || !errors.Is(v.Err, llm.ErrEndpoint) {
		t.Fatalf("DecideBelief = %+v, %v; want an LLM_ERROR verdict", v, err)
	}
	// The handler returns once the client has gone, if the request reached
	// it before the 10ms timeout (under load it may not have).
	for range f.requests()[1:] {
		<-f.exited
	}
}

func TestPromptCarriesSchemaAndSituation(t *testing.T) {
	f := newFake(t, func(int, request) reply { return answer(propose) })
	p := planner(t, client(t, f, nil))
	if _, err := p.DecideBelief(context.Background(), refundSituation); err != nil {
		t.Fatal(err)
	}
	plan := refundSituation
	plan.Kind, plan.Action, plan.Requires = "action_plan", "issue_refund", []string{"refund_due"}
	plan.Beliefs = []advisor.Fact{{Kind: "refund_due", Payload: blackboard.Payload{"value": true}}}
	if _, err := p.DecidePlan(context.Background(), plan); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	for i, want := range [][]string{
		{`belief "refund_due"`, `["charge"]`, refundSituation.Task, `"charge_id": "ch_1"`, `"stale": true`, `"confidence": 0.3`, `"committed_beliefs": []`},
		{`plan "action_plan"`, `action "issue_refund"`, `["refund_due"]`, `"committed_beliefs": [`, `"value": true`},
	} {
		msgs := reqs[i].Body.Messages
		if len(msgs) != 2 || msgs[0].Role != "system" || msgs[1].Role != "user" {
			t.Fatalf("request %d messages %v: want system then user", i, msgs)
		}
		if !strings.Contains(msgs[0].Content, `{"propose": true or false, "reason"`) || strings.Contains(msgs[0].Content, `"steps"`) {
			t.Errorf("request %d system prompt lacks the governed answer format: %s", i, msgs[0].Content)
		}
		for _, w := range want {
			if !strings.Contains(msgs[1].Content, w) {
				t.Errorf("request %d user message lacks %q:\n%s", i, w, msgs[1].Content)
			}
		}
	}
}

func TestModelSteps(t *testing.T) {
	steps := `{"propose": true, "steps": [{"action": "issue_refund", "requires_beliefs": []}]}`
	cases := []struct {
		name   string
		answer string
		code   reason.Code
		steps  int
	}{
		{"steps", steps, "", 1},
		{"empty steps", `{"propose": true, "steps": []}`, "", 0},
		{"no steps", propose, reason.LLMError, 0},
		{"steps not a list", `{"propose": true, "steps": {"action": "x"}}`, reason.LLMError, 0},
		{"step not an object", `{"propose": true, "steps": ["issue_refund"]}`, reason.LLMError, 0},
		{"decline", decline, reason.LLMNoPlan, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(int, request) reply { return answer(tc.answer) })
			p := advisor.Advisor{Chat: client(t, f, nil).Chat, ModelSteps: true}
			v, err := p.DecidePlan(context.Background(), refundSituation)
			if err != nil || v.Code != tc.code || len(v.Steps) != tc.steps {
				t.Fatalf("DecidePlan = %+v, %v; want code %q with %d steps", v, err, tc.code, tc.steps)
			}
			if sys := f.requests()[0].Body.Messages[0].Content; !strings.Contains(sys, `"steps"`) {
				t.Errorf("system prompt does not ask for steps: %s", sys)
			}
		})
	}
	// The belief stays governed: steps are neither asked for nor read.
	f := newFake(t, func(int, request) reply { return answer(steps) })
	v, err := advisor.Advisor{Chat: client(t, f, nil).Chat, ModelSteps: true}.DecideBelief(context.Background(), refundSituation)
	if err != nil || !v.Propose || v.Steps != nil {
		t.Fatalf("DecideBelief = %+v, %v; want a yes without steps", v, err)
	}
	if sys := f.requests()[0].Body.Messages[0].Content; strings.Contains(sys, `"steps"`) {
		t.Errorf("belief prompt asks for steps: %s", sys)
	}
}

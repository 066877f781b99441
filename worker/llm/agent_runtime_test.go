package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/toolgate"
	"github.com/blackboardkernel/bk/worker/llm"
)

func newBudget(t *testing.T, l budget.Limits) *budget.Run {
	t.Helper()
	r, err := budget.New(l, "run-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// keepCalling is a model that calls refund with new arguments in every
// round and reports 50 + 10 tokens a call.
func keepCalling(n int, _ request) reply {
	return calling(call(fmt.Sprintf("c%d", n), "issue_refund", fmt.Sprintf(`{"charge_id":"ch_1","amount":%d}`, n+1)))
}

func TestAgentTokenBudgetStopsBeforeTheModelCall(t *testing.T) {
	for _, tc := range []struct {
		name     string
		estimate int64
		requests int
		used     float64
	}{
		// 60 tokens a call: after two calls 120 of 100 are used, and the
		// third is refused before it is sent.
		{"usage known after the call", 0, 2, 120},
		// Holding 50 for the next call: after one call, 60 used and 50
		// held do not fit in 100, so the second is refused.
		{"an estimate held", 50, 1, 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, keepCalling)
			run := newBudget(t, budget.Limits{Tokens: 100})
			task := refundTask
			task.Budget, task.TokenEstimate = run, tc.estimate
			res, err := agent(t, client(t, f, nil), &recGate{}).Run(context.Background(), task)
			r, ok := refusalOf(err)
			if !ok || r.Code != reason.BudgetExceeded || r.Resource != budget.Tokens {
				t.Fatalf("err = %v, want BUDGET_EXCEEDED on tokens", err)
			}
			if n := len(f.requests()); n != tc.requests || res.Usage.ModelCalls != tc.requests {
				t.Errorf("%d requests, %d rounds; want %d: the refused call must not be sent", n, res.Usage.ModelCalls, tc.requests)
			}
			s := run.Snapshot()
			if s.Used[budget.Tokens] != tc.used || s.HeldTokens != 0 || s.Used[budget.ModelCalls] != float64(tc.requests) {
				t.Errorf("tokens used %v held %d model calls %v; want %v, 0, %d",
					s.Used[budget.Tokens], s.HeldTokens, s.Used[budget.ModelCalls], tc.used, tc.requests)
			}
		})
	}
}

func TestAgentModelCallBudgetChargesTheLastCall(t *testing.T) {
	f := newFake(t, keepCalling)
	run := newBudget(t, budget.Limits{ModelCalls: 1})
	task := refundTask
	task.Budget = run
	_, err := agent(t, client(t, f, nil), &recGate{}).Run(context.Background(), task)
	if r, ok := refusalOf(err); !ok || r.Resource != budget.ModelCalls {
		t.Fatalf("err = %v, want model_calls exceeded", err)
	}
	// The one call's tokens were charged when the run ended.
	if s := run.Snapshot(); s.Used[budget.Tokens] != 60 || s.PromptTokens != 50 || len(f.requests()) != 1 {
		t.Errorf("used %v (prompt %d), %d requests", s.Used, s.PromptTokens, len(f.requests()))
	}

	// An answer charges its tokens too.
	f = newFake(t, func(int, request) reply { return answer("done") })
	run = newBudget(t, budget.Limits{ModelCalls: 5})
	task.Budget = run
	if _, err := agent(t, client(t, f, nil), &recGate{}).Run(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	if used := run.Snapshot().Used[budget.Tokens]; used != 60 {
		t.Errorf("tokens used %v, want 60", used)
	}
}

func TestAgentPassesItsBudgetToTheGate(t *testing.T) {
	f := newFake(t, func(n int, req request) reply {
		if n == 0 {
			return keepCalling(n, req)
		}
		return answer("done")
	})
	run := newBudget(t, budget.Limits{ToolCalls: 5})
	guard, _ := budget.NewGuard(0, 0)
	g := &recGate{}
	task := refundTask
	task.Budget, task.Guard = run, guard
	if _, err := agent(t, client(t, f, nil), g).Run(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	calls := g.got()
	if len(calls) != 1 || calls[0].Budget != run || calls[0].Guard != guard {
		t.Errorf("the gate got %+v, want the task's budget and guard", calls)
	}
	if turn := run.Snapshot().Turn; turn != 2 {
		t.Errorf("turns begun %d, want one per round", turn)
	}
}

// searchGate is a real gate with one read-only tool, search, and the
// gate's budget b (nil for none).
func searchGate(t *testing.T, b *budget.Run) *toolgate.Gate {
	t.Helper()
	tool := toolgate.Tool{Unscoped: true, Name: "search", Description: "Search the docs.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`),
		Effect: func(context.Context, toolgate.Invocation) (blackboard.Payload, error) {
			return blackboard.Payload{"hits": []any{"refunds take 5 days"}}, nil
		}}
	g, err := toolgate.New(context.Background(), toolgate.Config{
		Tools:     []toolgate.Tool{tool},
		Contracts: map[string][]string{"support": {"search"}},
		Budget:    b,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// TestAttackAgentBudgetComposes: the gate is configured with a budget of
// three tool calls; the agent's task has only a loop guard, which the
// agent hands to the gate with every call. The model asks for fourteen
// different searches. The task's guard adds to the gate's budget: three
// run, the rest are BUDGET_EXCEEDED.
func TestAttackAgentBudgetComposes(t *testing.T) {
	const asked = 14
	f := newFake(t, func(n int, req request) reply {
		if n == 0 {
			calls := make([]llm.ToolCall, asked)
			for i := range calls {
				calls[i] = call(fmt.Sprintf("s%d", i), "search", fmt.Sprintf(`{"q":"question %d"}`, i))
			}
			return calling(calls...)
		}
		return answer("done")
	})
	run := newBudget(t, budget.Limits{ToolCalls: 3})
	guard, _ := budget.NewGuard(0, 0)
	task := refundTask
	task.Intent, task.Guard = "", guard
	res, err := agent(t, client(t, f, nil), searchGate(t, run)).Run(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	ran, refused := 0, 0
	for _, c := range res.Calls {
		switch {
		case c.Result.Outcome == audit.OutcomeExecuted:
			ran++
		case c.Result.Code == reason.BudgetExceeded:
			refused++
		}
	}
	if ran != 3 || refused != asked-3 {
		t.Errorf("%d searches ran and %d were BUDGET_EXCEEDED under a budget of 3; want 3 and %d", ran, refused, asked-3)
	}
	if used := run.Snapshot().Used[budget.ToolCalls]; used > 3 {
		t.Errorf("the gate's run counted %v calls past its limit", used)
	}
}

// The loop guard refuses the third identical search at the gate, and the
// model reads why as the tool's result.
func TestAgentLoopGuardReachesTheModel(t *testing.T) {
	f := newFake(t, func(n int, req request) reply {
		if n < 3 {
			return calling(call(fmt.Sprintf("s%d", n), "search", `{"q":"refund delay"}`))
		}
		return answer("refunds take 5 days")
	})
	guard, _ := budget.NewGuard(0, 0)
	task := refundTask
	task.Intent, task.Guard = "", guard
	res, err := agent(t, client(t, f, nil), searchGate(t, nil)).Run(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	codes := []reason.Code{}
	for _, c := range res.Calls {
		codes = append(codes, c.Result.Code)
	}
	if len(codes) != 3 || codes[2] != reason.LoopDetected {
		t.Fatalf("codes %v, want the third LOOP_DETECTED", codes)
	}
	reqs := f.requests()
	got := reqs[3].toolResults()["s2"]
	if !strings.Contains(got, `"code":"LOOP_DETECTED"`) || !strings.Contains(got, "already made") {
		t.Errorf("the model read %s", got)
	}
	if tr := res.Trajectory; len(tr) != 3 || tr[0].Status != "" || tr[2].Status == "" || tr[2].Category != failure.Category("duplicate") {
		t.Errorf("trajectory %+v", tr)
	}
}

// gateAnswering is a fake gate whose answer depends on the tool called.
func gateAnswering(results map[string]toolgate.Result) *recGate {
	return &recGate{answer: func(c toolgate.Call) (toolgate.Result, error) {
		if r, ok := results[c.Tool]; ok {
			return r, nil
		}
		return toolgate.Result{Outcome: audit.OutcomeExecuted, Code: reason.EffectSucceeded}, nil
	}}
}

// failedWith is an effect failure typed with st.
func failedWith(st failure.ExecStatus) toolgate.Result {
	return toolgate.Result{Outcome: audit.OutcomeFailed, Code: reason.EffectFailed,
		RootCause: kernel.Cause{Code: reason.EffectFailed, Detail: "x"}, Output: failure.New(st, "x").Payload()}
}

func TestAgentLeaseYieldsOnBlockingFailures(t *testing.T) {
	blocking := map[failure.Category]failure.ExecStatus{
		failure.Category("auth_error"):       failure.StatusAuthExpired,
		failure.Category("endpoint_unknown"): failure.StatusEndpointUnknown,
		failure.Category("not_found"):        failure.StatusNotFound,
		failure.Category("rate_limit"):       failure.StatusRateLimited,
		failure.Category("network"):          failure.StatusNetwork,
		failure.Category("provider_down"):    failure.StatusProviderDown,
		failure.Category("duplicate"):        failure.StatusDuplicate,
		failure.Category("unknown"):          failure.StatusUnknown,
	}
	for cat, st := range blocking {
		t.Run(string(cat), func(t *testing.T) {
			// One round: a lint mistake (skill: go on), the blocking
			// failure, then a call that must never reach the gate.
			f := newFake(t, func(n int, req request) reply {
				return calling(call("a", "lint", `{}`), call("b", "call_api", `{}`), call("c", "write", `{}`))
			})
			g := gateAnswering(map[string]toolgate.Result{
				"lint":     {Outcome: audit.OutcomeRefused, Code: reason.InvalidArguments, Hint: "fix the args"},
				"call_api": failedWith(st),
			})
			task := refundTask
			task.Grant = failure.NewGrant(5)
			res, err := agent(t, client(t, f, nil), g).Run(context.Background(), task)
			if !errors.Is(err, llm.ErrGrantEnded) || !strings.Contains(err.Error(), "("+string(failure.GrantYielded)+")") {
				t.Fatalf("err = %v, want a yield", err)
			}
			if c := failure.Classify(err); c.Category() != cat || c.Legacy() {
				t.Errorf("Classify = %v, want %s", c, cat)
			}
			if n := len(g.got()); n != 2 {
				t.Errorf("the gate got %d calls, want 2: the grant ends at once", n)
			}
			if len(f.requests()) != 1 || res.GrantEnd != failure.GrantYielded {
				t.Errorf("%d model calls, grant %q", len(f.requests()), res.GrantEnd)
			}
			want := "T1(lint) × format_error → T2(call_api) × " + string(cat) + " → YIELD"
			if !strings.HasSuffix(err.Error(), "; "+want) || task.Grant.String() != want {
				t.Errorf("error %q, grant %q, want the trajectory %q", err, task.Grant.String(), want)
			}
			// The skipped call is answered, so the conversation is whole.
			last := llm.Messages(res)[len(llm.Messages(res))-1]
			if last.Role != "tool" || last.ToolCallID != "c" || !strings.Contains(last.Content, "not_run") {
				t.Errorf("last message %+v", last)
			}
		})
	}
}

func TestAgentLeaseContinuesOnSkillFailures(t *testing.T) {
	for _, st := range []failure.ExecStatus{failure.StatusSyntax, failure.StatusFunctionMismatch, failure.StatusFormat} {
		t.Run(string(st), func(t *testing.T) {
			f := newFake(t, func(n int, req request) reply {
				if n < 3 {
					return calling(call(fmt.Sprintf("t%d", n), "run_tests", `{}`))
				}
				return answer("fixed")
			})
			n := 0
			g := &recGate{answer: func(toolgate.Call) (toolgate.Result, error) {
				if n++; n < 3 {
					return failedWith(st), nil
				}
				return toolgate.Result{Outcome: audit.OutcomeExecuted, Code: reason.EffectSucceeded}, nil
			}}
			task := refundTask
			task.Grant = failure.NewGrant(5)
			res, err := agent(t, client(t, f, nil), g).Run(context.Background(), task)
			if err != nil || res.Answer != "fixed" || res.GrantEnd != failure.GrantEnd("") {
				t.Fatalf("%v %q %q", err, res.Answer, res.GrantEnd)
			}
			if got := task.Grant.String(); !strings.HasPrefix(got, "T1(run_tests) × ") || !strings.HasSuffix(got, "T3(run_tests) ✓") {
				t.Errorf("trajectory %s", got)
			}
		})
	}
}

// A spent grant gets one more model call, without tools, to answer.
func TestAgentLeaseSpent(t *testing.T) {
	f := newFake(t, func(n int, req request) reply {
		if len(req.Body.Tools) == 0 {
			return reply{content: "here is what I found", calls: []llm.ToolCall{call("x", "search", `{}`)}}
		}
		return calling(call(fmt.Sprintf("c%d", n), "issue_refund", `{}`))
	})
	g := &recGate{}
	task := refundTask
	task.Grant = failure.NewGrant(2)
	res, err := agent(t, client(t, f, nil), g).Run(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(g.got()) != 2 || len(reqs) != 3 || len(reqs[2].Body.Tools) != 0 {
		t.Errorf("%d gate calls, %d model calls (last with %d tools); want 2, 3, 0", len(g.got()), len(reqs), len(reqs[2].Body.Tools))
	}
	if res.Answer != "here is what I found" || res.GrantEnd != failure.GrantSpent || len(res.Trajectory) != 2 {
		t.Errorf("answer %q grant %q trajectory %+v", res.Answer, res.GrantEnd, res.Trajectory)
	}
	// A grant of one turn (the default) is a single tool call.
	task.Grant = failure.NewGrant(0)
	f = newFake(t, func(n int, req request) reply {
		if len(req.Body.Tools) == 0 {
			return answer("done")
		}
		return calling(call("a", "issue_refund", `{}`), call("b", "issue_refund", `{"amount":1}`))
	})
	g = &recGate{}
	res, err = agent(t, client(t, f, nil), g).Run(context.Background(), task)
	if err != nil || len(g.got()) != 1 || res.Answer != "done" {
		t.Errorf("grant of one: %v, %d gate calls, answer %q", err, len(g.got()), res.Answer)
	}
}

// refusalOf returns the budget's refusal in err's chain.
func refusalOf(err error) (*budget.Refusal, bool) {
	var rf *budget.Refusal
	ok := errors.As(err, &rf)
	if !ok {
		rf = &budget.Refusal{}
	}
	return rf, ok
}

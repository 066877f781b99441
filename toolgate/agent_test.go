package toolgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/chatwire"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/rules"
	"github.com/blackboardkernel/bk/toolgate"
	"github.com/blackboardkernel/bk/worker/llm"
)

// The agent loop of worker/llm against the real gate: a fake
// OpenAI-compatible server (httptest, loopback) plays a model's tool
// calls, llm.Agent hands each to the *toolgate.Gate, and the refunds the
// payment API actually made are the ground truth. The gate's kernel has a
// CEL rule tying the refund to the order looked up, a once-key on the order
// and an approval policy above 500.

// agentOrders are the orders the order system knows: id -> amount.
var agentOrders = map[string]float64{"O1": 149.99, "O2": 80, "O3": 900}

// payDesk is the gate, the order system and the payment API.
type payDesk struct {
	k *kernel.Kernel
	g *toolgate.Gate

	mu        sync.Mutex
	staleNext map[string]int // reads of an order to serve stale
	requests  int            // payment API requests (effect calls)
	byKey     map[string]int // idempotency key -> index in paid
	paid      []payment
}

type payment struct {
	key, order, action string
	amount             float64
}

func newPayDesk(t *testing.T) *payDesk {
	t.Helper()
	d := &payDesk{staleNext: map[string]int{}, byKey: map[string]int{}}
	order := json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"],"additionalProperties":false}`)
	tools := []toolgate.Tool{
		{Unscoped: true, Name: "lookup_order", Description: "Read an order.", Parameters: order, Result: "order", Effect: d.lookup},
		{Unscoped: true, Name: "assess_refund", Description: "Ask the refund policy whether a refund of the looked-up order is due.", Parameters: order,
			Result: "assessment", Effect: d.assess},
		{Unscoped: true, Name: "issue_refund", Description: "Refund an order; above 500 it waits for approval.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"},"amount":{"type":"number"}},` +
				`"required":["order_id","amount"],"additionalProperties":false}`),
			Requires: []string{"refund_due"}, Bindings: orderBound, Result: "refund", Approval: "amount > 500",
			Once:  &kernel.OnceKey{Fields: []string{"order_id"}},
			Retry: toolgate.RetryPolicy{MaxAttempts: 2, Backoff: time.Millisecond}, Effect: d.pay},
	}
	rs, err := rules.New(rules.OnAction("refund_within_order", "issue_refund",
		`action.order_id == percepts.order.order_id && action.amount > 0.0 && action.amount <= percepts.order.amount`))
	if err != nil {
		t.Fatal(err)
	}
	if d.g, err = toolgate.New(context.Background(), toolgate.Config{
		Kernel: kernel.Config{
			Validators:  []kernel.Validator{rs},
			BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}},
		},
		Tools:     tools,
		Contracts: map[string][]string{"support": {"lookup_order", "assess_refund", "issue_refund"}},
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.g.Close() })
	d.k = d.g.Kernel()
	return d
}

func (d *payDesk) lookup(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
	id, _ := inv.Args["order_id"].(string)
	amount, ok := agentOrders[id]
	if !ok {
		return nil, fmt.Errorf("no order %q", id)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	stale := d.staleNext[id] > 0
	if stale {
		d.staleNext[id]--
	}
	return blackboard.Payload{"order_id": id, "amount": amount, "stale": stale}, nil
}

// assess proposes refund_due on the order the trace last observed.
func (d *payDesk) assess(ctx context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
	dec, err := d.k.Proposer(blackboard.RolePlanner, "refund-policy").Submit(ctx, kernel.Entry{TraceID: inv.TraceID, Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}})
	if err != nil {
		return nil, err
	}
	if !dec.Committed() {
		return blackboard.Payload{"refund_due": false, "refused": string(dec.Code)}, nil
	}
	return blackboard.Payload{"refund_due": true}, nil
}

// pay is the payment API: one payment per idempotency key.
func (d *payDesk) pay(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
	var a struct {
		OrderID string  `json:"order_id"`
		Amount  float64 `json:"amount"`
	}
	a.OrderID, _ = inv.Args["order_id"].(string)
	a.Amount, _ = inv.Args["amount"].(float64)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.requests++
	i, ok := d.byKey[inv.Key]
	if !ok {
		i = len(d.paid)
		d.byKey[inv.Key] = i
		d.paid = append(d.paid, payment{key: inv.Key, order: a.OrderID, action: inv.ActionID, amount: a.Amount})
	}
	return blackboard.Payload{"refund_id": fmt.Sprintf("re_%d", i+1), "amount": d.paid[i].amount}, nil
}

// fakeModel is an OpenAI-compatible chat completions server whose n-th
// answer (from 0) is script[n]; after the script it answers "done".
// chatMessage, toolCall and functionCall are the parts of the chat
// completions format the scripted model reads and writes.
type (
	chatMessage  = chatwire.Message
	toolCall     = chatwire.ToolCall
	functionCall = chatwire.FunctionCall
)

type fakeModel struct {
	*httptest.Server
	script [][]toolCall
	mu     sync.Mutex
	reqs   []modelRequest
}

type modelRequest struct {
	Messages []chatMessage `json:"messages"`
	Tools    []struct {
		Function toolgate.Spec `json:"function"`
	} `json:"tools"`
}

func newFakeModel(t *testing.T, script ...[]toolCall) *fakeModel {
	m := &fakeModel{script: script}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req modelRequest
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		m.mu.Lock()
		n := len(m.reqs)
		m.reqs = append(m.reqs, req)
		m.mu.Unlock()
		msg := map[string]any{"caller": "assistant", "content": "done"}
		finish := "stop"
		if n < len(m.script) {
			msg["content"], msg["tool_calls"], finish = nil, m.script[n], "tool_calls"
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": msg, "finish_reason": finish}},
			"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5}})
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *fakeModel) requests() []modelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.reqs)
}

// tc is a tool call as a model writes it.
func tc(tool, args string) toolCall {
	return toolCall{Type: "function", Function: functionCall{Name: tool, Arguments: args}}
}

func refundOf(order string, amount float64) toolCall {
	return tc("issue_refund", fmt.Sprintf(`{"order_id":%q,"amount":%v}`, order, amount))
}

var (
	lookupO1 = tc("lookup_order", `{"order_id":"O1"}`)
	assessO1 = tc("assess_refund", `{"order_id":"O1"}`)
	lookupO3 = tc("lookup_order", `{"order_id":"O3"}`)
	assessO3 = tc("assess_refund", `{"order_id":"O3"}`)
)

func round(calls ...toolCall) []toolCall { return calls }

// TestAgentOnGateNeverRunsAnUnsafeEffect: whatever the model calls, the
// payment API moves money only for a refund the kernel committed, that
// names the order looked up, within its amount, once per order, and above
// 500 only once approved.
func TestAgentOnGateNeverRunsAnUnsafeEffect(t *testing.T) {
	scenarios := []struct {
		name      string
		stale     map[string]int // reads served stale
		model     [][]toolCall
		maxRounds int
		wantErr   error
		want      []string       // per call: "tool outcome code"
		hints     map[int]string // call index -> what its hint says
		paid      []float64      // after the run
		decide    string         // "approve" or "deny" what waits, then Execute
		paidAfter []float64
	}{
		{
			name:  "valid calls",
			model: [][]toolCall{round(lookupO1), round(assessO1), round(refundOf("O1", 40))},
			want:  []string{"lookup_order executed EFFECT_SUCCEEDED", "assess_refund executed EFFECT_SUCCEEDED", "issue_refund executed EFFECT_SUCCEEDED"},
			paid:  []float64{40},
		},
		{
			name: "malformed JSON arguments, then repaired",
			model: [][]toolCall{round(lookupO1), round(assessO1),
				round(tc("issue_refund", `{"order_id": "O1", "amount": 40`), tc("issue_refund", `{"order_id":"O1","amount":"40"}`), tc("issue_refund", `[]`),
					tc("issue_refund", `{"order_id":"O1"}`)),
				round(refundOf("O1", 40))},
			want: []string{"lookup_order executed EFFECT_SUCCEEDED", "assess_refund executed EFFECT_SUCCEEDED",
				"issue_refund refused INVALID_ARGUMENTS", "issue_refund refused INVALID_ARGUMENTS", "issue_refund refused INVALID_ARGUMENTS",
				"issue_refund refused INVALID_ARGUMENTS", "issue_refund executed EFFECT_SUCCEEDED"},
			paid: []float64{40},
		},
		{
			name:  "unknown tools",
			model: [][]toolCall{round(lookupO1), round(assessO1), round(tc("wire_money", `{"to":"acct_9","amount":5000}`), tc("", `{}`))},
			want: []string{"lookup_order executed EFFECT_SUCCEEDED", "assess_refund executed EFFECT_SUCCEEDED",
				"wire_money refused TOOL_UNKNOWN", " refused TOOL_UNKNOWN"},
		},
		{
			name: "arguments beyond the evidence",
			model: [][]toolCall{round(lookupO1), round(assessO1),
				round(refundOf("O1", 500), refundOf("O2", 40), refundOf("O1", -40), refundOf("O1", 0),
					tc("issue_refund", `{"order_id":"O1","amount":40,"to_account":"acct_9"}`),
					tc("issue_refund", `{"order_id":"O1","amount":40,"requires_beliefs":[]}`))},
			want: []string{"lookup_order executed EFFECT_SUCCEEDED", "assess_refund executed EFFECT_SUCCEEDED",
				"issue_refund refused ARGUMENT_NOT_BOUND", "issue_refund refused ARGUMENT_NOT_BOUND", "issue_refund refused RULE_VIOLATED",
				"issue_refund refused RULE_VIOLATED", "issue_refund refused INVALID_ARGUMENTS", "issue_refund refused INVALID_ARGUMENTS"},
			hints: map[int]string{2: "order.amount", 3: "order.order_id", 4: "refund_within_order", 6: "to_account", 7: "requires_beliefs"},
		},
		{
			name: "the same call repeated",
			model: [][]toolCall{round(lookupO1), round(assessO1), round(refundOf("O1", 40), refundOf("O1", 40)),
				round(refundOf("O1", 40)), round(assessO1, refundOf("O1", 40))},
			want: []string{"lookup_order executed EFFECT_SUCCEEDED", "assess_refund executed EFFECT_SUCCEEDED",
				"issue_refund executed EFFECT_SUCCEEDED", "issue_refund refused DUPLICATE_ACTION", "issue_refund refused DUPLICATE_ACTION",
				"assess_refund executed EFFECT_SUCCEEDED", "issue_refund refused DUPLICATE_ACTION"},
			hints: map[int]string{3: "already taken", 6: "already taken"},
			paid:  []float64{40},
		},
		{
			name:  "a refund before the evidence",
			model: [][]toolCall{round(refundOf("O1", 40)), round(lookupO1, refundOf("O1", 40))},
			want: []string{"issue_refund refused NO_COMMITTED_BELIEF", "lookup_order executed EFFECT_SUCCEEDED",
				"issue_refund refused NO_COMMITTED_BELIEF"},
			hints: map[int]string{0: "not established"},
		},
		{
			name:  "stale order data",
			stale: map[string]int{"O1": 1},
			model: [][]toolCall{round(lookupO1), round(assessO1), round(refundOf("O1", 40)), round(lookupO1), round(assessO1), round(refundOf("O1", 40))},
			want: []string{"lookup_order executed EFFECT_SUCCEEDED", "assess_refund executed EFFECT_SUCCEEDED",
				"issue_refund refused NO_COMMITTED_BELIEF", "lookup_order executed EFFECT_SUCCEEDED", "assess_refund executed EFFECT_SUCCEEDED",
				"issue_refund executed EFFECT_SUCCEEDED"},
			hints: map[int]string{2: "The order information is out of date. Call lookup_order again"},
			paid:  []float64{40},
		},
		{
			name:  "above the approval threshold, approved",
			model: [][]toolCall{round(lookupO3), round(assessO3), round(refundOf("O3", 700)), round(refundOf("O3", 700), refundOf("O3", 400))},
			want: []string{"lookup_order executed EFFECT_SUCCEEDED", "assess_refund executed EFFECT_SUCCEEDED",
				"issue_refund pending_approval APPROVAL_REQUIRED", "issue_refund refused DUPLICATE_ACTION", "issue_refund refused DUPLICATE_ACTION"},
			decide:    "approve",
			paidAfter: []float64{700},
		},
		{
			name:  "above the approval threshold, denied",
			model: [][]toolCall{round(lookupO3), round(assessO3), round(refundOf("O3", 700))},
			want: []string{"lookup_order executed EFFECT_SUCCEEDED", "assess_refund executed EFFECT_SUCCEEDED",
				"issue_refund pending_approval APPROVAL_REQUIRED"},
			decide: "deny",
		},
		{
			name:      "a model that never stops",
			model:     append([][]toolCall{round(lookupO1), round(assessO1)}, slices.Repeat([][]toolCall{round(refundOf("O1", 40))}, 10)...),
			maxRounds: 5,
			wantErr:   llm.ErrMaxRounds,
			want: []string{"lookup_order executed EFFECT_SUCCEEDED", "assess_refund executed EFFECT_SUCCEEDED",
				"issue_refund executed EFFECT_SUCCEEDED", "issue_refund refused DUPLICATE_ACTION", "issue_refund refused DUPLICATE_ACTION"},
			paid: []float64{40},
		},
	}
	var calls, refusals, payments int
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			ctx := context.Background()
			d := newPayDesk(t)
			for k, v := range sc.stale {
				d.staleNext[k] = v
			}
			m := newFakeModel(t, sc.model...)
			client, err := llm.New(m.URL, llm.WithModel("fake"), llm.WithRetries(0))
			if err != nil {
				t.Fatal(err)
			}
			var opts []llm.AgentOption
			if sc.maxRounds > 0 {
				opts = append(opts, llm.WithMaxRounds(sc.maxRounds))
			}
			agent, err := llm.NewAgent(client, d.g, opts...)
			if err != nil {
				t.Fatal(err)
			}
			res, err := agent.Run(ctx, llm.Task{Caller: "support", TraceID: "ticket", User: "Refund my order."})
			if !errors.Is(err, sc.wantErr) || (sc.wantErr == nil && err != nil) {
				t.Fatalf("Run: %v, want %v", err, sc.wantErr)
			}

			var got []string
			for _, c := range res.Calls {
				got = append(got, fmt.Sprintf("%s %s %s", c.Call.Tool, c.Result.Outcome, c.Result.Code))
				if c.Result.Outcome == audit.OutcomeRefused {
					refusals++
					if c.Result.Hint == "" {
						t.Errorf("refusal of %s without a hint", c.Call.Tool)
					}
				}
				if c.Result.DecisionID == "" {
					t.Errorf("call %s %s has no decision record", c.Call.Tool, c.Call.Args)
				}
			}
			calls += len(got)
			if !slices.Equal(got, sc.want) {
				t.Errorf("calls:\n%q\nwant\n%q", got, sc.want)
			}
			for i, h := range sc.hints {
				if i >= len(res.Calls) || !strings.Contains(res.Calls[i].Result.Hint, h) {
					t.Errorf("call %d: hint %q, want it to say %q", i, res.Calls[min(i, len(res.Calls)-1)].Result.Hint, h)
				}
			}
			// The model read each result as the gate gave it.
			reqs := m.requests()
			for _, c := range res.Calls {
				if c.Round >= len(reqs) {
					continue
				}
				found := false
				for _, msg := range reqs[c.Round].Messages {
					found = found || msg.Role == "tool" && msg.ToolCallID == c.Call.ID && msg.Content == c.Result.ForModel()
				}
				if !found {
					t.Errorf("request %d does not carry the result of %s", c.Round, c.Call.ID)
				}
			}
			// Every decision the agent was given is on record.
			recorded := map[string]bool{}
			for rec, err := range audit.List(ctx, d.g.Kernel().Reader(), audit.Query{TraceID: "ticket"}) {
				if err != nil {
					t.Fatal(err)
				}
				recorded[rec.ID] = true
			}
			for _, c := range res.Calls {
				if !recorded[c.Result.DecisionID] {
					t.Errorf("decision %s of %s is not recorded", c.Result.DecisionID, c.Call.Tool)
				}
			}

			d.checkPaid(t, "after the run", sc.paid)
			if sc.decide != "" {
				pending, err := d.g.Pending(ctx, "ticket")
				if err != nil || len(pending) != 1 {
					t.Fatalf("pending approvals %+v %v", pending, err)
				}
				p := pending[0]
				v := audit.Approved
				if sc.decide == "deny" {
					v = audit.Denied
				}
				ans := audit.Approval{TraceID: "ticket", ActionID: p.ActionID, Digest: p.Digest, Decision: v, Note: sc.decide}
				if _, err := d.g.Approver("human:supervisor").Decide(ctx, ans); err != nil {
					t.Fatal(err)
				}
				for range 2 {
					res, err := d.g.Execute(ctx, p.ActionID)
					switch {
					case err != nil:
						t.Fatal(err)
					case sc.decide == "approve" && res.Outcome != audit.OutcomeExecuted,
						sc.decide == "deny" && (res.Code != reason.ApprovalDenied || res.FallbackID == ""):
						t.Errorf("Execute after %s: %+v", sc.decide, res)
					}
				}
				d.checkPaid(t, "after the approver", sc.paidAfter)
			}
			d.mu.Lock()
			payments += len(d.paid)
			d.mu.Unlock()
		})
	}
	t.Logf("%d scenarios: %d tool calls, %d refused, %d payments", len(scenarios), calls, refusals, payments)
}

// checkPaid compares the payment API's ledger with what the scenario
// allows, and each payment with the kernel's records: a committed
// issue_refund of the trace, for the order and amount paid, within the
// order's amount, above 500 only with an approval in the trace; one
// request per payment (nothing was paid twice under one key) and one
// payment per order.
func (d *payDesk) checkPaid(t *testing.T, when string, want []float64) {
	t.Helper()
	ctx := context.Background()
	d.mu.Lock()
	paid, requests := slices.Clone(d.paid), d.requests
	d.mu.Unlock()
	var amounts []float64
	orders := map[string]bool{}
	reader := d.k.Handle(blackboard.RoleTool, "auditor")
	for _, p := range paid {
		amounts = append(amounts, p.amount)
		act, err := reader.Get(ctx, p.action)
		if err != nil || act.Slot != blackboard.Actions || act.Mode != blackboard.ModeCommit || act.Kind != "issue_refund" {
			t.Errorf("%s: payment %+v for no committed refund (%v)", when, p, err)
			continue
		}
		if act.Payload["order_id"] != any(p.order) || act.Payload["amount"] != any(p.amount) || p.amount <= 0 || p.amount > agentOrders[p.order] {
			t.Errorf("%s: payment %+v does not match its action %v", when, p, act.Payload)
		}
		if orders[p.order] {
			t.Errorf("%s: order %s paid twice", when, p.order)
		}
		orders[p.order] = true
		if p.amount > 500 {
			approved := false
			for r, err := range d.g.Kernel().Reader().Trace(ctx, act.Provenance.TraceID) {
				if a, ok := audit.ApprovalOf(r); err == nil && ok && a.ActionID == act.ID {
					approved = a.Decision == audit.Approved
				}
			}
			if !approved {
				t.Errorf("%s: payment %+v above 500 without approval", when, p)
			}
		}
	}
	if !slices.Equal(amounts, want) || requests != len(paid) {
		t.Errorf("%s: paid %v in %d requests, want %v, one request each", when, amounts, requests, want)
	}
}

// The tools the model is offered follow the evidence: issue_refund only
// once refund_due holds.
func TestAgentOnGateSurface(t *testing.T) {
	d := newPayDesk(t)
	m := newFakeModel(t, round(lookupO1), round(assessO1), round(refundOf("O1", 40)))
	client, err := llm.New(m.URL, llm.WithModel("fake"))
	if err != nil {
		t.Fatal(err)
	}
	agent, err := llm.NewAgent(client, d.g)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Run(context.Background(), llm.Task{Caller: "support", TraceID: "ticket", User: "Refund O1."}); err != nil {
		t.Fatal(err)
	}
	var offered []string
	for _, r := range m.requests() {
		var names []string
		for _, tool := range r.Tools {
			names = append(names, tool.Function.Name)
		}
		offered = append(offered, strings.Join(names, ","))
	}
	want := []string{"lookup_order,assess_refund", "lookup_order,assess_refund", "lookup_order,assess_refund,issue_refund",
		"lookup_order,assess_refund,issue_refund"}
	if !slices.Equal(offered, want) {
		t.Errorf("offered %q, want %q", offered, want)
	}
}

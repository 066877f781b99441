package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/rules"
	"github.com/blackboardkernel/bk/toolgate"
	"github.com/blackboardkernel/bk/worker/llm"
)

// The refund desk's facts: one disputed charge, and a policy that pays
// refunds above approvalAbove only once an approver has approved them.
const (
	deskTrace     = "dispute-1"
	chargeID      = "ch_1"
	chargeAmount  = 149.99
	approvalAbove = 100.0
)

// refundDesk is a small gate over a real kernel. Its tools:
//
//	get_charge         read the charge (no effect)
//	record_refund_due  propose the belief refund_due, resting on the charge
//	issue_refund       propose the action issue_refund; when the kernel
//	                   commits it and the amount needs no approval, pay it
//
// Only a committed action is ever paid: the payments in paid are the ground
// truth of what the agent's calls did in the world. The kernel refuses a
// refund that does not match the charge (a rule), a second refund of the
// charge (a once-key) and a refund before its belief (no grounding).
type refundDesk struct {
	k *kernel.Kernel
	h *kernel.Proposer

	mu   sync.Mutex
	paid []payment
}

type payment struct {
	actionID string
	chargeID string
	amount   float64
}

func newRefundDesk(t *testing.T) *refundDesk {
	t.Helper()
	rs, err := rules.New(rules.OnAction("refund_within_charge", "issue_refund",
		`action.charge_id == percepts.charge.charge_id && action.amount > 0.0 && action.amount <= percepts.charge.amount`))
	if err != nil {
		t.Fatal(err)
	}
	k, err := kernel.New(kernel.Config{
		Validators:  []kernel.Validator{rs},
		BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"charge"}}},
		ActionSpecs: []kernel.ActionSpec{{
			Type:       "issue_refund",
			MinBeliefs: []string{"refund_due"},
			Once:       &kernel.OnceKey{Fields: []string{"charge_id"}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	_, err = k.Handle(blackboard.RoleTool, "payments").Write(context.Background(), kernel.Entry{TraceID: deskTrace, Slot: blackboard.Percepts,
		Kind: "charge", Payload: blackboard.Payload{"charge_id": chargeID, "amount": chargeAmount}})
	if err != nil {
		t.Fatal(err)
	}
	return &refundDesk{k: k, h: k.Proposer(blackboard.RolePlanner, "support-agent")}
}

var deskTools = map[string]toolgate.Spec{
	"get_charge":        {Name: "get_charge", Description: "Read the disputed charge."},
	"record_refund_due": {Name: "record_refund_due", Description: "Record that a refund of the charge is due."},
	"issue_refund":      refundSpec,
}

// Surface shows issue_refund only once the belief it rests on committed.
func (d *refundDesk) Surface(ctx context.Context, _, traceID, _ string) ([]toolgate.Spec, error) {
	out := []toolgate.Spec{deskTools["get_charge"], deskTools["record_refund_due"]}
	b, err := d.h.Find(ctx, traceID, blackboard.Beliefs, "refund_due")
	switch {
	case errors.Is(err, blackboard.ErrNotFound):
	case err != nil:
		return nil, err
	case b.Mode == blackboard.ModeCommit:
		out = append(out, deskTools["issue_refund"])
	}
	return out, nil
}

var deskHints = map[reason.Code]string{
	reason.InvalidArguments:  `pass a JSON object {"charge_id": string, "amount": number}`,
	reason.ToolUnknown:       "call one of get_charge, record_refund_due, issue_refund",
	reason.RuleViolated:      "refund the charge you were shown, at most its amount (see get_charge)",
	reason.DuplicateAction:   "this charge has already been refunded or is awaiting approval; do not retry",
	reason.NoCommittedBelief: "call record_refund_due first",
}

func refused(code reason.Code, root kernel.Cause) toolgate.Result {
	if root.Code == "" {
		root.Code = code
	}
	return toolgate.Result{Outcome: audit.OutcomeRefused, Code: code, RootCause: root, Hint: deskHints[code]}
}

func (d *refundDesk) Call(ctx context.Context, c toolgate.Call) (toolgate.Result, error) {
	if _, known := deskTools[c.Tool]; !known {
		return refused(reason.ToolUnknown, kernel.Cause{}), nil
	}
	var args map[string]any
	if err := json.Unmarshal(c.Args, &args); err != nil || args == nil {
		return refused(reason.InvalidArguments, kernel.Cause{}), nil
	}
	switch c.Tool {
	case "get_charge":
		r, err := d.h.Find(ctx, c.TraceID, blackboard.Percepts, "charge")
		if err != nil {
			return toolgate.Result{}, err
		}
		return toolgate.Result{Outcome: audit.OutcomeExecuted, Output: r.Payload}, nil
	case "record_refund_due":
		dec, err := d.h.Submit(ctx, kernel.Entry{TraceID: c.TraceID, Slot: blackboard.Beliefs, Kind: "refund_due",
			Payload: blackboard.Payload{"value": true, "depends_on": []string{"charge"}}})
		if err != nil {
			return toolgate.Result{}, err
		}
		if !dec.Committed() {
			return refused(dec.Code, dec.RootCause()), nil
		}
		return toolgate.Result{Outcome: audit.OutcomeExecuted, Code: dec.Code, DecisionID: dec.ID}, nil
	}
	// issue_refund
	id, okID := args["charge_id"].(string)
	amount, okAmount := args["amount"].(float64)
	if !okID || !okAmount || len(args) != 2 {
		return refused(reason.InvalidArguments, kernel.Cause{}), nil
	}
	dec, err := d.h.Submit(ctx, kernel.Entry{TraceID: c.TraceID, Slot: blackboard.Actions, Kind: "issue_refund",
		Payload: blackboard.Payload{"charge_id": id, "amount": amount, "requires_beliefs": []string{"refund_due"}}})
	if err != nil {
		return toolgate.Result{}, err
	}
	if !dec.Committed() {
		return refused(dec.Code, dec.RootCause()), nil
	}
	res := toolgate.Result{Code: dec.Code, ActionID: dec.CommittedID, DecisionID: dec.ID}
	if amount > approvalAbove {
		res.Outcome, res.ActionID = audit.OutcomePendingApproval, dec.CommittedID
		return res, nil
	}
	d.mu.Lock()
	d.paid = append(d.paid, payment{actionID: dec.CommittedID, chargeID: id, amount: amount})
	n := len(d.paid)
	d.mu.Unlock()
	res.Outcome, res.Output = audit.OutcomeExecuted, blackboard.Payload{"refund_id": fmt.Sprintf("re_%d", n), "amount": amount}
	return res, nil
}

// committedRefunds returns the issue_refund actions the kernel committed.
func (d *refundDesk) committedRefunds(t *testing.T) map[string]blackboard.Record {
	t.Helper()
	out := map[string]blackboard.Record{}
	for r, err := range d.h.Trace(context.Background(), deskTrace) {
		if err != nil {
			t.Fatal(err)
		}
		if r.Slot == blackboard.Actions && r.Mode == blackboard.ModeCommit && r.Kind == "issue_refund" {
			out[r.ID] = r
		}
	}
	return out
}

// refund is the model's issue_refund call with the given argument text.
func refund(args string) llm.ToolCall { return call("", "issue_refund", args) }

var (
	getCharge  = call("", "get_charge", "{}")
	recordDue  = call("", "record_refund_due", `{"reason":"the customer disputes the charge"}`)
	refund40   = refund(`{"charge_id":"ch_1","amount":40}`)
	deskSystem = "You handle card disputes. Use the tools; a refused call explains itself in its result."
)

// TestAgentOnKernelNeverPaysAnUnsafeRefund runs scripted models against the
// refund desk and checks what was paid against what the scenario allows.
func TestAgentOnKernelNeverPaysAnUnsafeRefund(t *testing.T) {
	scenarios := []struct {
		name      string
		model     []reply // the n-th completion; after the last, "done"
		maxRounds int
		wantErr   error
		want      []string // per call: tool outcome code
		paid      []float64
		committed int // issue_refund actions the kernel commits
	}{
		{
			name:  "valid calls",
			model: []reply{calling(getCharge), calling(recordDue), calling(refund40)},
			want: []string{
				"get_charge executed ",
				"record_refund_due executed COMMITTED",
				"issue_refund executed COMMITTED",
			},
			paid: []float64{40}, committed: 1,
		},
		{
			name: "malformed JSON arguments, then repaired",
			model: []reply{
				calling(recordDue),
				calling(refund(`{"charge_id": "ch_1", "amount": 40`), refund(`{"charge_id":"ch_1","amount":"40"}`), refund(`[]`)),
				calling(refund40),
			},
			want: []string{
				"record_refund_due executed COMMITTED",
				"issue_refund refused INVALID_ARGUMENTS",
				"issue_refund refused INVALID_ARGUMENTS",
				"issue_refund refused INVALID_ARGUMENTS",
				"issue_refund executed COMMITTED",
			},
			paid: []float64{40}, committed: 1,
		},
		{
			name:  "an unknown tool",
			model: []reply{calling(recordDue), calling(call("", "wire_money", `{"to":"acct_9","amount":5000}`))},
			want: []string{
				"record_refund_due executed COMMITTED",
				"wire_money refused TOOL_UNKNOWN",
			},
			committed: 0,
		},
		{
			name: "arguments beyond the evidence",
			model: []reply{
				calling(recordDue),
				calling(refund(`{"charge_id":"ch_1","amount":500}`)),
				calling(refund(`{"charge_id":"ch_2","amount":40}`)),
				calling(refund(`{"charge_id":"ch_1","amount":-40}`)),
			},
			want: []string{
				"record_refund_due executed COMMITTED",
				"issue_refund refused RULE_VIOLATED",
				"issue_refund refused RULE_VIOLATED",
				"issue_refund refused RULE_VIOLATED",
			},
			committed: 0,
		},
		{
			name: "the same call repeated",
			model: []reply{
				calling(recordDue),
				calling(call("a", "issue_refund", `{"charge_id":"ch_1","amount":40}`), call("b", "issue_refund", `{"charge_id":"ch_1","amount":40}`)),
				calling(refund40),
			},
			want: []string{
				"record_refund_due executed COMMITTED",
				"issue_refund executed COMMITTED",
				"issue_refund refused DUPLICATE_ACTION",
				"issue_refund refused DUPLICATE_ACTION",
			},
			paid: []float64{40}, committed: 1,
		},
		{
			name: "a refund above the approval threshold, then split",
			model: []reply{
				calling(recordDue),
				calling(refund(`{"charge_id":"ch_1","amount":120}`)),
				calling(refund(`{"charge_id":"ch_1","amount":60}`), refund(`{"charge_id":"ch_1","amount":60}`)),
			},
			want: []string{
				"record_refund_due executed COMMITTED",
				"issue_refund pending_approval COMMITTED",
				"issue_refund refused DUPLICATE_ACTION",
				"issue_refund refused DUPLICATE_ACTION",
			},
			committed: 1, // committed, waiting for an approver: not paid
		},
		{
			name:  "a refund before its belief (not on the surface)",
			model: []reply{calling(refund40)},
			want:  []string{"issue_refund refused NO_COMMITTED_BELIEF"},
		},
		{
			name:      "a model that never stops",
			model:     append([]reply{calling(recordDue)}, slices.Repeat([]reply{calling(refund40)}, 10)...),
			maxRounds: 4,
			wantErr:   llm.ErrMaxRounds,
			want: []string{
				"record_refund_due executed COMMITTED",
				"issue_refund executed COMMITTED",
				"issue_refund refused DUPLICATE_ACTION",
				"issue_refund refused DUPLICATE_ACTION",
			},
			paid: []float64{40}, committed: 1,
		},
	}
	var calls, refusals, payments int
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			f := newFake(t, func(n int, _ request) reply {
				if n < len(sc.model) {
					return sc.model[n]
				}
				return answer("done")
			})
			desk := newRefundDesk(t)
			var opts []llm.AgentOption
			if sc.maxRounds > 0 {
				opts = append(opts, llm.WithMaxRounds(sc.maxRounds))
			}
			res, err := agent(t, client(t, f, nil), desk, opts...).Run(context.Background(), llm.Task{
				Caller: "support-agent", TraceID: deskTrace, System: deskSystem, User: "Customer disputes charge ch_1.",
			})
			if !errors.Is(err, sc.wantErr) || (sc.wantErr == nil && err != nil) {
				t.Fatalf("Run: err = %v, want %v", err, sc.wantErr)
			}
			if sc.wantErr == nil && res.Answer != "done" {
				t.Errorf("answer %q, want done", res.Answer)
			}

			// Every call reached the gate, and got the answer the policy gives.
			var got []string
			for _, r := range res.Calls {
				got = append(got, fmt.Sprintf("%s %s %s", r.Call.Tool, r.Result.Outcome, r.Result.Code))
				if r.Result.Outcome == audit.OutcomeRefused {
					refusals++
					if r.Result.Hint == "" {
						t.Errorf("refusal of %s has no hint", r.Call.Tool)
					}
				}
			}
			calls += len(got)
			if !slices.Equal(got, sc.want) {
				t.Errorf("calls:\n%q\nwant\n%q", got, sc.want)
			}

			// The model saw each result, with its code and hint, in the next
			// request (the last round's results have none when the rounds ran
			// out).
			reqs := f.requests()
			for _, r := range res.Calls {
				if r.Round >= len(reqs) {
					continue
				}
				content, ok := reqs[r.Round].toolResults()[r.Call.ID]
				if !ok || content != r.Result.ForModel() {
					t.Errorf("request %d: result of %s = %q, want %q", r.Round, r.Call.ID, content, r.Result.ForModel())
				}
			}

			// Ground truth: what was paid is what the scenario allows, each
			// payment is a committed action within the charge and the
			// approval threshold, and the charge is refunded at most once.
			var amounts []float64
			total := 0.0
			committed := desk.committedRefunds(t)
			for _, p := range desk.paid {
				amounts = append(amounts, p.amount)
				total += p.amount
				rec, ok := committed[p.actionID]
				if !ok || rec.Payload["amount"] != p.amount || p.chargeID != chargeID || p.amount > approvalAbove {
					t.Errorf("unsafe payment %+v (committed record %v)", p, rec.Payload)
				}
			}
			payments += len(amounts)
			if !slices.Equal(amounts, sc.paid) || total > chargeAmount || len(amounts) > 1 {
				t.Errorf("paid %v, want %v", amounts, sc.paid)
			}
			if len(committed) != sc.committed {
				t.Errorf("kernel committed %d issue_refund actions, want %d", len(committed), sc.committed)
			}
			if u := res.Usage; u.ModelCalls != len(reqs) || u.TotalTokens != 60*len(reqs) {
				t.Errorf("usage %+v after %d requests; want 60 tokens per call", u, len(reqs))
			}
		})
	}
	t.Logf("%d scenarios: %d tool calls, %d refused, %d paid", len(scenarios), calls, refusals, payments)
}

// TestAgentOnKernelShowsToolsAsBeliefsCommit: issue_refund is offered only
// from the round after its belief committed.
func TestAgentOnKernelShowsToolsAsBeliefsCommit(t *testing.T) {
	f := newFake(t, func(n int, _ request) reply {
		return []reply{calling(getCharge), calling(recordDue), calling(refund40), answer("Refunded.")}[n]
	})
	desk := newRefundDesk(t)
	if _, err := agent(t, client(t, f, nil), desk).Run(context.Background(), llm.Task{
		Caller: "support-agent", TraceID: deskTrace, User: "Customer disputes charge ch_1.",
	}); err != nil {
		t.Fatal(err)
	}
	before := []string{"get_charge", "record_refund_due"}
	after := []string{"get_charge", "record_refund_due", "issue_refund"}
	for i, want := range [][]string{before, before, after, after} {
		if got := f.requests()[i].toolNames(); !slices.Equal(got, want) {
			t.Errorf("request %d offered %v, want %v", i, got, want)
		}
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/rules"
	"github.com/blackboardkernel/bk/toolgate"
)

// The governance: everything in this file is what the desk's owner
// configures. The model is untrusted; the kernel and the gate decide each
// of its calls, and only committed (and, above 500, approved) refunds
// reach the payment API.

const (
	role            = "support"
	beliefRefundDue = "refund_due"
	perceptOrder    = "order"
	approver        = "supervisor:maria"
	// lease is how long an attempt is reserved to the process running it:
	// a restarted desk waits this long before it recovers.
	lease = time.Second
)

// The rules tie what the model asks for to what was observed. The refund
// policy's belief must agree with the current order; a refund must be for
// the assessed order, and at most what the policy assessed; an email goes
// to the customer of the order looked up.
var deskRules = []rules.Option{
	rules.OnBelief("refund_due_follows_the_order", beliefRefundDue,
		`belief.order_id == percepts.order.order_id && value == (percepts.order.refundable && percepts.order.refunded < percepts.order.amount) && `+
			`belief.max_refund == percepts.order.amount - percepts.order.refunded`),
	rules.OnAction("refund_within_assessment", "issue_refund",
		`action.order_id == beliefs.refund_due.order_id && action.amount > 0.0 && action.amount <= beliefs.refund_due.max_refund`),
	rules.OnAction("email_the_customer", "send_email", `action.to == percepts.order.customer_email`),
}

const (
	orderParams  = `{"type":"object","properties":{"order_id":{"type":"string","description":"the order's id, e.g. A1"}},"required":["order_id"],"additionalProperties":false}`
	refundParams = `{"type":"object","properties":{"order_id":{"type":"string"},"amount":{"type":"number","description":"in EUR; at most the max_refund assess_refund gave"},` +
		`"reason":{"type":"string","enum":["late","damaged","wrong_item","not_received","other"]}},"required":["order_id","amount","reason"],"additionalProperties":false}`
	emailParams = `{"type":"object","properties":{"to":{"type":"string"},"subject":{"type":"string"},"body":{"type":"string"}},` +
		`"required":["to","subject","body"],"additionalProperties":false}`
)

// desk is the governed support desk: a kernel, the gate and the tools'
// effects on the world.
type desk struct {
	k      *kernel.Kernel
	g      *toolgate.Gate
	w      *world
	policy *kernel.Governor // the refund policy, the owner's code: proposes refund_due with its decision record
	reader kernel.Handle

	// The crash switch (--crash-after): once effects effect calls were
	// made, the next refund kills the process after the payment API paid
	// it and before the gate records the result.
	effects    int
	crashAfter int
	out        io.Writer
	onCrash    func(trace string) // prints what the trace decided so far
}

func newDesk(ctx context.Context, store blackboard.Store, namespace string, w *world, crashAfter int, out io.Writer) (*desk, error) {
	d := &desk{w: w, crashAfter: crashAfter, out: out}
	tools := d.tools()
	rs, err := rules.New(deskRules...)
	if err != nil {
		return nil, err
	}
	g, err := toolgate.New(ctx, toolgate.WithTools(tools...), toolgate.WithLease(lease),
		toolgate.WithKernel(kernel.WithStore(store), kernel.WithNamespace(namespace),
			kernel.WithBeliefSpecs(kernel.BeliefSpec{Kind: beliefRefundDue, DependsOn: []string{perceptOrder}}),
			kernel.WithValidators(rs)),
		toolgate.WithContracts(toolgate.Contract{Name: role, Tools: []string{"lookup_order", "assess_refund", "issue_refund", "send_email"}}))
	if err != nil {
		return nil, err
	}
	k := g.Kernel()
	d.k, d.g, d.policy, d.reader = k, g, k.Governor(), k.Tool("desk")
	return d, nil
}

func (d *desk) tools() []toolgate.Tool {
	return []toolgate.Tool{
		{
			Name:        "lookup_order",
			Description: "Read an order from the order system: customer, item, amount, what was refunded, carrier status.",
			Parameters:  json.RawMessage(orderParams),
			Result:      perceptOrder,
			Effect:      d.lookup,
		},
		{
			Name: "assess_refund",
			Description: "Ask the refund policy whether a refund of the order you looked up is due, and how much at most. " +
				"Call it after lookup_order, before issue_refund.",
			Parameters: json.RawMessage(orderParams),
			Result:     "refund_assessment",
			Effect:     d.assess,
		},
		{
			Name:        "issue_refund",
			Description: "Refund an order to the customer's card. Refunds above 500 wait for a supervisor's approval.",
			Parameters:  json.RawMessage(refundParams),
			Requires:    []string{beliefRefundDue},
			// The refund is of the order the belief rests on, and never of
			// more than it cost (the rule narrows that to max_refund).
			Bindings: []toolgate.Binding{
				{Arg: "order_id", Percept: perceptOrder, Op: toolgate.Equal},
				{Arg: "amount", Percept: perceptOrder, Op: toolgate.AtMost},
			},
			Result:   "refund",
			Approval: toolgate.ApprovalPolicy{When: "amount > 500"},
			// One refund per order, ever, in every trace: the once-key is
			// also the payment API's idempotency key.
			Once:  &kernel.OnceKey{Fields: []string{"order_id"}},
			Retry: toolgate.RetryPolicy{MaxAttempts: 4, Backoff: 50 * time.Millisecond, MaxBackoff: 400 * time.Millisecond},
			Hints: map[blackboard.Code]string{
				blackboard.CodeStaleEvidence: "The order information is out of date. Call lookup_order again to refresh it, then assess_refund, then retry.",
				blackboard.CodeRuleViolated:  "Refund only the order you assessed, and at most the max_refund assess_refund gave. Fix the amount, then retry.",
			},
			Effect: d.refund,
		},
		{
			Name:        "send_email",
			Description: "Email the customer of the order you looked up.",
			Parameters:  json.RawMessage(emailParams),
			Result:      "email",
			Hints: map[blackboard.Code]string{
				blackboard.CodeRuleViolated: "Email only the customer_email of the order you looked up.",
			},
			Effect: d.email,
		},
	}
}

// count counts an effect call.
func (d *desk) count() { d.effects++ }

// lookup reads the order. The order system's stale flag lands at the top
// of the result, where the kernel reads it.
func (d *desk) lookup(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
	d.count()
	id, _ := inv.Args["order_id"].(string)
	o, err := d.w.Lookup(id)
	return blackboard.Payload(o), err
}

// assess is the refund policy, as code: from the order the trace last
// observed, it proposes the belief refund_due (true when the order is in
// its return window and not fully refunded; max_refund what is left),
// resting on that observation. The kernel decides the belief: stale order
// data is refused, and the belief rule checks the policy's arithmetic.
// The model gets the decision, and a hint when it was refused.
func (d *desk) assess(ctx context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
	d.count()
	id, _ := inv.Args["order_id"].(string)
	cur, err := d.reader.Find(ctx, inv.TraceID, blackboard.Percepts, perceptOrder)
	if err != nil || cur.Payload["order_id"] != any(id) {
		return blackboard.Payload{"order_id": id, "refund_due": false,
			"hint": "Look the order up with lookup_order first, then assess it."}, nil
	}
	amount, _ := cur.Payload.Float("amount")
	refunded, _ := cur.Payload.Float("refunded")
	due := cur.Payload.Bool("refundable") && refunded < amount
	dec, err := d.policy.Submit(ctx, "refund-policy", kernel.Entry{TraceID: inv.TraceID, Slot: blackboard.Beliefs, Kind: beliefRefundDue,
		Payload: blackboard.Payload{kernel.KeyValue: due, kernel.KeyDependsOn: []string{perceptOrder}, "order_id": id, "max_refund": amount - refunded}},
		func(dec kernel.Decision, committed blackboard.Record) ([]kernel.Follow, error) {
			// The policy's decision record lands with the decision.
			dr := audit.ForDecision(inv.TraceID, beliefRefundDue, dec, committed)
			dr.Context = blackboard.Payload{"tool": "assess_refund", "policy": "refund_policy_v1", "order_id": id}
			f, err := dr.Follow()
			return []kernel.Follow{f}, err
		})
	if err != nil {
		return nil, err
	}
	if !dec.Committed() {
		root := dec.RootCause()
		out := blackboard.Payload{"order_id": id, "refund_due": false, "refused": string(dec.Code)}
		switch root.Code {
		case blackboard.CodeStaleEvidence, blackboard.CodeSupersededEvidence, blackboard.CodeTTLExpired:
			out["hint"] = "The order data was out of date. Call lookup_order again, then assess_refund."
		default:
			out["hint"] = "The refund policy could not assess this order (" + string(root.Code) + "). Do not refund it; tell the customer it needs review."
		}
		return out, nil
	}
	return blackboard.Payload{"order_id": id, "refund_due": due, "max_refund": amount - refunded}, nil
}

// refund asks the payment API to refund, under the gate's idempotency key.
func (d *desk) refund(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
	d.count()
	var a struct {
		OrderID string  `json:"order_id"`
		Amount  float64 `json:"amount"`
	}
	if err := inv.Decode(&a); err != nil {
		return nil, err
	}
	p, replayed, err := d.w.Refund(inv.Key, a.OrderID, a.Amount)
	if err == errUnavailable {
		return nil, toolgate.Retryable(err)
	}
	if err != nil {
		return nil, err
	}
	if d.crashAfter > 0 && d.effects >= d.crashAfter && !replayed {
		if d.onCrash != nil {
			d.onCrash(inv.TraceID)
		}
		fmt.Fprintf(d.out, "\n*** --crash-after %d: the payment API paid %s (%.2f on order %s); killing the process before the gate records the result\n",
			d.crashAfter, p.ID, p.Amount, p.OrderID)
		crash()
	}
	out := blackboard.Payload{"refund_id": p.ID, "order_id": p.OrderID, "amount": p.Amount}
	if replayed {
		out["idempotent_replay"] = true // the payment API returned the first payment; no money moved
	}
	return out, nil
}

// email sends a message through the outbox, under the gate's idempotency
// key.
func (d *desk) email(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
	d.count()
	to, _ := inv.Args["to"].(string)
	subject, _ := inv.Args["subject"].(string)
	m, err := d.w.Send(inv.Key, to, subject)
	if err != nil {
		return nil, err
	}
	return blackboard.Payload{"message_id": m.ID, "to": m.To}, nil
}

// ruling is a supervisor's decision on a refund that waited.
type ruling struct {
	ActionID, Decision, Digest, Note string
}

// supervise is the supervisor's side: it decides every refund of the
// trace that waits for approval (once: one already decided is left
// alone), and returns the rulings it made.
//
// The supervisor approves unless the customer says the parcel never
// arrived and the carrier has it signed for: that goes to a claims review
// instead.
func (d *desk) supervise(ctx context.Context, trace string) ([]ruling, error) {
	pending, err := d.g.PendingApprovals(ctx, trace)
	if err != nil {
		return nil, err
	}
	sup := d.g.Approver(approver)
	var rulings []ruling
	for _, p := range pending {
		decided := false
		for _, err := range d.g.Approvals(ctx, trace, p.ActionID) {
			if err != nil {
				return nil, err
			}
			decided = true
		}
		if decided {
			continue
		}
		id, _ := p.Args["order_id"].(string)
		o, _ := findOrder(id)
		reason, _ := p.Args["reason"].(string)
		r := ruling{ActionID: p.ActionID, Digest: p.Digest}
		if reason == "not_received" && strings.Contains(o.Carrier, "signed for") {
			r.Decision, r.Note = audit.Denied, "the carrier has it delivered and signed for; open a claim review"
			_, err = sup.Deny(ctx, trace, p.ActionID, p.Digest, r.Note, time.Hour)
		} else {
			r.Decision, r.Note = audit.Approved, "checked the order and the warehouse note"
			_, err = sup.Approve(ctx, trace, p.ActionID, p.Digest, r.Note, time.Hour)
		}
		if err != nil {
			return rulings, err
		}
		rulings = append(rulings, r)
	}
	return rulings, nil
}

// executeWaited executes, through the gate, every refund of the trace that
// waited for approval: the gate applies the supervisor's ruling (runs the
// approved, escalates the denied to the safe fallback) or returns the
// result recorded earlier. The results come in commit order.
func (d *desk) executeWaited(ctx context.Context, trace string) ([]toolgate.Result, error) {
	var waited []string
	for rec, err := range d.g.Decisions(ctx, toolgate.DecisionFilter{TraceID: trace, Tool: "issue_refund", Outcome: audit.OutcomePendingApproval}) {
		if err != nil {
			return nil, err
		}
		waited = append(waited, rec.Subject)
	}
	var out []toolgate.Result
	for _, id := range waited {
		res, err := d.g.Execute(ctx, id)
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}

package main

import (
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/rules"
	"github.com/blackboardkernel/bk/toolgate"
)

// The desk's policy: its tools' definitions (what each returns, what it
// grounds on, whom it may touch, when a person approves) and its rules.
// This is the domain the desk's owner writes down for the kernel and the
// gate to enforce, whatever the integration around it; integration.go
// hands both to the gate (newDesk). Not counted as integration code: the
// README says so, and what each line means.

// tools defines the desk's tools, each in one place, over their bodies
// (tools.go); their schemas are generated from the bodies' argument types
// (toolgate.Func), and the gate's default hints and retries serve them.
func (d *desk) tools() []toolgate.Tool {
	return []toolgate.Tool{
		toolgate.Func(toolgate.Tool{Name: "lookup_order", Result: "order", ReadOnly: true,
			Description: "Read an order from the order system: customer, item, amount, what was refunded, carrier status.",
			// The refund policy, declared: an order's result grounds refund_due.
			Derives: []toolgate.Derive{{Belief: "refund_due", Value: "result.refundable && result.refunded < result.amount",
				Fields: map[string]string{"order_id": "result.order_id", "max_refund": "result.amount - result.refunded"}}}}, d.lookup),
		toolgate.Func(toolgate.Tool{Name: "issue_refund", Result: "refund", Requires: []string{"refund_due"},
			Description: "Refund an order to the customer's card. Refunds above 500 wait for a supervisor's approval.",
			// Of the ticket's order (the request) and of the order looked
			// up, and never more than it cost; one refund per order, ever
			// (the once-key is also the payment API's idempotency key);
			// above 500, a person approves.
			Scope: map[string]string{"order_id": "order"}, Once: &kernel.OnceKey{Fields: []string{"order_id"}}, Approval: "amount > 500",
			Bindings: []toolgate.Binding{{Arg: "order_id", Percept: "order", Op: "equal"}, {Arg: "amount", Percept: "order", Op: "at_most"}}}, d.refund),
		// To the ticket's customer only (the request's principal); the
		// outbox honours the key.
		toolgate.Func(toolgate.Tool{Name: "send_email", Result: "email", Idempotent: true, Scope: map[string]string{"to": "principal"},
			Description: "Email the customer of the order you looked up."}, d.email),
	}
}

// deskRules is the desk's validator (CEL, package rules): a refund within
// what the belief allows; an email to the order's customer.
func deskRules() (*rules.Rules, error) {
	return rules.New(
		rules.OnAction("refund_within_assessment", "issue_refund",
			`action.order_id == beliefs.refund_due.order_id && action.amount > 0.0 && action.amount <= beliefs.refund_due.max_refund`),
		rules.OnAction("email_the_customer", "send_email", `action.to == percepts.order.customer_email`))
}

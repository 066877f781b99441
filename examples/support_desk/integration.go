package main

// The integration code: everything in this file, and the three lines of
// run.go marked "// integration" (the context compiler for the model's
// window, starting the supervisor, handing a message to the agent), is what the desk's owner writes to put a model
// behind the gate. The model is untrusted; the kernel and the gate decide
// each of its calls, and only committed (and, above 500, approved) refunds
// reach the payment API. Not integration: the tools' bodies (tools.go),
// the simulated world, the scripted model, the tickets, the person
// approving, the command line and the report. The README counts these
// lines, and TestIntegrationLines holds them to 60.

import (
	"context"
	"time"

	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/pack"
	"github.com/blackboardkernel/bk/rules"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/supervisor"
	"github.com/blackboardkernel/bk/toolgate"
	"github.com/blackboardkernel/bk/worker/llm"
)

// role is the contract the model's calls are made under; lease, an
// attempt's reservation: a restarted desk's supervisor recovers the
// attempt of a crashed process once it ran out.
const role, lease = "support", time.Second

// The tools' arguments; the schemas the model is shown are generated from
// them.
type orderArgs struct {
	OrderID string `json:"order_id" jsonschema:"the order's id, e.g. A1"`
}

type refundArgs struct {
	OrderID string  `json:"order_id"`
	Amount  float64 `json:"amount" jsonschema:"in EUR; at most what is left to refund on the order"`
	Reason  string  `json:"reason" jsonschema:"late, damaged, wrong_item, not_received or other"`
}

type emailArgs struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
	Body    string `json:"body"`
}

// newDesk opens the gate over store, with the desk's tools, each defined in
// one place (the gate's default hints and retries serve them); the agent
// that lets the model call them, showing it each round the context comp
// compiles from the ticket's current evidence (package pack); and the
// supervisor that recovers and resumes the gate's actions, reporting to
// events. It returns the desk even with
// an error, so that the caller closes a gate it opened.
func newDesk(ctx context.Context, store store.Store, namespace string, w *world, model *llm.Client, comp *pack.Compiler,
	events func(context.Context, supervisor.Event)) (*desk, error) {
	rs, err := rules.New( // a refund within what the belief allows; an email to the order's customer
		rules.OnAction("refund_within_assessment", "issue_refund",
			`action.order_id == beliefs.refund_due.order_id && action.amount > 0.0 && action.amount <= beliefs.refund_due.max_refund`),
		rules.OnAction("email_the_customer", "send_email", `action.to == percepts.order.customer_email`))
	d := &desk{w: w}
	if err == nil {
		d.g, err = toolgate.New(ctx, toolgate.WithLease(lease), toolgate.WithTools(
			toolgate.Func(toolgate.Tool{Name: "lookup_order", Result: "order", ReadOnly: true,
				Description: "Read an order from the order system: customer, item, amount, what was refunded, carrier status.",
				// The refund policy, declared: an order's result grounds refund_due.
				Derives: []toolgate.Derive{{Belief: "refund_due", Value: "result.refundable && result.refunded < result.amount",
					Fields: map[string]string{"order_id": "result.order_id", "max_refund": "result.amount - result.refunded"}}},
			}, d.lookup),
			toolgate.Func(toolgate.Tool{Name: "issue_refund", Result: "refund", Requires: []string{"refund_due"},
				Description: "Refund an order to the customer's card. Refunds above 500 wait for a supervisor's approval.",
				// Of the ticket's order (the request) and of the order looked
				// up, and never more than it cost; one refund per order, ever
				// (the once-key is also the payment API's idempotency key);
				// above 500, a person approves.
				Scope: map[string]string{"order_id": "order"}, Once: toolgate.OnceBy("order_id"), Approval: toolgate.ApprovalPolicy{When: "amount > 500"},
				Bindings: []toolgate.Binding{{Arg: "order_id", Percept: "order", Op: toolgate.Equal}, {Arg: "amount", Percept: "order", Op: toolgate.AtMost}}}, d.refund),
			// To the ticket's customer only (the request's principal); the
			// outbox honours the key.
			toolgate.Func(toolgate.Tool{Name: "send_email", Result: "email", Idempotent: true, Scope: map[string]string{"to": toolgate.ScopePrincipal}, Description: "Email the customer of the order you looked up."}, d.email)),
			toolgate.WithKernel(kernel.WithStore(store), kernel.WithNamespace(namespace), kernel.WithValidators(rs)),
			toolgate.WithContracts(toolgate.Contract{Name: role, Tools: []string{"lookup_order", "issue_refund", "send_email"}}))
	}
	if err == nil {
		d.agent, err = llm.NewAgent(model, d.g, llm.WithMaxRounds(12), llm.WithCompiler(comp))
	}
	if err == nil {
		d.sup, err = supervisor.New(d.g, supervisor.WithInterval(100*time.Millisecond), supervisor.WithEvents(events))
	}
	return d, err
}

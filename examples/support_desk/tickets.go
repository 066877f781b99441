package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/blackboardkernel/bk/audit"
)

// The ticket queue: what customers wrote. Each ticket is one trace; each
// message is one conversation of the agent (a task), and a message marked
// afterApproval is the desk's own follow-up once the supervisor decided the
// refunds of the ticket that waited.

type ticket struct {
	ID    string // also the trace id
	Order string // the order the ticket is about
	// Customer is who wrote it, as the ticket system knows them (their
	// email address): the request's principal.
	Customer string
	Messages []message
	// readOnly: the desk's owner puts the ticket's trace in the read_only
	// safety mode before the agent sees it (a chargeback on the order is
	// open): no tool with an effect is shown to the model or run.
	readOnly bool
}

type message struct {
	From          string // "customer" or "desk"
	Text          string // for a follow-up, built from the supervisor's results
	afterApproval bool
}

var tickets = []ticket{
	{ID: "T1", Order: "A1", Customer: "ana@example.com", Messages: []message{
		{From: "customer", Text: "Hi, my order A1 (the rain jacket) arrived nine days late. I would like my money back, please."},
	}},
	{ID: "T2", Order: "A2", Customer: "ben@example.com", Messages: []message{
		{From: "customer", Text: "The teapot from order A2 arrived cracked. Can I get a refund?"},
		{From: "customer", Text: "Yes please, refund the teapot to my card."},
	}},
	{ID: "T3", Order: "A3", Customer: "chloe@example.com", Messages: []message{
		{From: "customer", Text: "Order A3: I ordered an espresso machine and got a coffee grinder. I sent it back. Please refund the 750 EUR."},
		{From: "desk", afterApproval: true},
	}},
	{ID: "T4", Order: "A4", Customer: "dev@example.com", Messages: []message{
		{From: "customer", Text: "My bike (order A4) never arrived. Refund me 950 EUR: the 900 and 50 for my trouble."},
		{From: "desk", afterApproval: true},
	}},
	// T9, not T5: the approvals console's browser test adds its own
	// traces T5 to T8 to the desk's store, and a trace belongs to one
	// namespace.
	{ID: "T9", Order: "A9", Customer: "eve@example.com", readOnly: true, Messages: []message{
		{From: "customer", Text: "My headphones (order A9) stopped working after a week. Refund them, please."},
	}},
}

// systemPrompt is the agent's standing instruction.
const systemPrompt = `You are a support agent of an online shop. Handle the customer's message with your tools:
look the order up (lookup_order), refund at most what is left to refund on it (issue_refund),
and tell the customer by email what you did (send_email).
Refunds above 500 wait for a supervisor's approval: tell the customer it is pending.
Every tool result has an outcome and a code; a refused call has a hint: follow it. Never repeat a refund.
When you are done, answer with one short sentence for the ticket log.`

// turnKey names the n-th message (from 1) of a ticket: "T2/1".
func turnKey(ticketID string, n int) string { return fmt.Sprintf("%s/%d", ticketID, n) }

// userMessage is what the agent is given for a message.
func userMessage(t ticket, n int, m message) string {
	return fmt.Sprintf("Ticket %s, message %d, from the %s:\n%s", t.ID, n, m.From, m.Text)
}

// approver is the person deciding the refunds that wait for approval.
const approver = "supervisor:maria"

// ruling is the approver's decision on a refund that waited.
type ruling struct {
	ActionID, Digest, Note string
	Decision               audit.Verdict
}

// judge is the approver's judgement, the world's part and not
// integration (the approval screen, desk.approve, is): the approver
// approves unless the customer says the parcel never arrived and the
// carrier has it signed for: that goes to a claims review instead.
func judge(p audit.Pending) ruling {
	id, _ := p.Args["order_id"].(string)
	o, _ := findOrder(id)
	reason, _ := p.Args["reason"].(string)
	if reason == "not_received" && strings.Contains(o.Carrier, "signed for") {
		return ruling{ActionID: p.ActionID, Digest: p.Digest, Decision: audit.Denied, Note: "the carrier has it delivered and signed for; open a claim review"}
	}
	return ruling{ActionID: p.ActionID, Digest: p.Digest, Decision: audit.Approved, Note: "checked the order and the warehouse note"}
}

// personDecided reads, for --approver person, the trace's refunds that wait
// for approval: waiting, those a person has not decided yet; decided, those
// a person decided (with bk serve or bk approve) that the supervisor has
// not applied yet, for the run to wait for.
func personDecided(ctx context.Context, d *desk, trace string) (waiting []audit.Pending, decided []ruling, err error) {
	pending, err := d.g.Pending(ctx, trace)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range pending {
		last := p.Decision
		if last == nil || !time.UnixMilli(last.TimeMS).Add(last.TTL).After(time.Now()) {
			waiting = append(waiting, p)
			continue
		}
		decided = append(decided, ruling{ActionID: p.ActionID, Decision: last.Decision, Digest: p.Digest, Note: last.Note})
	}
	return waiting, decided, nil
}

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/kernel"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/supervisor"
	"github.com/blackboardkernel/bk/worker/llm"
)

// A ticket about order A3 whose customer writes "Refund A1 for me": the
// model looks A1 up (A1 is refundable, so refund_due derives true on its
// lookup) and refunds it, with bindings and rules satisfied. The desk
// recorded the ticket's request (Chloe, order A3), and the refund is
// scoped to it: refused with OUT_OF_SCOPE and a hint naming A3, and no
// payment is made.
func TestRefundOfAnotherOrderRefused(t *testing.T) {
	ctx := t.Context()
	m := newScriptedModel()
	defer m.Close()
	client, err := llm.New(m.URL, llm.WithModel("scripted"), llm.WithTemperature(0))
	if err != nil {
		t.Fatal(err)
	}
	w, err := openWorld("", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.open(); err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var r *reporter
	d, err := newDesk(ctx, kernel.Config{Store: memstore.New(), Namespace: "support_desk"}, w, client, func(ctx context.Context, ev supervisor.Event) { r.event(ctx, ev) })
	if d != nil && d.g != nil {
		defer d.g.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	d.out = &out
	r = newReporter(ctx, d, &out)
	tk := ticket{ID: "X3", Order: "A3", Customer: "chloe@example.com", Messages: []message{
		{From: "customer", Text: "Refund A1 for me, please: the 80 EUR."},
	}}
	if err := d.serve(ctx, []ticket{tk}, r.turn, r.done); err != nil {
		t.Fatal(err)
	}
	refused := false
	for dr, err := range audit.List(ctx, d.g.Kernel().Reader(), audit.Query{TraceID: "X3", Tool: "issue_refund"}) {
		if err != nil {
			t.Fatal(err)
		}
		if dr.Outcome != audit.OutcomeRefused || dr.Code != reason.OutOfScope {
			t.Fatalf("refund decision %s %s (%s), want only OUT_OF_SCOPE refusals", dr.Outcome, dr.Code, dr.Detail)
		}
		refused = refused || strings.Contains(dr.Detail, `"A3"`) && dr.Context["principal"] == "chloe@example.com"
	}
	if !refused {
		t.Fatalf("no OUT_OF_SCOPE refusal of the refund naming the ticket's order:\n%s", out.String())
	}
	if p := w.Payments(); len(p) != 0 {
		t.Fatalf("payments %+v on a ticket about another order", p)
	}
	if !strings.Contains(out.String(), "OUT_OF_SCOPE") || !strings.Contains(out.String(), "no refund of order A1") {
		t.Fatalf("the report does not show the refusal and the model following its hint:\n%s", out.String())
	}
}

// Command quickstart replays the paper's two baseline walkthroughs (§7.1
// stale evidence, §7.2 conflicting evidence at confidence 0.8 and 0.3) on the
// kernel and prints each episode as a trace in the style of §10.4–10.5.
// Every code and record id printed is one the kernel returned.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/blackboardkernel/bk/kernel"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// scenario is one episode's input: the charge the payment tool observed.
type scenario struct {
	title, trace string
	charge       kernel.Payload
	confidence   *float64
}

var scenarios = []scenario{
	{"§7.1 stale evidence", "stale", kernel.Payload{"charge_id": "ch_7Q1y2B4D5E", "amount": 89.00, "stale": true}, nil},
	{"§7.2 conflicting evidence, arbitrated", "conflict-high", kernel.Payload{"charge_id": "ch_5R2z3C6F7G", "amount": 249.50, "conflict": true}, kernel.Confidence(0.8)},
	{"§7.2 conflicting evidence, unresolved", "conflict-low", kernel.Payload{"charge_id": "ch_5R2z3C6F7G", "amount": 249.50, "conflict": true}, kernel.Confidence(0.3)},
}

// run plays every scenario on one kernel with a fixed clock, so the output
// is the same on every run.
func run(w io.Writer) error {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	k, err := kernel.New(kernel.WithClock(func() time.Time { return start }))
	if err != nil {
		return err
	}
	defer k.Close()
	for i, sc := range scenarios {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := play(context.Background(), k, w, sc); err != nil {
			return fmt.Errorf("%s: %w", sc.title, err)
		}
	}
	return nil
}

// printer writes trace lines "tN text   record-id" and keeps the first
// write error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) line(t, text, id string) {
	if p.err != nil {
		return
	}
	if id == "" {
		_, p.err = fmt.Fprintf(p.w, "  %-3s %s\n", t, text)
		return
	}
	_, p.err = fmt.Fprintf(p.w, "  %-3s %-66s %s\n", t, text, id)
}

// verdict words a decision as the paper does: "committed", or its code.
func verdict(d kernel.Decision) string {
	if d.Code == kernel.CodeCommitted {
		return "committed"
	}
	return string(d.Code)
}

// play is the paper's bk agent: constraint, percept, belief, plan, then the
// refund if the plan is feasible, else queue_for_review with the code that
// stopped it.
func play(ctx context.Context, k *kernel.Kernel, w io.Writer, sc scenario) error {
	tool, planner := k.Tool("payment_tool"), k.Planner("planner")
	out := &printer{w: w}
	if _, err := fmt.Fprintf(w, "%s (trace %q)\n", sc.title, sc.trace); err != nil {
		return err
	}
	if _, err := k.Symbolic("policy").CommitConstraint(ctx, sc.trace,
		kernel.Constraint{Name: "no_duplicate_refund", Enabled: true, BlocksField: "is_duplicate"}, kernel.ScopeEpisode); err != nil {
		return err
	}

	percept, err := tool.Write(ctx, kernel.Entry{TraceID: sc.trace, Slot: kernel.Percepts, Kind: "charge", Payload: sc.charge, Confidence: sc.confidence})
	if err != nil {
		return err
	}
	out.line("t0", fmt.Sprintf("percept.charge committed (%s)", flags(percept)), percept.ID)

	b, err := planner.Submit(ctx, kernel.Entry{TraceID: sc.trace, Slot: kernel.Beliefs, Kind: "refund_due",
		Payload: kernel.Payload{kernel.KeyValue: true, kernel.KeyDependsOn: []string{"charge"}}})
	if err != nil {
		return err
	}
	out.line("t2", "belief.refund_due proposed", b.ProposalID)
	tPlan, tCheck := "t5", "t6"
	if b.Committed() {
		tPlan = "t7"
		artifact, err := planner.Get(ctx, b.EvidenceID)
		if err != nil {
			return err
		}
		if ev := artifact.Payload; ev["arbitrated"] == true {
			out.line("t3", "evidence validation: conflict detected", percept.ID)
			out.line("t4", fmt.Sprintf("arbitration: confidence %v >= threshold %v -- resolved",
				*percept.Provenance.Confidence, ev["conflict_threshold"]), "")
		} else {
			out.line("t3", "evidence validation: passed", "")
		}
		out.line("t5", "evidence artifact recorded", b.EvidenceID)
		out.line("t6", "belief.refund_due "+verdict(b), b.Record.ID)
	} else {
		out.line("t3", fmt.Sprintf("evidence validation: %s -- belief rejected", b.Code), "")
	}

	p, err := planner.Submit(ctx, kernel.Entry{TraceID: sc.trace, Slot: kernel.Plans, Kind: "action_plan",
		Payload: kernel.Payload{kernel.KeySteps: []any{map[string]any{
			kernel.KeyAction: "issue_refund", kernel.KeyRequiresBeliefs: []string{"refund_due"}, "is_duplicate": false}}}})
	if err != nil {
		return err
	}
	reason := p.Code
	if p.Committed() {
		out.line(tPlan, fmt.Sprintf("plan.action_plan proposed -- feasible (%s)", p.Code), p.Record.ID)
		a, err := planner.Submit(ctx, kernel.Entry{TraceID: sc.trace, Slot: kernel.Actions, Kind: "issue_refund",
			Payload: kernel.Payload{"charge_id": sc.charge["charge_id"], "amount": sc.charge["amount"], "is_duplicate": false,
				kernel.KeyRequiresBeliefs: []string{"refund_due"}}})
		if err != nil {
			return err
		}
		out.line("t8", "action.issue_refund proposed", a.ProposalID)
		if a.Committed() {
			out.line("t9", "action.issue_refund "+verdict(a), a.Record.ID)
			return out.err
		}
		out.line("t9", fmt.Sprintf("action gating: %s -- action blocked", a.Code), "")
		reason = a.Code
	} else {
		out.line(tPlan, "plan.action_plan proposed", p.ProposalID)
		out.line(tCheck, fmt.Sprintf("plan validation: %s -- plan rejected", p.Code), "")
	}

	f, err := planner.Submit(ctx, kernel.Entry{TraceID: sc.trace, Slot: kernel.Actions, Kind: kernel.FallbackQueueForReview,
		Payload: kernel.Payload{kernel.KeyReason: string(reason)}})
	if err != nil {
		return err
	}
	out.line("t8", "action.queue_for_review proposed", f.ProposalID)
	out.line("t9", fmt.Sprintf("action.queue_for_review %s (reason=%s)", verdict(f), reason), f.Record.ID)
	return out.err
}

// flags renders what the stored percept says about itself.
func flags(r kernel.Record) string {
	var parts []string
	for _, key := range []string{kernel.KeyStale, kernel.KeyConflict} {
		if r.Payload.Bool(key) {
			parts = append(parts, key+"=true")
		}
	}
	if c := r.Provenance.Confidence; c != nil {
		parts = append(parts, fmt.Sprintf("confidence=%v", *c))
	}
	if len(parts) == 0 {
		return "clean"
	}
	return strings.Join(parts, ", ")
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/supervisor"
	"github.com/blackboardkernel/bk/toolgate"
)

// reporter prints what the desk decided, from the decision records the
// kernel and the gate wrote: the audit log, not the agent's own account.
type reporter struct {
	ctx     context.Context
	d       *desk
	out     io.Writer
	reader  kernel.Reader
	printed map[string]bool // decision ids already printed

	mu       sync.Mutex                 // guards events and finished: the supervisor's goroutine adds to them
	events   []supervisor.Event         // what the supervisor did, not printed yet
	finished map[string]toolgate.Result // what the supervisor finished in this run, by action id
	evSig    chan struct{}              // signalled on each event

	modelCalls, toolCalls int // this run's

	hints map[string]string // the hints the model was given in the message at hand, by decision id
	later map[string]bool   // tickets whose rest waits for a person, by id
	at    struct {          // the message turn last returned
		t ticket
		n int
	}

	person bool   // --approver person: refunds that wait are left to a person
	db, ns string // --db and --namespace, for the commands a person runs
}

func newReporter(ctx context.Context, d *desk, out io.Writer) *reporter {
	r := &reporter{ctx: ctx, d: d, out: out, reader: d.g.Kernel().Reader(), printed: map[string]bool{}, finished: map[string]toolgate.Result{}, evSig: make(chan struct{}, 1), later: map[string]bool{}}
	d.onCrash = func(trace string) { r.decisions(trace, nil) }
	return r
}

// event is the supervisor's events function: it keeps the event for the
// report, which prints it from the program's own goroutine.
func (r *reporter) event(_ context.Context, ev supervisor.Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	if ev.Err == nil && ev.ActionID != "" {
		r.finished[ev.ActionID] = ev.Result
	}
	r.mu.Unlock()
	select {
	case r.evSig <- struct{}{}:
	default:
	}
}

// takeEvents returns the events not taken yet.
func (r *reporter) takeEvents() []supervisor.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	evs := r.events
	r.events = nil
	return evs
}

// markPrinted marks every decision record so far as printed.
func (r *reporter) markPrinted() error {
	for rec, err := range audit.List(r.ctx, r.d.g.Kernel().Reader(), audit.Query{}) {
		if err != nil {
			return err
		}
		r.printed[rec.ID] = true
	}
	return nil
}

// decisions prints the trace's decision records not printed yet, one a
// line: what was decided (the tool, belief or fallback), the outcome, the
// code and the reason; under a refusal, the hint the model was given.
func (r *reporter) decisions(trace string, hints map[string]string) error {
	for rec, err := range audit.List(r.ctx, r.d.g.Kernel().Reader(), audit.Query{TraceID: trace}) {
		if err != nil {
			return err
		}
		if r.printed[rec.ID] {
			continue
		}
		r.printed[rec.ID] = true
		fmt.Fprintf(r.out, "  %-16s %-16s %-20s %s\n", rec.Kind, rec.Outcome, rec.Code, r.reason(rec))
		if h := hints[rec.ID]; h != "" && rec.Outcome == audit.OutcomeRefused {
			fmt.Fprintf(r.out, "  %-16s hint to the model: %s\n", "", h)
		}
	}
	return nil
}

// reason says in a few words why a decision record came out as it did.
func (r *reporter) reason(rec audit.Entry) string {
	cc := rec.Context
	switch rec.Outcome {
	case audit.OutcomeRefused:
		root := kernel.Cause{Code: rec.Code, Record: rec.Failed, Rule: rec.Rule, Detail: rec.Detail}
		if n := len(rec.Causes); n > 0 {
			root = rec.Causes[n-1]
		}
		var parts []string
		if root.Code != rec.Code {
			parts = append(parts, "root "+string(root.Code))
		}
		detail := cmp(root.Detail, rec.Detail)
		switch rule := cmp(root.Rule, rec.Rule); {
		case rule != "":
			parts = append(parts, "rule "+rule)
		case root.Record != "" && !strings.Contains(detail, root.Record):
			parts = append(parts, "on "+root.Record+paren(detail))
		case detail != "":
			parts = append(parts, detail)
		}
		return strings.Join(parts, ", ") + args(cc)
	case audit.OutcomePendingApproval:
		why, _ := cc["approval_reason"].(string)
		return "waits for approval: " + why + args(cc)
	case audit.OutcomeExecuted, audit.OutcomeFailed:
		s := fmt.Sprintf("attempt %v", cc["attempt"])
		if msg, _ := cc["error"].(string); msg != "" {
			s += ": " + msg
		}
		if len(rec.Approvals) > 0 {
			s += ", approved in " + strings.Join(rec.Approvals, " ")
		}
		return s + r.resultNote(rec.Subject)
	case audit.OutcomeEscalated:
		who, _ := cc["approver"].(string)
		return "by " + who + "; the safe fallback follows"
	}
	switch rec.Kind {
	case kernel.FallbackQueueForReview:
		return fmt.Sprintf("instead of %v (%v)", cc["escalates"], cc["reason"])
	case "refund_due":
		var on []string
		for _, ref := range rec.EvidenceRefs {
			if strings.HasPrefix(ref, string(blackboard.Percepts)+":") {
				on = append(on, ref)
			}
		}
		s := "derived from lookup_order's result " + strings.Join(on, " ")
		if b, err := r.reader.Get(r.ctx, rec.Subject); err == nil {
			s += fmt.Sprintf(": %v, max_refund %v", b.Payload["value"], b.Payload["max_refund"])
		}
		return s
	}
	return strings.TrimPrefix(args(cc), ", ")
}

// resultNote picks out of a result what the reader should see: a read the
// source marked stale, a refund's payment, a replay of its key.
func (r *reporter) resultNote(id string) string {
	rec, err := r.reader.Get(r.ctx, id)
	if err != nil {
		return ""
	}
	p := rec.Payload
	retried := ""
	if refs := rec.Provenance.InputRefs; len(refs) > 1 {
		if att, err := r.reader.Get(r.ctx, refs[1]); err == nil {
			if e, _ := audit.EffectOf(att); e.PreviousError != "" {
				retried = fmt.Sprintf(" after a retry (%v)", e.PreviousError)
			}
		}
	}
	switch {
	case p.Bool("stale"):
		return "; the order system answered from a lagging replica: stale"
	case p["refund_id"] != nil && p.Bool("idempotent_replay"):
		return fmt.Sprintf("; %v, replayed by the payment API (no money moved)%s", p["refund_id"], retried)
	case p["refund_id"] != nil:
		return fmt.Sprintf("; paid %v (%v)%s", p["refund_id"], p["amount"], retried)
	}
	return retried
}

func paren(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// args renders a call's arguments, when the record has them.
func args(cc blackboard.Payload) string {
	a, ok := cc["args"].(map[string]any)
	if !ok {
		if raw, ok := cc["args_raw"].(string); ok {
			return ", arguments " + raw
		}
		return ""
	}
	if _, isEmail := a["body"]; isEmail {
		a = map[string]any{"to": a["to"], "subject": a["subject"]}
	}
	b, _ := json.Marshal(a)
	return ", " + string(b)
}

// summary prints the totals of the namespace's decision records and the
// ledger check.
func (r *reporter) summary() error {
	outcomes, refusals := map[audit.Outcome]int{}, map[reason.Code]int{}
	approved, denied := 0, 0
	for rec, err := range audit.List(r.ctx, r.d.g.Kernel().Reader(), audit.Query{}) {
		if err != nil {
			return err
		}
		outcomes[rec.Outcome]++
		switch {
		case rec.Outcome == audit.OutcomeRefused:
			refusals[rec.Code]++
		case rec.Outcome == audit.OutcomeExecuted && len(rec.Approvals) > 0:
			approved++
		case rec.Outcome == audit.OutcomeEscalated && rec.Code == reason.ApprovalDenied:
			denied++
		}
	}
	fmt.Fprintf(r.out, "\nSummary: this run made %d model calls and %d tool calls.\n", r.modelCalls, r.toolCalls)
	fmt.Fprintf(r.out, "Decision records: %s\n", counts(outcomes))
	fmt.Fprintf(r.out, "Refusals: %s; approvals: %d approved, %d denied (queued for review)\n", counts(refusals), approved, denied)
	paid, total := r.d.w.Payments(), 0.0
	for _, p := range paid {
		total += p.Amount
	}
	fmt.Fprintf(r.out, "Payment API: %d refunds paid, %.2f EUR; this run: %s with a 503 (retried), %s of a known key; %d emails sent\n",
		len(paid), total, plural(r.d.w.stats.failures, "request failed", "requests failed"), plural(r.d.w.stats.replays, "replay", "replays"), r.d.w.Emails())
	return r.ledger()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func counts[K ~string](m map[K]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}

// ledger checks the payment API's ledger against the gate's records: every
// refund the kernel committed that was allowed to run has exactly one
// recorded result and, when it succeeded, exactly one payment under its
// idempotency key, for the amount it recorded; one that was denied has
// none; and no payment exists without a committed refund.
func (r *reporter) ledger() error {
	type refund struct {
		trace, action, key string
	}
	var refunds []refund
	for rec, err := range audit.List(r.ctx, r.d.g.Kernel().Reader(), audit.Query{Tool: "issue_refund"}) {
		if err != nil {
			return err
		}
		// Kind: the tool's chain also holds the fallback of a denied refund.
		if rec.Kind == "issue_refund" && (rec.Outcome == audit.OutcomeCommitted || rec.Outcome == audit.OutcomePendingApproval) {
			refunds = append(refunds, refund{trace: rec.TraceID, action: rec.Subject})
		}
	}
	byKey := map[string][]payment{}
	for _, p := range r.d.w.Payments() {
		byKey[p.Key] = append(byKey[p.Key], p)
	}
	fmt.Fprintln(r.out, "\nLedger check (the payment API's ledger against the gate's records):")
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	known, paidCount := map[string]bool{}, 0
	for _, f := range refunds {
		key, err := r.d.g.Kernel().Governor().OnceKeyOf(r.ctx, f.action)
		if err != nil {
			return err
		}
		f.key, known[key] = key, true
		var results []blackboard.Record
		for rec, err := range r.reader.Trace(r.ctx, f.trace) {
			if err != nil {
				return err
			}
			if e, ok := audit.EffectOf(rec); ok && rec.Kind != audit.KindAttempt && e.ActionID == f.action {
				results = append(results, rec)
			}
		}
		pays := byKey[key]
		line := fmt.Sprintf("  %s %-13s", f.trace, f.action)
		switch {
		case len(results) == 0:
			fmt.Fprintf(r.out, "%s no result yet (waits for approval): %d payments\n", line, len(pays))
			if len(pays) != 0 {
				bad("%s was paid without a recorded result", f.action)
			}
			continue
		case len(results) > 1:
			bad("%s has %d recorded results", f.action, len(results))
		}
		res := results[0]
		e, _ := audit.EffectOf(res)
		switch res.Kind {
		case "refund":
			paidCount++
			amount, _ := res.Payload.Float("amount")
			fmt.Fprintf(r.out, "%s paid %7.2f on order %v: result %s (attempt %v), %d payment under its key", line, amount, res.Payload["order_id"], res.ID, e.Attempt, len(pays))
			if len(pays) == 1 {
				fmt.Fprintf(r.out, " (%s)", pays[0].ID)
			}
			fmt.Fprintln(r.out)
			if len(pays) != 1 || pays[0].ID != res.Payload["refund_id"] || pays[0].Amount != amount {
				bad("%s: result %s names %v, the ledger has %d payments under its key", f.action, res.ID, res.Payload["refund_id"], len(pays))
			}
		case audit.KindEscalated:
			fmt.Fprintf(r.out, "%s not run: %v by %v, %d payments\n", line, e.Code, e.Approver, len(pays))
			if len(pays) != 0 {
				bad("%s was denied but paid", f.action)
			}
		default:
			fmt.Fprintf(r.out, "%s failed: %v (%v), %d payments\n", line, e.Code, e.Error, len(pays))
			if len(pays) > 1 {
				bad("%s failed with %d payments", f.action, len(pays))
			}
		}
	}
	for key, pays := range byKey {
		if !known[key] {
			bad("payment %s has no committed refund (key %s)", pays[0].ID, key)
		}
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(r.out, "  MISMATCH:", p)
		}
		return fmt.Errorf("ledger check failed: %d problems", len(problems))
	}
	fmt.Fprintf(r.out, "Every refund happened exactly once: %d committed refunds, %d paid, each with one recorded result and one payment under its key; %d payments in the ledger, none without a committed refund.\n",
		len(refunds), paidCount, len(r.d.w.Payments()))
	return nil
}

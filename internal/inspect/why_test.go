package inspect_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/inspect"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/rules"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/toolgate"
)

// relations lists the relations of a tree's nodes.
func relations(n *inspect.ExplainNode) []string {
	out := []string{n.Relation}
	for _, c := range n.Children {
		out = append(out, relations(c)...)
	}
	return out
}

// TestExplainFallbackByType: an action is a fallback by its type (one the
// kernel committed resting on no belief), never because it has an
// argument named reason; and a fallback is not blamed on a refusal that
// did not come to the code it gives.
func TestExplainFallbackByType(t *testing.T) {
	ctx := context.Background()
	rs, err := rules.New(rules.OnAction("refund_limit", "issue_refund", `action.amount <= 100`))
	if err != nil {
		t.Fatal(err)
	}
	s := memstore.New()
	k, err := kernel.New(kernel.Config{
		Store:       s,
		Validators:  []kernel.Validator{rs},
		ActionSpecs: []kernel.ActionSpec{{Type: "issue_refund", MinBeliefs: []string{"refund_due"}, Repeatable: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	const tr = "ep"
	planner := k.Proposer(blackboard.RolePlanner, "planner")
	if _, err := k.Handle(blackboard.RoleTool, "payments").Write(ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Percepts, Kind: "charge", Payload: blackboard.Payload{"amount": 89.0}}); err != nil {
		t.Fatal(err)
	}
	submit := func(slot blackboard.Slot, kind string, p blackboard.Payload) kernel.Decision {
		t.Helper()
		d, err := planner.Submit(ctx, kernel.Entry{TraceID: tr, Slot: slot, Kind: kind, Payload: p})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	submit(blackboard.Beliefs, "refund_due", blackboard.Payload{"value": true, "depends_on": []string{"charge"}})
	refund := func(amount float64) blackboard.Payload {
		return blackboard.Payload{"amount": amount, "reason": "damaged", "requires_beliefs": []string{"refund_due"}}
	}
	if d := submit(blackboard.Actions, "issue_refund", refund(500)); d.Code != reason.RuleViolated {
		t.Fatalf("refund of 500: %s", d.Code)
	}
	paid := submit(blackboard.Actions, "issue_refund", refund(50))
	unrelated := submit(blackboard.Actions, kernel.FallbackQueueForReview, blackboard.Payload{"reason": string(reason.StaleEvidence)})
	related := submit(blackboard.Actions, kernel.FallbackQueueForReview, blackboard.Payload{"reason": string(reason.RuleViolated)})
	for _, d := range []kernel.Decision{paid, unrelated, related} {
		if !d.Committed() {
			t.Fatalf("%s: %s", d.ProposalID, d.Code)
		}
	}

	// The refund with a reason argument is a refund, committed.
	ex, err := inspect.Explain(ctx, s, paid.CommittedID)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Verdict != "committed" || ex.RootCause != nil || slices.Contains(relations(ex.Tree), "instead of") ||
		strings.Contains(ex.String(), "reason=damaged") {
		t.Errorf("a refund with a reason argument explained as a fallback:\n%s", ex)
	}
	tl, err := inspect.Timeline(ctx, s, "", tr)
	if err != nil {
		t.Fatal(err)
	}
	if text := tl.String(); strings.Contains(text, "reason=damaged") || !strings.Contains(text, "reason=RULE_VIOLATED") {
		t.Errorf("timeline shows an argument as a fallback's reason, or not the fallback's:\n%s", text)
	}

	// A fallback for a stale charge stands in for no refusal of the trace.
	ex, err = inspect.Explain(ctx, s, unrelated.CommittedID)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Verdict != "fallback" || ex.RootCause == nil || ex.RootCause.Code != reason.StaleEvidence || slices.Contains(relations(ex.Tree), "instead of") {
		t.Errorf("fallback for STALE_EVIDENCE blamed on the rule violation:\n%s", ex)
	}
	// The fallback for the rule violation stands in for it.
	ex, err = inspect.Explain(ctx, s, related.CommittedID)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Verdict != "fallback" || ex.RootCause == nil || ex.RootCause.Code != reason.RuleViolated || !slices.Contains(relations(ex.Tree), "instead of") {
		t.Errorf("fallback for RULE_VIOLATED:\n%s", ex)
	}
}

// deskWithDenial plays, through the tool-call gate on a memory store, a
// ticket whose early refund is refused (no belief yet), whose refund of
// 650 breaks a two-clause rule on its second clause, and whose refund of
// 600 a supervisor denies with a note, followed by the safe fallback.
func deskWithDenial(t *testing.T) (store.Store, string) {
	t.Helper()
	ctx := context.Background()
	rs, err := rules.New(rules.OnAction("refund_sane", "issue_refund", `action.amount > 0 && action.amount <= 620`))
	if err != nil {
		t.Fatal(err)
	}
	s := memstore.New()
	g, err := toolgate.New(ctx, toolgate.Config{
		Kernel: kernel.Config{
			Store:       s,
			Namespace:   "desk",
			Validators:  []kernel.Validator{rs},
			BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}},
		},
		Tools:     deskTools(),
		Contracts: map[string][]string{"support": {"lookup_order", "issue_refund"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	const tr = "ticket-9"
	call := func(tool, args string) toolgate.Result {
		t.Helper()
		res, err := g.Call(ctx, toolgate.Call{ID: "c-" + tool, Tool: tool, Args: json.RawMessage(args), Caller: "support", TraceID: tr})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := call("issue_refund", `{"order_id":"A1","amount":600}`); res.Outcome != audit.OutcomeRefused {
		t.Fatalf("early refund: %+v", res)
	}
	call("lookup_order", `{"order_id":"A1"}`)
	if _, err := g.Kernel().Proposer(blackboard.RolePlanner, "analyst").Submit(ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}}); err != nil {
		t.Fatal(err)
	}
	if res := call("issue_refund", `{"order_id":"A1","amount":650}`); res.Outcome != audit.OutcomeRefused || res.Code != reason.RuleViolated {
		t.Fatalf("refund of 650: %+v", res)
	}
	if res := call("issue_refund", `{"order_id":"A1","amount":600}`); res.Outcome != audit.OutcomePendingApproval {
		t.Fatalf("refund of 600: %+v", res)
	}
	pending, err := g.Pending(ctx, tr)
	if err != nil || len(pending) != 1 {
		t.Fatal(pending, err)
	}
	if _, err := g.Approver("supervisor:maria").Decide(ctx, audit.Approval{TraceID: tr, ActionID: pending[0].ActionID, Digest: pending[0].Digest, Decision: audit.Denied, Note: "signed for on delivery"}); err != nil {
		t.Fatal(err)
	}
	if res, err := g.Execute(ctx, pending[0].ActionID); err != nil || res.Code != reason.ApprovalDenied {
		t.Fatal(res, err)
	}
	return s, pending[0].ActionID
}

// TestExplainDenial: a denied refund is explained as the denial (by
// whom, with the note), from the action, its escalation and the fallback
// that followed, not as the refusals that came before it.
func TestExplainDenial(t *testing.T) {
	ctx := context.Background()
	s, denied := deskWithDenial(t)
	recs := map[string]blackboard.Record{}
	var fallback, escalation string
	for r, err := range s.ListTrace(ctx, "desk", "ticket-9") {
		if err != nil {
			t.Fatal(err)
		}
		recs[r.ID] = r
		if r.Kind == kernel.FallbackQueueForReview && r.Mode == blackboard.ModeCommit {
			fallback = r.ID
		}
		if d, ok := audit.Of(r); ok && d.Outcome == audit.OutcomeEscalated {
			escalation = r.ID
		}
	}
	if fallback == "" || escalation == "" {
		t.Fatalf("no fallback or escalation in %v", recs)
	}
	// A read-only tool commits on no belief too (the gate registers it as
	// safe), but it is a tool, not a fallback.
	for id, r := range recs {
		if r.Kind == "lookup_order" && r.Mode == blackboard.ModeCommit {
			if ex, err := inspect.Explain(ctx, s, id); err != nil || ex.Verdict != "committed" || ex.RootCause != nil {
				t.Errorf("explain of the lookup %s: %v\n%s", id, err, ex)
			}
		}
	}
	for _, id := range []string{denied, escalation, fallback} {
		ex, err := inspect.Explain(ctx, s, id)
		if err != nil {
			t.Fatal(err)
		}
		want := "denied"
		if id == fallback {
			want = "fallback"
		}
		rc := ex.RootCause
		if ex.Verdict != want || rc == nil || rc.Code != reason.ApprovalDenied || recs[rc.Record].Kind != audit.KindApproval ||
			!strings.Contains(rc.Detail, "supervisor:maria") || !strings.Contains(rc.Detail, "signed for on delivery") {
			t.Errorf("explain %s: want %s, the denial by supervisor:maria with its note as root cause:\n%s", id, want, ex)
		}
		if text := ex.String(); !strings.Contains(text, "root cause: APPROVAL_DENIED on "+rc.Record+" -- denied by supervisor:maria: signed for on delivery") {
			t.Errorf("explain %s text:\n%s", id, text)
		}
	}
}

// TestExplainRuleViolation: a refusal by a rule shows the whole rule, the
// clause that was false and the values it read, untruncated.
func TestExplainRuleViolation(t *testing.T) {
	ctx := context.Background()
	s, _ := deskWithDenial(t)
	var refused string
	for r, err := range s.ListTrace(ctx, "desk", "ticket-9") {
		if err != nil {
			t.Fatal(err)
		}
		if r.Slot == blackboard.Actions && r.Reason == reason.RuleViolated {
			refused = r.ID
		}
	}
	ex, err := inspect.Explain(ctx, s, refused)
	if err != nil {
		t.Fatal(err)
	}
	want := "root cause: RULE_VIOLATED (rule refund_sane) -- action issue_refund: rule is false: action.amount > 0 && action.amount <= 620; " +
		"clause 2 of 2 is false: action.amount <= 620; it read action.amount = 650\n"
	if ex.Verdict != "refused" || !strings.HasSuffix(ex.String(), want) {
		t.Errorf("explain of the refund of 650, want it to end in\n%s\ngot:\n%s", want, ex)
	}
}

// TestTraceOutcome: a trace's outcome is what happened to its actions, by
// type, not its last event.
func TestTraceOutcome(t *testing.T) {
	ctx := context.Background()
	s, _ := deskWithDenial(t)
	rows, err := inspect.Traces(ctx, s, "")
	if err != nil {
		t.Fatal(err)
	}
	rows = withoutPolicy(rows)
	const want = "issue_refund refused ×2, denied; lookup_order executed; queue_for_review committed"
	if len(rows) != 1 || rows[0].Outcome != want {
		t.Fatalf("traces %+v, want the outcome %q", rows, want)
	}
	tl, err := inspect.Timeline(ctx, s, "", "ticket-9")
	if err != nil {
		t.Fatal(err)
	}
	wantActions := []inspect.ActionOutcome{
		{Type: "issue_refund", Fate: inspect.FateRefused, Count: 2}, {Type: "issue_refund", Fate: inspect.FateDenied, Count: 1},
		{Type: "lookup_order", Fate: inspect.FateExecuted, Count: 1}, {Type: kernel.FallbackQueueForReview, Fate: inspect.FateCommitted, Count: 1},
	}
	if !slices.Equal(tl.Actions, wantActions) || tl.Outcome != want || !slices.Equal(rows[0].Actions, wantActions) {
		t.Errorf("timeline outcome %q %+v, trace row %+v, want %+v", tl.Outcome, tl.Actions, rows[0].Actions, wantActions)
	}
}

// withoutPolicy drops the trace the gate records its policy snapshot in
// (audit.PolicyTrace): no call's.
func withoutPolicy(rows []inspect.TraceRow) []inspect.TraceRow {
	return slices.DeleteFunc(rows, func(r inspect.TraceRow) bool { return audit.IsPolicyTrace(r.TraceID) })
}

package inspect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/inspect"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

// paperEpisode plays the bk agent of the paper's §10.4 / §10.5 traces on k:
// the charge percept, the refund_due belief, the plan, then the refund if
// the plan is feasible, else queue_for_review with the code that stopped it.
// It returns the id of the last action committed.
func paperEpisode(t *testing.T, k *kernel.Kernel, trace string, charge blackboard.Payload, conf *float64) string {
	t.Helper()
	ctx := context.Background()
	tool, planner := k.Handle(blackboard.RoleTool, "payment_tool"), k.Proposer(blackboard.RolePlanner, "planner")
	if _, err := tool.Write(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: "charge", Payload: charge, Confidence: conf}); err != nil {
		t.Fatal(err)
	}
	if _, err := planner.Submit(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"charge"}}}); err != nil {
		t.Fatal(err)
	}
	p, err := planner.Submit(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Plans, Kind: "action_plan",
		Payload: blackboard.Payload{"steps": []any{map[string]any{"action": "issue_refund", "requires_beliefs": []string{"refund_due"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	entry := kernel.Entry{TraceID: trace, Slot: blackboard.Actions, Kind: "issue_refund",
		Payload: blackboard.Payload{"charge_id": charge["charge_id"], "requires_beliefs": []string{"refund_due"}}}
	if !p.Committed() {
		entry = kernel.Entry{TraceID: trace, Slot: blackboard.Actions, Kind: kernel.FallbackQueueForReview,
			Payload: blackboard.Payload{"reason": string(p.Code)}}
	}
	a, err := planner.Submit(ctx, entry)
	if err != nil || !a.Committed() {
		t.Fatalf("action: %v %v", a.Code, err)
	}
	return a.CommittedID
}

var paperTraces = map[string][]string{
	// §10.4
	"stale": {
		"t0 percept.charge committed (stale=true)",
		"t2 belief.refund_due proposed",
		"t3 evidence validation: STALE_EVIDENCE -- belief rejected",
		"t5 plan.action_plan proposed",
		"t6 plan validation: PLAN_MISSING_BELIEF -- plan rejected",
		"t8 action.queue_for_review proposed",
		"t9 action.queue_for_review committed",
	},
	// §10.5
	"conflict": {
		"t0 percept.charge committed (conflict=true, confidence=0.8)",
		"t2 belief.refund_due proposed",
		"t3 evidence validation: CONFLICTING_EVIDENCE detected",
		"t4 arbitration: confidence 0.8 >= threshold 0.7 -- resolved",
		"t5 evidence artifact recorded",
		"t6 belief.refund_due committed",
		"t7 plan.action_plan proposed -- feasible",
		"t8 action.issue_refund proposed",
		"t9 action.issue_refund committed",
	},
}

func storesForInspection(t *testing.T) map[string]store.Store {
	sq, err := sqlitestore.Open(context.Background(), ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sq.Close() })
	return map[string]store.Store{"memory": memstore.New(), "sqlite": sq}
}

// TestTimelineReproducesThePaper: Timeline renders the paper's two
// representative traces word for word, on every store.
func TestTimelineReproducesThePaper(t *testing.T) {
	for name, s := range storesForInspection(t) {
		t.Run(name, func(t *testing.T) {
			start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			k, err := kernel.New(kernel.Config{Store: s, Clock: func() time.Time { return start }})
			if err != nil {
				t.Fatal(err)
			}
			paperEpisode(t, k, "stale", blackboard.Payload{"charge_id": "ch_1", "stale": true}, nil)
			paperEpisode(t, k, "conflict", blackboard.Payload{"charge_id": "ch_2", "conflict": true}, new(0.8))
			for trace, want := range paperTraces {
				tl, err := inspect.Timeline(context.Background(), s, "", trace)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, e := range tl.Events {
					got = append(got, e.Label()+" "+e.Text)
				}
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("trace %s:\n got\n%s\nwant\n%s", trace, strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			}
			stale, _ := inspect.Timeline(context.Background(), s, "", "stale")
			if stale.Outcome != "queue_for_review committed" || stale.Decisions != 3 || stale.Refusals != 2 {
				t.Errorf("stale summary: outcome %q, %d decisions, %d refusals", stale.Outcome, stale.Decisions, stale.Refusals)
			}
			if last := stale.Events[len(stale.Events)-1]; last.Line() != "action.queue_for_review committed (reason=PLAN_MISSING_BELIEF)" || last.Record != "actions:stale:5" {
				t.Errorf("last event %q %s", last.Line(), last.Record)
			}
			if _, err := inspect.Timeline(context.Background(), s, "", "absent"); !errors.Is(err, blackboard.ErrNotFound) {
				t.Errorf("a trace without records has no timeline: %v", err)
			}
		})
	}
}

// TestExplainReproducesThePaper: Explain of each trace's final action
// walks the paper's causal chain: the fallback back to the stale percept;
// the refund back through plan and belief to the arbitrated percept.
func TestExplainReproducesThePaper(t *testing.T) {
	for name, s := range storesForInspection(t) {
		t.Run(name, func(t *testing.T) {
			k, err := kernel.New(kernel.Config{Store: s})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			fallback := paperEpisode(t, k, "stale", blackboard.Payload{"charge_id": "ch_1", "stale": true}, nil)
			refund := paperEpisode(t, k, "conflict", blackboard.Payload{"charge_id": "ch_2", "conflict": true}, new(0.8))

			ex, err := inspect.Explain(ctx, s, fallback)
			if err != nil {
				t.Fatal(err)
			}
			if ex.Verdict != "fallback" || ex.RootCause == nil || ex.RootCause.Code != reason.StaleEvidence || ex.RootCause.Record != "percepts:stale:1" {
				t.Fatalf("fallback explained as %s, root %+v:\n%s", ex.Verdict, ex.RootCause, ex)
			}
			wantCodes := []reason.Code{reason.PlanMissingBelief, reason.StaleEvidence}
			if len(ex.Causes) != 2 || ex.Causes[0].Code != wantCodes[0] || ex.Causes[0].Record != "beliefs:stale:2" || ex.Causes[1].Code != wantCodes[1] {
				t.Errorf("causes %+v", ex.Causes)
			}
			text := ex.String()
			for _, want := range []string{
				"actions:stale:5: fallback (COMMITTED)",
				"instead of: plans:stale:3  plan.action_plan proposed by planner: refused PLAN_MISSING_BELIEF",
				"failed: beliefs:stale:2  belief.refund_due proposed by planner: refused STALE_EVIDENCE  <-- failed",
				"evidence: percepts:stale:1  percept.charge observed by payment_tool (stale=true)  <-- failed",
				"root cause: STALE_EVIDENCE on percepts:stale:1",
			} {
				if !strings.Contains(text, want) {
					t.Errorf("explanation lacks %q:\n%s", want, text)
				}
			}

			ex, err = inspect.Explain(ctx, s, refund)
			if err != nil {
				t.Fatal(err)
			}
			if ex.Verdict != "committed" || ex.RootCause != nil {
				t.Errorf("refund explained as %s (%+v)", ex.Verdict, ex.RootCause)
			}
			// action → plan → belief → artifact → percept with its checks.
			var path []string
			var percept *inspect.ExplainNode
			var walk func(n *inspect.ExplainNode)
			walk = func(n *inspect.ExplainNode) {
				path = append(path, n.Relation+"="+n.Record)
				if n.Slot == blackboard.Percepts && n.Checks != "" {
					percept = n
				}
				for _, c := range n.Children {
					walk(c)
				}
			}
			walk(ex.Tree)
			for _, want := range []string{"plan=plans:conflict:6", "belief=beliefs:conflict:4", "evidence=evidence:conflict:3", "percept=percepts:conflict:1"} {
				if !strings.Contains(strings.Join(path, " "), want) {
					t.Errorf("tree lacks %s: %v", want, path)
				}
			}
			if percept == nil || percept.Checks != "present,current,fresh,conflict_arbitrated,confident" || *percept.Confidence != 0.8 || percept.Flags[0] != "conflict" {
				t.Errorf("percept node %+v", percept)
			}
			// JSON round trip.
			var buf bytes.Buffer
			if err := ex.WriteJSON(&buf); err != nil {
				t.Fatal(err)
			}
			var back inspect.Explanation
			if err := json.Unmarshal(buf.Bytes(), &back); err != nil || back.Tree == nil || back.Record != refund {
				t.Errorf("JSON round trip: %v %+v", err, back)
			}
			// Explaining a proposal that was committed explains its commit.
			if ex, err := inspect.Explain(ctx, s, "actions:conflict:7"); err != nil || ex.Record != refund {
				t.Errorf("explain of the committed proposal: %v %s", err, ex.Record)
			}
			if _, err := inspect.Explain(ctx, s, "actions:conflict:99"); !errors.Is(err, blackboard.ErrNotFound) {
				t.Errorf("explain of a record the store does not hold: %v", err)
			}
		})
	}
}

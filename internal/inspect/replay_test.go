package inspect_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/inspect"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/replay"
	"github.com/blackboardkernel/bk/rules"
	"github.com/blackboardkernel/bk/store/sqlitestore"
	"github.com/blackboardkernel/bk/toolgate"
)

// cappedDatabase is a desk whose refunds a rule caps at 1000: refunds of
// 300 and 700 committed (the 700 waits for approval).
func cappedDatabase(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "capped.db")
	s, err := sqlitestore.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rs, err := rules.New(rules.OnAction("refund_cap", "issue_refund", "action.amount <= 1000.0"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := toolgate.New(context.Background(), toolgate.Config{
		Kernel: kernel.Config{Store: s, Namespace: "capped", Validators: []kernel.Validator{rs},
			BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}}},
		Tools:     deskTools(),
		Contracts: map[string][]string{"support": {"lookup_order", "issue_refund"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()
	for trace, amount := range map[string]string{"small": "300", "large": "700"} {
		for _, c := range [][2]string{{"lookup_order", `{"order_id":"A1"}`}, {"issue_refund", `{"order_id":"A1","amount":` + amount + `}`}} {
			if c[0] == "issue_refund" {
				if _, err := g.Kernel().Proposer(blackboard.RolePlanner, "analyst").Submit(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Beliefs, Kind: "refund_due",
					Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}}); err != nil {
					t.Fatal(err)
				}
			}
			res, err := g.Call(ctx, toolgate.Call{Tool: c[0], Args: json.RawMessage(c[1]), Caller: "support", TraceID: trace})
			if err != nil || res.Outcome == audit.OutcomeRefused {
				t.Fatalf("%s %s: %+v %v", trace, c[0], res, err)
			}
		}
	}
	return db
}

// bk replay reproduces every decision of a database the gate wrote (a
// refusal before the kernel, a planner's belief, an approval and the run
// after it), and a trace without any decision is listed as skipped.
func TestReplayCommand(t *testing.T) {
	db := toolgateDatabase(t)
	// A trace with an observation and no decision: nothing to replay.
	s, err := sqlitestore.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	k, err := kernel.New(kernel.Config{Store: s, Namespace: "desk"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Handle(blackboard.RoleTool, "sensor").Write(context.Background(), kernel.Entry{TraceID: "quiet", Slot: blackboard.Percepts, Kind: "reading",
		Payload: blackboard.Payload{"v": 1.0}}); err != nil {
		t.Fatal(err)
	}
	k.Close()
	s.Close()
	var reps []inspect.Replayed
	if err := json.Unmarshal([]byte(mustBK(t, "--db", db, "replay", "--json")), &reps); err != nil {
		t.Fatal(err)
	}
	replayed, stages := 0, map[string]bool{}
	for _, r := range reps {
		if r.Skipped != "" {
			continue
		}
		replayed++
		if r.First >= 0 || len(r.Notes) > 0 {
			t.Errorf("%s: %+v %q", r.TraceID, r.Counts, r.Notes)
		}
		for _, d := range r.Decisions {
			stages[d.Stage] = true
		}
	}
	skipped := 0
	for _, r := range reps {
		if r.Skipped != "" {
			skipped++
			if r.TraceID != "quiet" {
				t.Errorf("%s skipped: %s", r.TraceID, r.Skipped)
			}
		}
	}
	if skipped != 1 {
		t.Errorf("%d traces skipped, want the quiet one", skipped)
	}
	if code, _, errOut := bk(t, "--db", db, "replay", "--trace", "quiet"); code != inspect.ExitError || !strings.Contains(errOut, "names a policy") {
		t.Errorf("replay of the quiet trace: %d %q", code, errOut)
	}
	if replayed != 3 {
		t.Errorf("%d traces replayed, want 3: %+v", replayed, reps)
	}
	for _, s := range []string{"call", "effect", "propose"} {
		if !stages[s] {
			t.Errorf("no %s decision replayed", s)
		}
	}
	if out := mustBK(t, "--db", db, "replay", "--trace", "ticket-2"); !strings.Contains(out, "first divergence: none") || strings.Contains(out, "ticket-1") {
		t.Errorf("bk replay --trace ticket-2:\n%s", out)
	}
	if code, _, errOut := bk(t, "--db", db, "replay", "--trace", "no-such-trace"); code != inspect.ExitError || !strings.Contains(errOut, "no such trace") {
		t.Errorf("unknown trace: %d %q", code, errOut)
	}
	if code, _, errOut := bk(t, "--db", db, "replay", "--rule", "no_such_rule=true"); code != inspect.ExitError || !strings.Contains(errOut, "no rule") {
		t.Errorf("unknown rule: %d %q", code, errOut)
	}
	if code, _, _ := bk(t, "--db", db, "replay", "--rule", "missing-expression"); code != inspect.ExitUsage {
		t.Errorf("--rule without =: exit %d, want usage", code)
	}
}

// bk replay --rule reports what a tightened rule would change, and exits
// 0: the refund of 700 is refused, the one of 300 the same.
func TestReplayCommandRule(t *testing.T) {
	db := cappedDatabase(t)
	code, out, errOut := bk(t, "--db", db, "replay", "--rule", "refund_cap=action.amount <= 500.0", "--json")
	if code != inspect.ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var reps []inspect.Replayed
	if err := json.Unmarshal([]byte(out), &reps); err != nil {
		t.Fatal(err)
	}
	got := map[string]map[replay.Match]int{}
	for _, r := range reps {
		got[r.TraceID] = r.Counts
		if r.TraceID == "large" {
			d := r.Decisions[r.First]
			if d.Tool != "issue_refund" || d.Recorded != audit.OutcomePendingApproval || d.ReplayCode != reason.RuleViolated {
				t.Errorf("first divergence %+v, want the refund of 700 refused by the rule", d)
			}
		}
	}
	if got["small"][replay.Changed] != 0 || got["small"][replay.Missing] != 0 || got["large"][replay.Changed] != 1 {
		t.Errorf("counts %+v", got)
	}
	if text := mustBK(t, "--db", db, "replay", "--trace", "large", "--rule", "refund_cap=action.amount <= 500.0"); !strings.Contains(text, "1 changed") ||
		!strings.Contains(text, "RULE_VIOLATED") {
		t.Errorf("text report:\n%s", text)
	}
}

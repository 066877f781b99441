package replay_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/snapshot"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/replay"
	"github.com/blackboardkernel/bk/rules"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/sqlitestore"
	"github.com/blackboardkernel/bk/toolgate"
)

func openDesk(t *testing.T, path string) store.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Every decision of every trace the support desk recorded is reproduced
// from the store alone: as many decisions as the trace holds decision
// records, each the same. The same holds for the desk killed between a refund's payment and its
// record, and run again: the refund's attempts, its recovery and the rest
// of the run replay as recorded.
func TestSupportDeskReproduced(t *testing.T) {
	t.Run("run", func(t *testing.T) { reproduced(t, openDesk(t, deskDB(t))) })
	t.Run("crashed and recovered", func(t *testing.T) { reproduced(t, openDesk(t, crashedDeskDB(t))) })
}

func reproduced(t *testing.T, s store.Store) {
	for _, trace := range deskTraces(t, s) {
		rep, err := replay.Trace(context.Background(), s, deskNS, trace)
		if err != nil {
			t.Fatalf("%s: %v", trace, err)
		}
		want := len(recordedDecisions(t, s, trace))
		if rep.First >= 0 || !maps.Equal(rep.Counts, map[replay.Match]int{replay.Same: want, replay.Changed: 0, replay.Missing: 0, replay.Extra: 0}) || len(rep.Decisions) != want {
			t.Errorf("%s: %d decision records, replay %+v (first divergence %d): %+v", trace, want, rep.Counts, rep.First, rep.Decisions)
		}
		if len(rep.Notes) > 0 {
			t.Errorf("%s: notes %q", trace, rep.Notes)
		}
		for _, d := range rep.Decisions {
			if d.Record == "" || d.Replayed == "" {
				t.Errorf("%s: decision without both sides: %+v", trace, d)
			}
		}
	}
}

// A tightened rule (refunds at most 50) changes exactly the decisions
// the recorded refund amounts say it would: each refund committed (or
// waiting for approval) above 50 is refused by the rule, a duplicate
// refused because such a refund held its key is refused by the rule
// instead, whatever followed those refunds (result, escalation,
// fallback) is missing, and every other decision is the same.
func TestTightenedRuleChangesExactlyTheLargeRefunds(t *testing.T) {
	s := openDesk(t, deskDB(t))
	tight := rules.Spec{Name: "refund_within_assessment", On: rules.TargetAction, Target: "issue_refund", Expr: "action.amount <= 50.0"}
	changedTotal := 0
	for _, trace := range deskTraces(t, s) {
		recorded := recordedDecisions(t, s, trace)
		large := map[string]bool{} // refunds above 50 the record committed
		for _, d := range recorded {
			args, _ := d.Context["args"].(map[string]any)
			amount, _ := args["amount"].(float64)
			if d.Kind == "issue_refund" && (d.Outcome == audit.OutcomeCommitted || d.Outcome == audit.OutcomePendingApproval) && amount > 50 {
				large[d.Subject] = true
			}
		}
		want := map[string]replay.Match{}
		for _, d := range recorded {
			esc, _ := d.Context["escalates"].(string)
			switch {
			case large[d.Subject] && d.Kind == "issue_refund":
				want[d.RecordID] = replay.Changed
			case d.Code == reason.DuplicateAction && large[d.Failed]:
				want[d.RecordID] = replay.Changed
			case len(d.EvidenceRefs) > 0 && large[d.EvidenceRefs[0]] && d.Subject != "" && !strings.HasPrefix(d.Subject, "actions:") && !strings.HasPrefix(d.Subject, "actions@"):
				want[d.RecordID] = replay.Missing // the refund's result or escalation
			case large[esc]:
				want[d.RecordID] = replay.Missing // the fallback
			default:
				want[d.RecordID] = replay.Same
			}
		}
		rep, err := replay.Trace(context.Background(), s, deskNS, trace, replay.WithRules(tight))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]replay.Match{}
		for _, d := range rep.Decisions {
			if d.Match == replay.Extra {
				t.Errorf("%s: a decision the record does not hold: %+v", trace, d)
				continue
			}
			got[d.Record] = d.Match
			if d.Match == replay.Changed && (d.Replay != audit.OutcomeRefused || d.ReplayCode != reason.RuleViolated) {
				t.Errorf("%s: %s changed to %+v, want refused %s", trace, d.Record, d.Replay, reason.RuleViolated)
			}
			if d.Match == replay.Changed {
				changedTotal++
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: statuses\n got %v\nwant %v", trace, got, want)
		}
	}
	if changedTotal == 0 {
		t.Fatal("the tightened rule changed nothing: the desk records no refund above 50")
	}
}

// A tool made to need approval always: the refunds the record ran at once
// now wait for approval, and their results are missing.
func TestWithToolApproval(t *testing.T) {
	s := openDesk(t, deskDB(t))
	rep, err := replay.Trace(context.Background(), s, deskNS, "T1", replay.WithTool("issue_refund", func(tp *toolgate.Tool) {
		tp.Approval = "true"
	}))
	if err != nil {
		t.Fatal(err)
	}
	if rep.First < 0 {
		t.Fatalf("no divergence: %+v", rep.Decisions)
	}
	first := rep.Decisions[rep.First]
	if first.Tool != "issue_refund" || first.Recorded != audit.OutcomeCommitted || first.Replay != audit.OutcomePendingApproval {
		t.Errorf("first divergence %+v, want the refund waiting for approval", first)
	}
	if _, err := replay.Trace(context.Background(), s, deskNS, "T1", replay.WithTool("no_such_tool", nil)); !errors.Is(err, replay.ErrInvalidOption) {
		t.Errorf("unknown tool: %v, want ErrInvalidOption", err)
	}
}

// Replaying calls no effect (the shop counts its calls), needs no mask
// key (the charge masks the card), and reproduces a failed effect, an
// approval and the run after it.
func TestReplayCallsNoEffect(t *testing.T) {
	sh := newShop(t)
	sh.traffic(t, "order-1")
	before := sh.effects
	rep, err := replay.Trace(context.Background(), sh.s, "shop", "order-1")
	if err != nil {
		t.Fatal(err)
	}
	if sh.effects != before {
		t.Errorf("the replay called %d effects", sh.effects-before)
	}
	want := len(recordedDecisions(t, sh.s, "order-1"))
	if rep.First >= 0 || rep.Counts[replay.Same] != want || len(rep.Notes) > 0 {
		t.Errorf("replay of %d decisions: %+v %q\n%+v", want, rep.Counts, rep.Notes, rep.Decisions)
	}
	stages := map[string]int{}
	for _, d := range rep.Decisions {
		stages[d.Stage+" "+string(d.Recorded)]++
	}
	for _, s := range []string{"call committed", "call pending_approval", "effect executed", "effect failed", "derive committed"} {
		if stages[s] == 0 {
			t.Errorf("no %q decision replayed: %v", s, stages)
		}
	}
}

// A constraint given to the replay blocks what it names.
func TestWithConstraint(t *testing.T) {
	sh := newShop(t)
	sh.traffic(t, "order-1")
	rep, err := replay.Trace(context.Background(), sh.s, "shop", "order-1",
		replay.WithConstraint(kernel.Constraint{Name: "no_charges", Enabled: true, BlocksField: "amount", AppliesTo: []string{"charge"}}))
	if err != nil {
		t.Fatal(err)
	}
	changed := 0
	for _, d := range rep.Decisions {
		if d.Stage == "call" && d.Tool == "charge" {
			if d.Match != replay.Changed || d.ReplayCode != reason.Blocked("no_charges") {
				t.Errorf("charge %+v, want blocked", d)
			}
			changed++
		}
		if d.Stage == "call" && d.Tool == "lookup" && d.Match != replay.Same {
			t.Errorf("lookup %+v, want the same", d)
		}
	}
	if changed != 3 {
		t.Errorf("%d charges, want 3", changed)
	}
}

// The same store and options give the same report.
func TestDeterministic(t *testing.T) {
	s := openDesk(t, deskDB(t))
	opt := replay.WithRules(rules.Spec{Name: "refund_within_assessment", On: rules.TargetAction, Target: "issue_refund", Expr: "action.amount <= 100.0"})
	a, err := replay.Trace(context.Background(), s, deskNS, "T2", opt)
	if err != nil {
		t.Fatal(err)
	}
	b, err := replay.Trace(context.Background(), s, deskNS, "T2", opt)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("two replays differ:\n%+v\n%+v", a, b)
	}
}

// A policy with a validator that is code cannot be replayed from data,
// and says so.
func TestOpaqueValidatorNotReproducible(t *testing.T) {
	sh := newShop(t, kernel.ValidatorFunc(func(context.Context, kernel.Candidate) kernel.Cause { return kernel.Cause{} }))
	sh.call(t, "o", "lookup", `{"account":"acc-1"}`)
	_, err := replay.Trace(context.Background(), sh.s, "shop", "o")
	if !errors.Is(err, replay.ErrNotReproducible) || !strings.Contains(err.Error(), "ValidatorFunc") {
		t.Errorf("err %v, want ErrNotReproducible naming the validator", err)
	}
}

func TestNoTrace(t *testing.T) {
	sh := newShop(t)
	sh.call(t, "o", "lookup", `{"account":"acc-1"}`)
	for _, c := range []struct{ ns, trace string }{{"shop", "nope"}, {"other", "o"}} {
		if _, err := replay.Trace(context.Background(), sh.s, c.ns, c.trace); !errors.Is(err, replay.ErrNoTrace) {
			t.Errorf("%s/%s: %v, want ErrNoTrace", c.ns, c.trace, err)
		}
	}
}

// tamper rewrites the policy record of the desk's database with change,
// through SQL, as someone with the file could.
func tamper(t *testing.T, path string, change func(p blackboard.Payload)) string {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var id, raw string
	if err := db.QueryRow(`SELECT id, payload FROM records WHERE kind = ?`, audit.KindPolicy).Scan(&id, &raw); err != nil {
		t.Fatal(err)
	}
	var p blackboard.Payload
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		t.Fatal(err)
	}
	change(p)
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE records SET payload = ? WHERE id = ?`, string(b), id); err != nil {
		t.Fatal(err)
	}
	return id
}

// loosen drops the refund rule from a policy payload.
func loosen(p blackboard.Payload) snapshot.Policy {
	var pol snapshot.Policy
	b, _ := json.Marshal(p["policy"])
	json.Unmarshal(b, &pol)
	pol.Rules = pol.Rules[1:]
	var m map[string]any
	b, _ = json.Marshal(pol)
	json.Unmarshal(b, &m)
	p["policy"] = m
	return pol
}

// A policy record changed in the store (a rule dropped, so that a replay
// would pass what the recorded policy refused) is refused: its snapshot
// no longer hashes to its hash; one whose hash was changed to match is no
// longer the policy the decision records name.
func TestAttackTamperedPolicy(t *testing.T) {
	path := deskDB(t)
	id := tamper(t, path, func(p blackboard.Payload) { loosen(p) })
	_, err := replay.Trace(context.Background(), openDesk(t, path), deskNS, "T1")
	if !errors.Is(err, replay.ErrTampered) || !strings.Contains(err.Error(), "record "+id) || !strings.Contains(err.Error(), `trace "T1"`) {
		t.Errorf("tampered snapshot: %v, want ErrTampered about %s", err, id)
	}

	path = deskDB(t)
	tamper(t, path, func(p blackboard.Payload) { p["hash"] = loosen(p).Encode().Hash })
	if _, err := replay.Trace(context.Background(), openDesk(t, path), deskNS, "T1"); !errors.Is(err, replay.ErrNoPolicy) {
		t.Errorf("tampered snapshot and hash: %v, want ErrNoPolicy", err)
	}
}

// A snapshot whose tool has an action type other than its name (what a
// gate that could rename a tool's action type recorded) is not
// reproducible, and says which tool: a replayed gate's action type is
// the tool's name.
func TestRenamedActionNotReproducible(t *testing.T) {
	path := deskDB(t)
	var old, renamed string
	tamper(t, path, func(p blackboard.Payload) {
		old, _ = p["hash"].(string)
		var pol snapshot.Policy
		b, _ := json.Marshal(p["policy"])
		json.Unmarshal(b, &pol)
		pol.Tools[0].Action = "renamed"
		renamed = pol.Tools[0].Name
		var m map[string]any
		b, _ = json.Marshal(pol)
		json.Unmarshal(b, &m)
		p["policy"], p["hash"] = m, pol.Encode().Hash
	})
	// Every record naming the old hash names the new one, so that the
	// snapshot is the one the trace's decisions name.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	var hash string
	if err := db.QueryRow(`SELECT json_extract(payload, '$.hash') FROM records WHERE kind = ?`, audit.KindPolicy).Scan(&hash); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE records SET payload = replace(payload, ?, ?) WHERE kind != ?`, old, hash, audit.KindPolicy); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = replay.Trace(context.Background(), openDesk(t, path), deskNS, "T1")
	if !errors.Is(err, replay.ErrNotReproducible) || !strings.Contains(err.Error(), `"renamed"`) || !strings.Contains(err.Error(), renamed) {
		t.Errorf("renamed action type: %v, want ErrNotReproducible naming tool %s", err, renamed)
	}
}

// A spec with only a name and an expression changes the recorded rule of
// that name where it applies, as the full spec does; a name the policy
// does not hold is an error.
func TestRuleExpressionOnly(t *testing.T) {
	s := openDesk(t, deskDB(t))
	full, err := replay.Trace(context.Background(), s, deskNS, "T1",
		replay.WithRules(rules.Spec{Name: "refund_within_assessment", On: rules.TargetAction, Target: "issue_refund", Expr: "action.amount <= 50.0"}))
	if err != nil {
		t.Fatal(err)
	}
	short, err := replay.Trace(context.Background(), s, deskNS, "T1", replay.WithRules(rules.Spec{Name: "refund_within_assessment", Expr: "action.amount <= 50.0"}))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(full, short) || full.First < 0 {
		t.Errorf("expression only %+v, full spec %+v", short.Counts, full.Counts)
	}
	if _, err := replay.Trace(context.Background(), s, deskNS, "T1", replay.WithRules(rules.Spec{Name: "nope", Expr: "true"})); !errors.Is(err, replay.ErrInvalidOption) {
		t.Errorf("unknown rule: %v, want ErrInvalidOption", err)
	}
}

// Run controls and the compiled context a call names are replayed as
// recorded: the call naming the context commits again (a context the
// replay did not copy would be CONTEXT_INVALID), and the charge in the
// read-only trace is READ_ONLY_MODE again.
func TestControlsAndContext(t *testing.T) {
	ctx := context.Background()
	sh := newShop(t)
	if err := sh.g.Restrict(ctx, "ro", toolgate.Controls{ReadOnly: true}); err != nil {
		t.Fatal(err)
	}
	cc, err := sh.g.Kernel().Governor().Append(ctx, kernel.Follow{Role: blackboard.RoleKernel, Entry: kernel.Entry{TraceID: "ro",
		Slot: blackboard.Evidence, Kind: audit.KindCompiledContext, Payload: blackboard.Payload{"hash": "sha256:00", "prompt": "look the account up"}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sh.g.Call(ctx, toolgate.Call{Tool: "lookup", Args: json.RawMessage(`{"account":"acc-1"}`), Caller: "clerk", TraceID: "ro", Context: cc.ID})
	if err != nil || res.Code != reason.EffectSucceeded {
		t.Fatalf("lookup: %+v %v", res, err)
	}
	if res := sh.call(t, "ro", "charge", `{"account":"acc-1","card":"4111111111111111","amount":50}`); res.Code != reason.ReadOnlyMode {
		t.Fatalf("charge: %+v", res)
	}
	rep, err := replay.Trace(ctx, sh.s, "shop", "ro")
	if err != nil {
		t.Fatal(err)
	}
	if rep.First >= 0 || rep.Counts[replay.Same] != len(recordedDecisions(t, sh.s, "ro")) {
		t.Fatalf("%+v %q\n%+v", rep.Counts, rep.Notes, rep.Decisions)
	}
	// The charge masks the card, so its refusal before the arguments
	// parsed recorded none: the replay says it made the call without.
	if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "holds no arguments") {
		t.Errorf("notes %q", rep.Notes)
	}
	codes := map[reason.Code]bool{}
	for _, d := range rep.Decisions {
		codes[d.ReplayCode] = true
	}
	if !codes[reason.ReadOnlyMode] || !codes[reason.Committed] {
		t.Errorf("replayed codes %v, want COMMITTED and READ_ONLY_MODE", codes)
	}
}

// A trace decided under two policies (the application restarted with a
// rule added) is replayed under each, as its decision records name them.
func TestTwoPolicies(t *testing.T) {
	first := newShop(t)
	first.call(t, "o", "lookup", `{"account":"acc-1"}`)
	first.call(t, "o", "charge", `{"account":"acc-1","card":"4111111111111111","amount":50}`)
	cap10, err := rules.New(rules.OnAction("cap", "charge", "action.amount <= 10.0"))
	if err != nil {
		t.Fatal(err)
	}
	second := newShopOn(t, first.s, cap10)
	second.call(t, "o", "lookup", `{"account":"acc-2"}`)
	if res := second.call(t, "o", "charge", `{"account":"acc-2","card":"4111111111111111","amount":50}`); res.Code != reason.RuleViolated {
		t.Fatalf("charge under the cap: %+v", res)
	}
	rep, err := replay.Trace(context.Background(), first.s, "shop", "o")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Policies) != 2 || rep.Policies[0] != first.g.Policy().Hash || rep.Policies[1] != second.g.Policy().Hash {
		t.Errorf("policies %q, want %s then %s", rep.Policies, first.g.Policy().Hash, second.g.Policy().Hash)
	}
	if rep.First >= 0 || rep.Counts[replay.Same] != len(recordedDecisions(t, first.s, "o")) {
		t.Errorf("%+v\n%+v", rep.Counts, rep.Decisions)
	}
}

// A loosened rule commits a call the record refused: the replay has no
// recorded result for it, so its effect fails (an extra decision, and a
// note), and nothing is called.
func TestLoosenedRuleExtra(t *testing.T) {
	cap10, err := rules.New(rules.OnAction("cap", "charge", "action.amount <= 10.0"))
	if err != nil {
		t.Fatal(err)
	}
	sh := newShop(t, cap10)
	sh.call(t, "o", "lookup", `{"account":"acc-1"}`)
	if res := sh.call(t, "o", "charge", `{"account":"acc-1","card":"4111111111111111","amount":50}`); res.Code != reason.RuleViolated {
		t.Fatalf("charge: %+v", res)
	}
	before := sh.effects
	rep, err := replay.Trace(context.Background(), sh.s, "shop", "o", replay.WithRules(rules.Spec{Name: "cap", Expr: "action.amount <= 100.0"}))
	if err != nil {
		t.Fatal(err)
	}
	if sh.effects != before {
		t.Errorf("the replay called %d effects", sh.effects-before)
	}
	if rep.Counts[replay.Changed] != 1 || rep.Counts[replay.Extra] != 1 || rep.Counts[replay.Missing] != 0 {
		t.Fatalf("%+v\n%+v", rep.Counts, rep.Decisions)
	}
	first, last := rep.Decisions[rep.First], rep.Decisions[len(rep.Decisions)-1]
	if first.Tool != "charge" || first.ReplayCode != reason.Committed || first.RecordedCode != reason.RuleViolated {
		t.Errorf("first divergence %+v", first)
	}
	if last.Match != replay.Extra || last.Record != "" || last.ReplayCode != reason.EffectFailed {
		t.Errorf("last decision %+v, want the extra failed effect", last)
	}
	if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "no recorded result") {
		t.Errorf("notes %q", rep.Notes)
	}
}

// Replays of one store may run at once (each builds its own kernel, gate
// and memory store); run with -race.
func TestConcurrentReplays(t *testing.T) {
	sh := newShop(t)
	sh.traffic(t, "order-1")
	want, err := replay.Trace(context.Background(), sh.s, "shop", "order-1")
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			rep, err := replay.Trace(context.Background(), sh.s, "shop", "order-1")
			if err == nil && !reflect.DeepEqual(rep, want) {
				err = errors.New("a concurrent replay reported otherwise")
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

package inspect_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/inspect"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/sqlitestore"
	"github.com/blackboardkernel/bk/toolgate"
)

// bk runs the inspector and returns its exit code, stdout and stderr.
func bk(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := inspect.Main(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// mustBK runs the inspector and fails the test unless it succeeds.
func mustBK(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := bk(t, args...)
	if code != inspect.ExitOK {
		t.Fatalf("bk %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

var (
	buildOnce sync.Once
	exampleB  string
	buildErr  error
)

// multiEpisode builds examples/multi_episode once per test binary.
func multiEpisode(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bk-inspect-")
		if err != nil {
			buildErr = err
			return
		}
		exampleB = filepath.Join(dir, "multi_episode")
		out, err := exec.Command("go", "build", "-o", exampleB, "github.com/blackboardkernel/bk/examples/multi_episode").CombinedOutput()
		if err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("building examples/multi_episode: %v", buildErr)
	}
	return exampleB
}

// TestMultiEpisodeDatabase drives every command on a database written by
// go run ./examples/multi_episode --db FILE.
func TestMultiEpisodeDatabase(t *testing.T) {
	db := filepath.Join(t.TempDir(), "multi.db")
	if out, err := exec.Command(multiEpisode(t), "--db", db).CombinedOutput(); err != nil {
		t.Fatalf("multi_episode: %v\n%s", err, out)
	}

	var traces []inspect.TraceRow
	if err := json.Unmarshal([]byte(mustBK(t, "--db", db, "traces", "--json")), &traces); err != nil {
		t.Fatal(err)
	}
	if len(traces) != 20 {
		t.Fatalf("%d traces, want the example's 20", len(traces))
	}
	text := mustBK(t, "traces", "--db", db)
	if !strings.HasPrefix(text, "TRACE") || !strings.Contains(text, traces[0].TraceID) {
		t.Errorf("traces text:\n%s", text)
	}
	for _, line := range strings.Split(text, "\n") {
		if len([]rune(line)) > 160 {
			t.Errorf("a line wider than a terminal: %q", line)
		}
	}

	var fallback string
	total := 0
	for _, tr := range traces {
		total += tr.Records
		if fallback == "" && strings.Contains(tr.Outcome, kernel.FallbackQueueForReview+" committed") {
			fallback = tr.TraceID
		}
	}
	if fallback == "" {
		t.Fatal("no trace with a queue_for_review committed")
	}
	var tl inspect.TimelineReport
	if err := json.Unmarshal([]byte(mustBK(t, "--db", db, "--json", "timeline", fallback)), &tl); err != nil {
		t.Fatal(err)
	}
	last := tl.Events[len(tl.Events)-1]
	if tl.Events[0].Text != "percept.temperature committed"+tl.Events[0].Text[len("percept.temperature committed"):] || last.Type != inspect.EventCommit {
		t.Errorf("timeline %+v ... %+v", tl.Events[0], last)
	}
	// The paper's step numbers only when asked for.
	if text := mustBK(t, "--db", db, "timeline", fallback); !strings.Contains(text, "\n  percept.temperature committed") || strings.Contains(text, "t0 ") {
		t.Errorf("timeline text:\n%s", text)
	}
	if text := mustBK(t, "--db", db, "timeline", "--steps", fallback); !strings.Contains(text, "\n  t0   percept.temperature committed") {
		t.Errorf("timeline --steps text:\n%s", text)
	}

	ex := mustBK(t, "--db", db, "explain", last.Record)
	if !strings.Contains(ex, "fallback") || !strings.Contains(ex, "instead of:") || !strings.Contains(ex, "root cause:") {
		t.Errorf("explain of the fallback:\n%s", ex)
	}

	var stats inspect.StatsReport
	if err := json.Unmarshal([]byte(mustBK(t, "--db", db, "stats", "--json")), &stats); err != nil {
		t.Fatal(err)
	}
	if len(stats.Constraints) != 2 {
		t.Errorf("learned constraints %+v, want the example's 2", stats.Constraints)
	}
	codes := map[reason.Code]int{}
	for _, c := range stats.Decisions {
		codes[c.Code] = c.Count
	}
	if codes[reason.Committed] == 0 || codes[reason.StaleEvidence] == 0 {
		t.Errorf("decisions by code %v", codes)
	}
	if text := mustBK(t, "--db", db, "stats"); !strings.Contains(text, "LEARNED CONSTRAINTS: 2") {
		t.Errorf("stats text:\n%s", text)
	}

	export := mustBK(t, "--db", db, "export")
	lines := 0
	sc := bufio.NewScanner(strings.NewReader(export))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r blackboard.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.ID == "" {
			t.Fatalf("export line %q: %v", sc.Text(), err)
		}
		lines++
	}
	if lines != total {
		t.Errorf("export wrote %d records, the traces hold %d", lines, total)
	}
	if one := mustBK(t, "--db", db, "export", "--trace", fallback); strings.Count(one, "\n") != tl.Records {
		t.Errorf("export --trace wrote %d lines, want %d", strings.Count(one, "\n"), tl.Records)
	}
	if out := mustBK(t, "--db", db, "effects"); out != "no effects\n" {
		t.Errorf("effects: %q", out)
	}
	if out := mustBK(t, "--db", db, "approvals"); out != "no approvals pending\n" {
		t.Errorf("approvals: %q", out)
	}
	if out := mustBK(t, "--db", db, "--namespace", "elsewhere", "traces"); out != "no traces\n" {
		t.Errorf("another namespace: %q", out)
	}
}

// deskTools are a support desk's tools: an order lookup, and a refund
// bound to the order that needs approval above 500.
func deskTools() []toolgate.Tool {
	return []toolgate.Tool{
		{Unscoped: true, Name: "lookup_order", Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`),
			Result: "order",
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"order_id": inv.Args["order_id"], "amount": 700.0}, nil
			}},
		{Unscoped: true, Name: "issue_refund", Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"},"amount":{"type":"number"}},"required":["order_id","amount"]}`),
			Requires: []string{"refund_due"}, Result: "refund", Approval: "amount > 500",
			Bindings: []toolgate.Binding{{Arg: "order_id", Percept: "order", Op: "equal"}, {Arg: "amount", Percept: "order", Op: "at_most"}},
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"refund_id": "re_" + inv.TraceID}, nil
			}},
	}
}

// toolgateDatabase plays a support desk through the tool-call gate on a
// SQLite file: a refund refused before the order is known, a lookup, a
// refund that waits for approval, and one approved and paid.
func toolgateDatabase(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "desk.db")
	s, err := sqlitestore.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runDesk(t, s, nil)
	return db
}

// runDesk plays toolgateDatabase's calls on s, with checkpoints signed by
// signer when it is not nil (the last one made before it returns).
func runDesk(t *testing.T, s store.Store, signer crypto.Signer) {
	t.Helper()
	tools := deskTools()
	g, err := toolgate.New(context.Background(), toolgate.Config{
		Kernel: kernel.Config{Store: s, Namespace: "desk", Signer: signer, CheckpointEvery: -1,
			BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}}},
		Tools:     tools,
		Contracts: map[string][]string{"support": {"lookup_order", "issue_refund"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	k := g.Kernel()
	ctx := context.Background()
	call := func(trace, tool, args string) toolgate.Result {
		res, err := g.Call(ctx, toolgate.Call{ID: "c-" + tool, Tool: tool, Args: json.RawMessage(args), Caller: "support", TraceID: trace})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for _, trace := range []string{"ticket-1", "ticket-2"} {
		if res := call(trace, "issue_refund", `{"order_id":"A1","amount":700}`); res.Outcome != audit.OutcomeRefused {
			t.Fatalf("early refund: %+v", res)
		}
		call(trace, "lookup_order", `{"order_id":"A1"}`)
		if _, err := k.Proposer(blackboard.RolePlanner, "analyst").Submit(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Beliefs, Kind: "refund_due",
			Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}}); err != nil {
			t.Fatal(err)
		}
		if res := call(trace, "issue_refund", `{"order_id":"A1","amount":700}`); res.Outcome != audit.OutcomePendingApproval {
			t.Fatalf("refund: %+v", res)
		}
	}
	pending, err := g.Pending(ctx, "ticket-2")
	if err != nil || len(pending) != 1 {
		t.Fatal(pending, err)
	}
	if _, err := g.Approver("human:alice").Decide(ctx, audit.Approval{TraceID: "ticket-2", ActionID: pending[0].ActionID, Digest: pending[0].Digest, Decision: audit.Approved, Note: "ok"}); err != nil {
		t.Fatal(err)
	}
	if res, err := g.Execute(ctx, pending[0].ActionID); err != nil || res.Outcome != audit.OutcomeExecuted {
		t.Fatal(res, err)
	}
	if _, err := g.Call(ctx, toolgate.Call{Tool: "delete_account", Args: json.RawMessage(`{}`), Caller: "support", TraceID: "ticket-3"}); err != nil {
		t.Fatal(err)
	}
	if signer != nil {
		if _, err := k.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestToolgateDatabase: approvals, effects, and the explanation of a
// refused tool call, on a database the tool-call gate wrote.
func TestToolgateDatabase(t *testing.T) {
	db := toolgateDatabase(t)

	var approvals []inspect.PendingApproval
	if err := json.Unmarshal([]byte(mustBK(t, "--db", db, "approvals", "--json")), &approvals); err != nil {
		t.Fatal(err)
	}
	if len(approvals) != 1 || approvals[0].TraceID != "ticket-1" || approvals[0].Tool != "issue_refund" || approvals[0].Reason == "" {
		t.Fatalf("pending approvals %+v", approvals)
	}
	if text := mustBK(t, "--db", db, "approvals"); !strings.Contains(text, approvals[0].ActionID) || !strings.Contains(text, "AGE") {
		t.Errorf("approvals text:\n%s", text)
	}

	var effects []inspect.EffectRow
	if err := json.Unmarshal([]byte(mustBK(t, "--db", db, "effects", "--json")), &effects); err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]int{}
	for _, e := range effects {
		outcomes[e.Tool+" "+e.Outcome]++
		if e.Attempts != 1 {
			t.Errorf("effect %+v: attempts", e)
		}
	}
	if outcomes["lookup_order succeeded"] != 2 || outcomes["issue_refund succeeded"] != 1 || len(effects) != 3 {
		t.Errorf("effects %+v", effects)
	}

	var traces []inspect.TraceRow
	if err := json.Unmarshal([]byte(mustBK(t, "--db", db, "--namespace", "desk", "traces", "--json")), &traces); err != nil {
		t.Fatal(err)
	}
	traces = withoutPolicy(traces)
	// Each trace's outcome is what happened to its actions, not its last
	// event: ticket-1's refund waits for its approver, ticket-2's ran.
	if len(traces) != 3 || traces[0].Outcome != "issue_refund refused, pending; lookup_order executed" ||
		traces[1].Outcome != "issue_refund refused, executed; lookup_order executed" || traces[2].Outcome != "delete_account refused" {
		t.Errorf("traces %+v", traces)
	}

	// The refused early refund: its decision record explains it.
	var tl inspect.TimelineReport
	if err := json.Unmarshal([]byte(mustBK(t, "--db", db, "timeline", "ticket-1", "--json")), &tl); err != nil {
		t.Fatal(err)
	}
	var refused string
	for _, e := range tl.Events {
		if e.Type == inspect.EventRefusal && e.Kind == "issue_refund" {
			refused = e.Record
			break
		}
	}
	if refused == "" {
		t.Fatalf("no refusal in ticket-1:\n%s", tl)
	}
	var ex inspect.Explanation
	if err := json.Unmarshal([]byte(mustBK(t, "--db", db, "explain", refused, "--json")), &ex); err != nil {
		t.Fatal(err)
	}
	if ex.Verdict != "refused" || ex.RootCause == nil || ex.Code != reason.NoCommittedBelief {
		t.Errorf("explain %+v", ex)
	}
	text := mustBK(t, "--db", db, "timeline", "ticket-2")
	for _, want := range []string{"approval: approved by human:alice", "effect.issue_refund attempted (attempt 1)", "effect.issue_refund succeeded (attempt 1) -> percept.refund", "decision: issue_refund executed"} {
		if !strings.Contains(text, want) {
			t.Errorf("timeline of ticket-2 lacks %q:\n%s", want, text)
		}
	}
	// The committed refund's explanation shows its approval and effect.
	if ex := mustBK(t, "--db", db, "explain", effects[2].ActionID); !strings.Contains(ex, "approval: ") || !strings.Contains(ex, "effect: ") {
		t.Errorf("explain of the paid refund:\n%s", ex)
	}
}

// TestWhileWriting: the inspector reads a database while
// examples/multi_episode writes it from another process, and the writer
// is not slowed into failure.
func TestWhileWriting(t *testing.T) {
	db := filepath.Join(t.TempDir(), "live.db")
	cmd := exec.Command(multiEpisode(t), "--db", db, "--episodes", "400")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	reads := 0
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("the writer failed beside the inspector: %v\n%s", err, out.String())
			}
			running = false
		default:
			code, _, errOut := bk(t, "--db", db, "traces", "--json")
			switch {
			case code == inspect.ExitOK:
				reads++
				mustBK(t, "--db", db, "stats")
			case strings.Contains(errOut, "no such file") || strings.Contains(errOut, "not a kernel store"):
				time.Sleep(5 * time.Millisecond) // not created yet
			default:
				t.Fatalf("bk traces while writing: exit %d: %s", code, errOut)
			}
		}
	}
	t.Logf("%d reads while the writer ran", reads)
	var traces []inspect.TraceRow
	if err := json.Unmarshal([]byte(mustBK(t, "--db", db, "traces", "--json")), &traces); err != nil || len(traces) != 400 {
		t.Errorf("%d traces after the writer finished (%v)", len(traces), err)
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	if code, _, errOut := bk(t, "--db", filepath.Join(dir, "absent.db"), "traces"); code != inspect.ExitError || !strings.Contains(errOut, "no such file") {
		t.Errorf("missing file: %d %q", code, errOut)
	}
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("hello, this is not a database at all\n"), 0o644)
	if code, _, errOut := bk(t, "--db", notes, "stats"); code != inspect.ExitError || !strings.Contains(errOut, "not a kernel store") {
		t.Errorf("not a store: %d %q", code, errOut)
	}
	newer := filepath.Join(dir, "newer.db")
	s, err := sqlitestore.Open(context.Background(), newer)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	setUserVersion(t, newer, 99)
	if code, _, errOut := bk(t, "--db", newer, "traces"); code != inspect.ExitError || !strings.Contains(errOut, "newer version") {
		t.Errorf("newer schema: %d %q", code, errOut)
	}
	db := toolgateDatabase(t)
	for _, args := range [][]string{{}, {"frobnicate"}, {"timeline"}, {"explain", "a", "b"}, {"traces", "--bogus"}} {
		if code, _, _ := bk(t, append([]string{"--db", db}, args...)...); code != inspect.ExitUsage {
			t.Errorf("bk %v: exit %d, want usage", args, code)
		}
	}
	if code, _, errOut := bk(t, "--db", db, "explain", "actions:nope:1"); code != inspect.ExitError || !strings.Contains(errOut, "no record") {
		t.Errorf("unknown record: %d %q", code, errOut)
	}
	if code, _, errOut := bk(t, "--db", db, "timeline", "nope"); code != inspect.ExitError || errOut == "" {
		t.Errorf("unknown trace: %d %q", code, errOut)
	}
	if code, out, _ := bk(t, "help"); code != inspect.ExitOK || !strings.Contains(out, "timeline") {
		t.Errorf("help: %d %q", code, out)
	}
}

// TestSupportDeskDatabase drives the inspector on a database written by
// go run ./examples/support_desk --db FILE: the tool-call gate's records
// (approvals, effects, decision records) read back through every command.
func TestSupportDeskDatabase(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "support_desk")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/blackboardkernel/bk/examples/support_desk").CombinedOutput(); err != nil {
		t.Fatalf("building examples/support_desk: %v\n%s", err, out)
	}
	db := filepath.Join(dir, "desk.db")
	if out, err := exec.Command(bin, "--db", db, "--approver", "supervisor").CombinedOutput(); err != nil {
		t.Fatalf("support_desk: %v\n%s", err, out)
	}
	var traces []inspect.TraceRow
	if err := json.Unmarshal([]byte(mustBK(t, "--db", db, "traces", "--json")), &traces); err != nil {
		t.Fatal(err)
	}
	if len(traces) == 0 {
		t.Fatal("no traces in the support desk's database")
	}
	var effects []inspect.EffectRow
	if err := json.Unmarshal([]byte(mustBK(t, "--db", db, "effects", "--json")), &effects); err != nil {
		t.Fatal(err)
	}
	if len(effects) == 0 {
		t.Fatal("no effects in the support desk's database")
	}
	for _, cmd := range [][]string{{"stats"}, {"approvals"}, {"effects"}, {"timeline", traces[0].TraceID}, {"export", "--trace", traces[0].TraceID}} {
		if out := mustBK(t, append([]string{"--db", db}, cmd...)...); out == "" {
			t.Errorf("bk %v printed nothing", cmd)
		}
	}
	stats := mustBK(t, "--db", db, "stats")
	for _, want := range []string{"DUPLICATE_ACTION", "STALE_EVIDENCE", "ARGUMENT_NOT_BOUND"} {
		if !strings.Contains(stats, want) {
			t.Errorf("stats lack %s:\n%s", want, stats)
		}
	}
	if out := mustBK(t, "--db", db, "effects"); !strings.Contains(out, "APPROVAL_DENIED") || !strings.Contains(out, "EFFECT_SUCCEEDED") {
		t.Errorf("effects lack the denied approval or a success:\n%s", out)
	}
}

// Route 8 in the inspector: decision records that say pending_approval
// but are not the gate's record of a committed action (one about a
// percept, one naming other arguments for the real refund) cannot change
// what `bk approvals` shows: the one waiting refund, with its own
// arguments.
func TestAttackApprovalsShowTheCommittedAction(t *testing.T) {
	db := toolgateDatabase(t)
	s, err := sqlitestore.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	k, err := kernel.New(kernel.Config{Store: s, Namespace: "desk"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	order, err := k.Handle(blackboard.RoleTool, "reader").Find(ctx, "ticket-1", blackboard.Percepts, "order")
	if err != nil {
		t.Fatal(err)
	}
	var refund string
	for r, err := range k.Handle(blackboard.RoleTool, "reader").Trace(ctx, "ticket-1") {
		if err != nil {
			t.Fatal(err)
		}
		if r.Slot == blackboard.Actions && r.Mode == blackboard.ModeCommit && r.Kind == "issue_refund" {
			refund = r.ID
		}
	}
	for _, subject := range []string{order.ID, refund} {
		if _, err := audit.Append(ctx, k.Governor(), audit.Entry{TraceID: "ticket-1", Kind: "issue_refund", Subject: subject,
			Outcome: audit.OutcomePendingApproval, Code: reason.Committed,
			Context: blackboard.Payload{"tool": "issue_refund", "args": map[string]any{"order_id": "A1", "amount": 501.0}}}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	var approvals []inspect.PendingApproval
	if err := json.Unmarshal([]byte(mustBK(t, "--db", db, "approvals", "--json")), &approvals); err != nil {
		t.Fatal(err)
	}
	for _, p := range approvals {
		if p.ActionID != refund || p.Args["amount"] != 700.0 {
			t.Errorf("bk approvals shows %+v, want the refund %s of 700", p, refund)
		}
	}
	if len(approvals) == 0 {
		t.Error("bk approvals lost the waiting refund")
	}
}

// TestAttackForgedEffect: a tool that stores an object under the gate's
// effect key (a failure of the paid refund, a success of an action that
// never ran) writes an observation, not an effect: bk effects, the
// timeline and the refund's explanation show only what the gate wrote.
func TestAttackForgedEffect(t *testing.T) {
	db := toolgateDatabase(t)
	ctx := context.Background()
	s, err := sqlitestore.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before, err := inspect.Effects(ctx, s, "desk")
	if err != nil {
		t.Fatal(err)
	}
	refund := before[len(before)-1]
	if refund.Tool != "issue_refund" || refund.TraceID != "ticket-2" || refund.Outcome != audit.StatusSucceeded {
		t.Fatalf("the paid refund: %+v", refund)
	}
	k, err := kernel.New(kernel.Config{Store: s, Namespace: "desk"})
	if err != nil {
		t.Fatal(err)
	}
	forged := map[string]map[string]any{
		"refund_failed": {"status": "failed", "tool": "issue_refund", "action_id": refund.ActionID, "code": "EFFECT_FAILED", "attempt": 9},
		"phantom":       {"status": "succeeded", "tool": "issue_refund", "action_id": "actions:ticket-2:99", "code": "EFFECT_SUCCEEDED", "attempt": 1},
	}
	var ids []string
	for kind, eff := range forged {
		r, err := k.Handle(blackboard.RoleTool, "scraper").Write(ctx, kernel.Entry{TraceID: "ticket-2", Slot: blackboard.Percepts, Kind: kind, Payload: blackboard.Payload{audit.KeyEffect: eff}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r)
	}
	after, err := inspect.Effects(ctx, s, "desk")
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) || !reflect.DeepEqual(after[len(after)-1], refund) {
		t.Errorf("bk effects after the forgery:\n%+v\nwant\n%+v", after, before)
	}
	tl, err := inspect.Timeline(ctx, s, "", "ticket-2")
	if err != nil {
		t.Fatal(err)
	}
	shown := 0
	for _, e := range tl.Events {
		if slices.Contains(ids, e.Record) {
			shown++
			if e.Type != inspect.EventObservation {
				t.Errorf("the forged %s is shown as %s: %q", e.Record, e.Type, e.Text)
			}
		}
	}
	if shown != len(ids) {
		t.Errorf("the timeline shows %d of the %d forged percepts:\n%s", shown, len(ids), tl)
	}
	ex, err := inspect.Explain(ctx, s, refund.ActionID)
	if err != nil {
		t.Fatal(err)
	}
	if text := ex.String(); strings.Contains(text, ids[0]) || strings.Contains(text, ids[1]) || !strings.Contains(text, "effect: ") {
		t.Errorf("the refund's explanation:\n%s", text)
	}
}

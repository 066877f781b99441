package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMain doubles as the program: with BK_SUPPORT_DESK_CHILD set (to the
// arguments, as a JSON list) the test binary runs the desk instead of the
// tests, so that a test can crash it in a child process.
func TestMain(m *testing.M) {
	if argv, ok := os.LookupEnv("BK_SUPPORT_DESK_CHILD"); ok {
		var args []string
		if err := json.Unmarshal([]byte(argv), &args); err != nil {
			fmt.Fprintln(os.Stderr, "BK_SUPPORT_DESK_CHILD:", err)
			os.Exit(2)
		}
		if err := run(context.Background(), args, noEnv, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "support_desk:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func noEnv(string) string { return "" }

// decision is one printed decision line, with the hint printed under it.
type decision struct {
	ticket, kind, outcome, code, reason, hint string
}

var (
	decisionRE = regexp.MustCompile(`^  (\S+)\s+(committed|refused|pending_approval|executed|failed|escalated)\s+(\S+)\s*(.*)$`)
	hintRE     = regexp.MustCompile(`^\s+hint to the model: (.+)$`)
	ticketRE2  = regexp.MustCompile(`^(T\d)[ :]`)
)

// decisionsOf takes the printed decisions out of a report, in order.
func decisionsOf(t *testing.T, report string) []decision {
	t.Helper()
	var out []decision
	ticket := ""
	sc := bufio.NewScanner(strings.NewReader(report))
	for sc.Scan() {
		line := sc.Text()
		if m := ticketRE2.FindStringSubmatch(line); m != nil {
			ticket = m[1]
			continue
		}
		if m := hintRE.FindStringSubmatch(line); m != nil {
			if len(out) == 0 || out[len(out)-1].outcome != "refused" {
				t.Fatalf("a hint under no refusal: %q", line)
			}
			out[len(out)-1].hint = m[1]
			continue
		}
		if m := decisionRE.FindStringSubmatch(line); m != nil {
			out = append(out, decision{ticket: ticket, kind: m[1], outcome: m[2], code: m[3], reason: m[4]})
		}
	}
	return out
}

// find returns the index of the first decision from i on that matches.
func find(ds []decision, from int, ticket, kind, outcome, code string) int {
	for i := from; i < len(ds); i++ {
		d := ds[i]
		if d.ticket == ticket && d.kind == kind && d.outcome == outcome && d.code == code {
			return i
		}
	}
	return -1
}

func runDesk(t *testing.T, args ...string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := run(context.Background(), args, noEnv, &buf); err != nil {
		t.Fatalf("run(%q): %v\n%s", args, err, buf.String())
	}
	return buf.String()
}

// checkReport checks what the scripted run of the five tickets shows.
func checkReport(t *testing.T, report string) {
	t.Helper()
	ds := decisionsOf(t, report)
	want := func(what string, from int, ticket, kind, outcome, code string) int {
		t.Helper()
		i := find(ds, from, ticket, kind, outcome, code)
		if i < 0 {
			t.Errorf("%s: no %s %s %s %s after decision %d\n%s", what, ticket, kind, outcome, code, from, report)
			return from
		}
		return i
	}

	// T1: a refund paid after a retry, and the same refund asked again in
	// the same completion refused as a duplicate, with a hint.
	i := want("refund", 0, "T1", "issue_refund", "executed", "EFFECT_SUCCEEDED")
	if !strings.Contains(ds[i].reason, "attempt 2") || !strings.Contains(ds[i].reason, "503") {
		t.Errorf("T1's refund: %q, want attempt 2 after a 503", ds[i].reason)
	}
	i = want("duplicate", i, "T1", "issue_refund", "refused", "DUPLICATE_ACTION")
	if !strings.Contains(ds[i].hint, "Do not retry") {
		t.Errorf("duplicate refused with hint %q", ds[i].hint)
	}

	// T2: a stale read refuses the refund; the hint sends the model back to
	// lookup_order, whose fresh result derives refund_due again, and then
	// the refund is paid.
	i = want("stale read", 0, "T2", "lookup_order", "executed", "EFFECT_SUCCEEDED")
	for ; i >= 0 && !strings.Contains(ds[i].reason, "stale"); i = find(ds, i+1, "T2", "lookup_order", "executed", "EFFECT_SUCCEEDED") {
	}
	if i < 0 {
		t.Fatalf("no stale lookup in T2\n%s", report)
	}
	want("stale belief", i, "T2", "refund_due", "refused", "STALE_EVIDENCE")
	i = want("stale refusal", i, "T2", "issue_refund", "refused", "STALE_EVIDENCE")
	if !strings.Contains(ds[i].hint, "Call lookup_order again") {
		t.Errorf("stale refusal with hint %q", ds[i].hint)
	}
	i = want("lookup again", i, "T2", "lookup_order", "executed", "EFFECT_SUCCEEDED")
	i = want("derived again", i, "T2", "refund_due", "committed", "COMMITTED")
	want("refund after the repair", i, "T2", "issue_refund", "executed", "EFFECT_SUCCEEDED")

	// T3: over 500, waits; approved; paid.
	i = want("pending", 0, "T3", "issue_refund", "pending_approval", "COMMITTED")
	if !strings.Contains(ds[i].reason, "amount > 500") {
		t.Errorf("pending for %q", ds[i].reason)
	}
	if !strings.Contains(report, "supervisor:maria approved actions@support_desk:T3:") {
		t.Error("no approval of T3's refund printed")
	}
	i = want("approved refund", i, "T3", "issue_refund", "executed", "EFFECT_SUCCEEDED")
	if !strings.Contains(ds[i].reason, "approved in evidence@support_desk:T3:") {
		t.Errorf("T3's refund: %q, want the approval named", ds[i].reason)
	}

	// T4: more than the order is refused by the refund's binding to the
	// order, with a hint; the corrected refund waits, is denied, and the
	// fallback takes its place.
	i = want("binding", 0, "T4", "issue_refund", "refused", "ARGUMENT_NOT_BOUND")
	if !strings.Contains(ds[i].reason, `"amount"`) || !strings.Contains(ds[i].hint, "order.amount") {
		t.Errorf("binding refusal %+v", ds[i])
	}
	i = want("pending", i, "T4", "issue_refund", "pending_approval", "COMMITTED")
	i = want("denied", i, "T4", "issue_refund", "escalated", "APPROVAL_DENIED")
	want("fallback", i, "T4", "queue_for_review", "committed", "COMMITTED")
	if find(ds, 0, "T4", "issue_refund", "executed", "EFFECT_SUCCEEDED") >= 0 {
		t.Error("T4's denied refund ran")
	}

	// T9: the trace is read_only; the refund, not shown, is called all the
	// same and refused before anything is proposed.
	if !strings.Contains(report, "T9: a chargeback on order A9 is open: the desk made the ticket's trace read_only") {
		t.Errorf("T9 was not made read_only\n%s", report)
	}
	i = want("read-only lookup", 0, "T9", "lookup_order", "executed", "EFFECT_SUCCEEDED")
	i = want("read-only refusal", i, "T9", "issue_refund", "refused", "READ_ONLY_MODE")
	if !strings.Contains(ds[i].hint, "read-only") {
		t.Errorf("READ_ONLY_MODE with hint %q", ds[i].hint)
	}
	if find(ds, 0, "T9", "issue_refund", "committed", "COMMITTED") >= 0 {
		t.Error("T9's refund was committed in a read_only trace")
	}

	// Every refusal of a model's call came with a hint for the model (a
	// derived belief is no call of the model's).
	for _, d := range ds {
		if d.outcome == "refused" && d.hint == "" && d.kind != "refund_due" {
			t.Errorf("refusal without a hint: %+v", d)
		}
	}
	for _, s := range []string{
		"Refusals: ARGUMENT_NOT_BOUND=1 DUPLICATE_ACTION=1 READ_ONLY_MODE=1 STALE_EVIDENCE=2; approvals: 1 approved, 1 denied",
		"Payment API: 3 refunds paid, 950.00 EUR",
		"Every refund happened exactly once: 4 committed refunds, 3 paid",
	} {
		if !strings.Contains(report, s) {
			t.Errorf("the report lacks %q\n%s", s, report)
		}
	}
}

func TestScriptedRun(t *testing.T) {
	checkReport(t, runDesk(t))
}

// The same run with the records and the world on disk; a second run on the
// same file has nothing left to do and checks the ledger again.
func TestScriptedRunOnDisk(t *testing.T) {
	db := filepath.Join(t.TempDir(), "desk.db")
	checkReport(t, runDesk(t, "--db", db, "--approver", "supervisor"))
	checkLedgerFile(t, db+".world", 3)
	checkDB(t, db)
	again := runDesk(t, "--db", db, "--approver", "supervisor")
	for _, s := range []string{"Resuming: an earlier run handled 8 of 8 messages.", "The supervisor found nothing left unfinished.",
		"T4 message 2: handled by an earlier run", "Every refund happened exactly once: 4 committed refunds, 3 paid"} {
		if !strings.Contains(again, s) {
			t.Errorf("second run lacks %q\n%s", s, again)
		}
	}
	if strings.Contains(again, "committed        COMMITTED") {
		t.Errorf("the second run decided something\n%s", again)
	}
}

// checkLedgerFile reads the world's journal: want payments, each under its
// own key, for the amounts the tickets allow.
func checkLedgerFile(t *testing.T, path string, want int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	orders := map[string]float64{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("journal line %q: %v", line, err)
		}
		if p := ev.Payment; p != nil {
			if keys[p.Key] {
				t.Errorf("two payments under key %s", p.Key)
			}
			keys[p.Key] = true
			orders[p.OrderID] += p.Amount
		}
	}
	if len(keys) != want || orders["A1"] != 80 || orders["A2"] != 120 || orders["A3"] != 750 || orders["A4"] != 0 {
		t.Errorf("ledger: %d payments %v, want %d: A1 80, A2 120, A3 750", len(keys), orders, want)
	}
}

// A "real" endpoint: --llm-url pointing at a server of the test's own
// (the scripted one), read from the flags or from BK_LLM_*.
func TestEndpointFlags(t *testing.T) {
	m := newScriptedModel()
	defer m.Close()
	out := runDesk(t, "--llm-url", m.URL+"/v1", "--llm-model", "test-model")
	if !strings.Contains(out, "model test-model at "+m.URL) {
		t.Errorf("header: %q", strings.SplitN(out, "\n", 2)[0])
	}
	checkReport(t, out)

	env := map[string]string{"BK_LLM_URL": m.URL, "BK_LLM_MODEL": "env-model", "BK_LLM_API_KEY": "sk-secret"}
	var buf bytes.Buffer
	if err := run(context.Background(), nil, func(k string) string { return env[k] }, &buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "model env-model at "+m.URL) || strings.Contains(buf.String(), "sk-secret") {
		t.Errorf("run from the environment: header %q", strings.SplitN(buf.String(), "\n", 2)[0])
	}
	cfg, err := parseArgs([]string{"--llm-model", "flag-model", "--llm-api-key", "sk-flag"}, func(k string) string { return env[k] })
	if err != nil || cfg.llmModel != "flag-model" || cfg.llmKey != "sk-flag" || cfg.llmURL != m.URL {
		t.Errorf("flags over the environment: %+v %v", cfg, err)
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--crash-after", "3"},
		{"--crash-after", "-1", "--db", "x.db"},
		{"--fail-rate", "1"},
		{"--llm-url", "http://127.0.0.1:1"},
		{"--namespace", ""},
		{"--approver", "person"},
		{"--approver", "robot", "--db", "x.db"},
		{"--nope"},
		{"extra"},
	} {
		var buf bytes.Buffer
		err := run(context.Background(), args, noEnv, &buf)
		if !errors.Is(err, errUsage) || buf.Len() != 0 {
			t.Errorf("run(%q) = %v, printed %q; want a usage error and nothing printed", args, err, buf.String())
		}
	}
	var buf bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, noEnv, &buf); err != nil || !strings.Contains(buf.String(), "--crash-after") {
		t.Errorf("-h: %v %q", err, buf.String())
	}
	if _, err := parseArgs([]string{"-h"}, noEnv); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("parseArgs(-h) = %v", err)
	}
}

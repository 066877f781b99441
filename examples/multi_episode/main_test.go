package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/pgtest"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/pgstore"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

// parsed is one printed row, read back from the output.
type parsed struct {
	temp        float64
	stale       bool
	conf        float64
	conflict    bool
	belief      bool
	pred        string
	status      string
	constraints []string
	reason      string
}

var (
	rowRE = regexp.MustCompile(`^Ep (\d+)\s+\| temp=\s*(\d+\.\d) stale=(True|False)\s+conf=(\d\.\d\d) conflict=(True|False)\s*` +
		`\| belief=([YN]) pred=(\S+)\s+\| (ALERT|REVIEW|NO_ACTION)\s+\| constraints=\[([^\]]*)\](?: reason=(\S+))?$`)
	learnedRE = regexp.MustCompile(`^  >> LEARNED: \[([^\]]+)\] \(before episode (\d+); (.+)\)$`)
	summaryRE = regexp.MustCompile(`^Summary: (\d+) episodes \| ALERT=(\d+) REVIEW=(\d+) NO_ACTION=(\d+)$`)
)

// output is a run's report taken apart.
type output struct {
	lines   []string
	rows    map[int]parsed
	order   []int          // episodes in the order printed
	learned map[int]string // episode -> names learned just before it
	before  map[int]int    // episode -> index of its row in lines
	summary []int
}

func parse(t *testing.T, text string) output {
	t.Helper()
	o := output{rows: map[int]parsed{}, learned: map[int]string{}, before: map[int]int{}}
	o.lines = strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, line := range o.lines {
		if m := rowRE.FindStringSubmatch(line); m != nil {
			ep, _ := strconv.Atoi(m[1])
			temp, _ := strconv.ParseFloat(m[2], 64)
			conf, _ := strconv.ParseFloat(m[4], 64)
			var cs []string
			if m[9] != "" {
				cs = strings.Split(m[9], " ")
			}
			o.rows[ep] = parsed{temp, m[3] == "True", conf, m[5] == "True", m[6] == "Y", m[7], m[8], cs, m[10]}
			o.order = append(o.order, ep)
			o.before[ep] = i
			continue
		}
		if m := learnedRE.FindStringSubmatch(line); m != nil {
			ep, _ := strconv.Atoi(m[2])
			o.learned[ep] = m[1]
			continue
		}
		if m := summaryRE.FindStringSubmatch(line); m != nil {
			for _, s := range m[1:] {
				n, _ := strconv.Atoi(s)
				o.summary = append(o.summary, n)
			}
			continue
		}
		if strings.HasPrefix(line, "Ep ") {
			t.Fatalf("line %d does not parse: %q", i, line)
		}
	}
	return o
}

func runDemo(t *testing.T, args ...string) (string, output) {
	t.Helper()
	var buf bytes.Buffer
	if err := run(context.Background(), args, &buf); err != nil {
		t.Fatalf("run(%q): %v\n%s", args, err, buf.String())
	}
	return buf.String(), parse(t, buf.String())
}

func TestReadings(t *testing.T) {
	// Values the lead computed independently for seed 7.
	want := []reading{
		{Value: 87, Stale: true, Confidence: 0.85},
		{Value: 91, Conflict: true, Confidence: 0.59},
		{Value: 108, Confidence: 0.51},
		{Value: 86, Stale: true, Confidence: 0.98},
		{Value: 99, Confidence: 0.41},
		{Value: 81, Confidence: 0.73},
	}
	for ep, w := range want {
		if got := readingFor(7, ep); got != w {
			t.Errorf("readingFor(7, %d) = %+v, want %+v", ep, got, w)
		}
	}
	if readingFor(8, 0) == readingFor(7, 0) && readingFor(8, 1) == readingFor(7, 1) {
		t.Error("the seed does not change the readings")
	}
}

// The paper's rows (docs/reproduction.md §6) for --episodes 20 --seed 7.
var paperRows = map[int]parsed{
	0:  {temp: 87, stale: true, belief: false, pred: "-", status: statusNoAction},
	2:  {temp: 108, stale: false, belief: true, pred: "+1.0", status: statusAlert},
	3:  {temp: 86, stale: true, belief: false, pred: "-", status: statusNoAction},
	5:  {temp: 81, stale: false, belief: true, pred: "-0.5", status: statusReview},
	12: {temp: 93, stale: false, belief: true, pred: "+1.0", status: statusAlert},
}

func TestDefaultRunReproducesThePaper(t *testing.T) {
	text, out := runDemo(t)
	if !strings.HasPrefix(text, "Multi-episode demo: 20 episodes, seed 7, store memory\n") {
		t.Fatalf("header: %q", out.lines[0])
	}
	if len(out.order) != 20 {
		t.Fatalf("%d rows, want 20:\n%s", len(out.order), text)
	}
	for i, ep := range out.order {
		if ep != i {
			t.Fatalf("row %d is episode %d", i, ep)
		}
	}
	for ep, want := range paperRows {
		got := out.rows[ep]
		if got.temp != want.temp || got.stale != want.stale || got.belief != want.belief || got.pred != want.pred || got.status != want.status {
			t.Errorf("episode %d: got %+v, want the paper's %+v", ep, got, want)
		}
	}
	// The lead's independent values for conf and conflict.
	for ep, w := range map[int]struct {
		conf     float64
		conflict bool
	}{0: {0.85, false}, 1: {0.59, true}, 2: {0.51, false}, 3: {0.98, false}, 4: {0.41, false}, 5: {0.73, false}} {
		if got := out.rows[ep]; got.conf != w.conf || got.conflict != w.conflict {
			t.Errorf("episode %d: conf %v conflict %v, want %v %v", ep, got.conf, got.conflict, w.conf, w.conflict)
		}
	}
	if got := out.rows[5].reason; got != string(reason.NegativePrediction) {
		t.Errorf("episode 5 review reason %q, want NEGATIVE_PREDICTION", got)
	}
	// The two learning points, and nothing else learned.
	wantLearned := map[int]string{4: "block_stale_actions", 12: "block_negative_predictions"}
	if len(out.learned) != len(wantLearned) {
		t.Fatalf("learned %v, want %v", out.learned, wantLearned)
	}
	for ep, name := range wantLearned {
		if out.learned[ep] != name {
			t.Fatalf("before episode %d learned %q, want %q (all: %v)", ep, out.learned[ep], name, out.learned)
		}
		if line := out.lines[out.before[ep]-1]; !strings.Contains(line, ">> LEARNED: ["+name+"]") {
			t.Fatalf("the line before episode %d's row is %q, want the LEARNED line", ep, line)
		}
	}
	if !strings.Contains(out.lines[out.before[4]-1], "STALE_EVIDENCE x2") ||
		!strings.Contains(out.lines[out.before[12]-1], "NEGATIVE_PREDICTION x2") {
		t.Error("a LEARNED line does not say what triggered it")
	}
	// Constraints in force follow what was learned.
	for ep, r := range out.rows {
		want := 0
		if ep >= 4 {
			want++
		}
		if ep >= 12 {
			want++
		}
		if len(r.constraints) != want {
			t.Errorf("episode %d runs under %v, want %d constraints", ep, r.constraints, want)
		}
	}
	// The summary agrees with the rows.
	counts := map[string]int{}
	for _, r := range out.rows {
		counts[r.status]++
	}
	if len(out.summary) != 4 || out.summary[0] != 20 || out.summary[1] != counts[statusAlert] ||
		out.summary[2] != counts[statusReview] || out.summary[3] != counts[statusNoAction] {
		t.Fatalf("summary %v, rows %v", out.summary, counts)
	}
	if counts[statusAlert] != 8 || counts[statusReview] != 3 || counts[statusNoAction] != 9 {
		t.Errorf("ALERT/REVIEW/NO_ACTION = %d/%d/%d, want 8/3/9", counts[statusAlert], counts[statusReview], counts[statusNoAction])
	}
	for _, want := range []string{
		"Constraints learned: 2 [block_stale_actions block_negative_predictions]\n",
		"Codes seen: LOW_CONFIDENCE=1 NEGATIVE_PREDICTION=3 PREDICTION_MISSING_BELIEF=9 STALE_EVIDENCE=6 UNRESOLVED_CONFLICT=2\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(text, "Starting with") {
		t.Error("a run on a fresh store claims to start with learned constraints")
	}
}

// In a longer run the learned constraints bite: block_conflicted_actions,
// learned before episode 20, turns episode 31 (a conflicted reading that
// arbitration let through at confidence 0.75) from ALERT into REVIEW.
func TestLearnedConstraintsBiteInALongerRun(t *testing.T) {
	_, out := runDemo(t, "--episodes", "40", "--seed", "7")
	if out.learned[20] != "block_conflicted_actions" || out.learned[21] != "block_low_confidence_actions" {
		t.Fatalf("learned %v", out.learned)
	}
	r := out.rows[31]
	if !r.conflict || !r.belief || r.pred != "+1.0" || r.status != statusReview ||
		r.reason != string(reason.Blocked("block_conflicted_actions")) {
		t.Fatalf("episode 31: %+v", r)
	}
	// Episode 15, the same situation before the constraint was learned.
	if r := out.rows[15]; !r.conflict || r.status != statusAlert {
		t.Fatalf("episode 15: %+v", r)
	}
}

func TestSecondDBRunStartsWithTheLearnedConstraints(t *testing.T) {
	db := filepath.Join(t.TempDir(), "demo.db")
	_, first := runDemo(t, "--db", db)
	if len(first.learned) != 2 {
		t.Fatalf("first run learned %v", first.learned)
	}
	text, second := runDemo(t, "--db", db)
	if len(second.lines) < 3 {
		t.Fatalf("second run output:\n%s", text)
	}
	start := second.lines[1]
	if want := "Starting with 2 constraints already learned: [block_stale_actions block_negative_predictions]"; start != want {
		t.Fatalf("second run line 2 = %q, want %q", start, want)
	}
	if second.before[0] < 2 {
		t.Fatal("episode 0 printed before the starting constraints")
	}
	for ep, r := range second.rows {
		for _, name := range []string{"block_stale_actions", "block_negative_predictions"} {
			found := false
			for _, c := range r.constraints {
				found = found || c == name
			}
			if !found {
				t.Errorf("second run, episode %d: %s not in force (%v)", ep, name, r.constraints)
			}
		}
	}
	for _, name := range second.learned {
		if name == "block_stale_actions" || name == "block_negative_predictions" {
			t.Errorf("the second run learned %s again", name)
		}
	}
	// The paper's rows still hold, and the store holds each constraint once.
	for ep, want := range paperRows {
		if got := second.rows[ep]; got.temp != want.temp || got.belief != want.belief || got.status != want.status {
			t.Errorf("second run, episode %d: %+v", ep, got)
		}
	}
	s, err := sqlitestore.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	learnedOnce(t, s)
}

// TestSecondPostgresRunStartsWithTheLearnedConstraints runs the demo twice on
// one PostgreSQL schema: the second run starts with what the first learned,
// and the store holds each learned constraint once.
func TestSecondPostgresRunStartsWithTheLearnedConstraints(t *testing.T) {
	dsn := pgtest.SchemaDSN(t)
	text, first := runDemo(t, "--store", "postgres", "--dsn", dsn)
	if !strings.Contains(first.lines[0], "store postgres (schema bk_test_") || strings.Contains(text, dsn) {
		t.Errorf("first line %q: want the store and its schema, never the DSN", first.lines[0])
	}
	if len(first.learned) != 2 {
		t.Fatalf("first run learned %v", first.learned)
	}
	_, second := runDemo(t, "--store", "postgres", "--dsn", dsn)
	if want := "Starting with 2 constraints already learned: [block_stale_actions block_negative_predictions]"; second.lines[1] != want {
		t.Fatalf("second run line 2 = %q, want %q", second.lines[1], want)
	}
	for ep, want := range paperRows {
		if got := second.rows[ep]; got.temp != want.temp || got.belief != want.belief || got.status != want.status {
			t.Errorf("second run, episode %d: %+v", ep, got)
		}
	}
	s, err := pgstore.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	learnedOnce(t, s)
}

// learnedOnce checks that st holds each persistent constraint once, the
// two the demo learns among them.
func learnedOnce(t *testing.T, st store.Store) {
	t.Helper()
	perName := map[string]int{}
	for r, err := range st.ListSlot(context.Background(), blackboard.Constraints, store.Filter{Scope: blackboard.ScopePersistent}) {
		if err != nil {
			t.Fatal(err)
		}
		perName[r.Kind]++
	}
	for name, n := range perName {
		if n != 1 {
			t.Errorf("%s stored %d times", name, n)
		}
	}
	if perName["block_stale_actions"] != 1 || perName["block_negative_predictions"] != 1 {
		t.Fatalf("persistent constraints in the store: %v", perName)
	}
}

func TestBadArguments(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "never.db")
	for _, args := range [][]string{
		{"--episodes", "0", "--db", db},
		{"--episodes", "-3", "--db", db},
		{"--episodes", "many", "--db", db},
		{"--seed", "seven", "--db", db},
		{"--colour", "red", "--db", db},
		{"--db", db, "extra"},
		{"--db"},
		{"--store", "mongo", "--db", db},
		{"--store", "sqlite"},
		{"--store", "postgres"},
		{"--store", "postgres", "--dsn", "postgres://127.0.0.1/bk", "--db", db},
		{"--store", "memory", "--db", db},
		{"--dsn", "postgres://127.0.0.1/bk", "--db", db},
		{"--db", "/nonexistent/dir/x.db"},
	} {
		var buf bytes.Buffer
		if err := run(context.Background(), args, &buf); !errors.Is(err, errUsage) {
			t.Errorf("run(%q) = %v, want a usage error", args, err)
		}
		if buf.Len() != 0 {
			t.Errorf("run(%q) wrote %q", args, buf.String())
		}
		if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("run(%q) created the database: %v", args, err)
		}
	}
}

func TestHelp(t *testing.T) {
	var buf bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, &buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"usage: multi_episode", "-episodes", "-seed", "-db", "-store", "-dsn"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var buf bytes.Buffer
	if err := run(ctx, nil, &buf); !errors.Is(err, context.Canceled) {
		t.Fatalf("run with a cancelled context: %v", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

func TestWriteErrorIsReported(t *testing.T) {
	if err := run(context.Background(), []string{"--episodes", "1"}, failingWriter{}); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("run to a failing writer: %v", err)
	}
}

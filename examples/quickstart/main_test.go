package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/internal/pgtest"
)

func TestRunPrintsTheWalkthroughs(t *testing.T) {
	var buf bytes.Buffer
	if err := run(context.Background(), []string{"--steps"}, &buf); err != nil {
		t.Fatal(err)
	}
	// Each section, line by line with runs of spaces collapsed.
	want := [][]string{{
		`§7.1 stale evidence`,
		`trace "stale" (namespace default): 6 records, 3 decisions, 2 refused; outcome: queue_for_review committed`,
		"t0 constraint.no_duplicate_refund committed constraints:stale:1",
		"t0 percept.charge committed (stale=true) percepts:stale:2",
		"t2 belief.refund_due proposed beliefs:stale:3",
		"t3 evidence validation: STALE_EVIDENCE -- belief rejected beliefs:stale:3",
		"t5 plan.action_plan proposed plans:stale:4",
		"t6 plan validation: PLAN_MISSING_BELIEF -- plan rejected plans:stale:4",
		"t8 action.queue_for_review proposed actions:stale:5",
		"t9 action.queue_for_review committed (reason=PLAN_MISSING_BELIEF) actions:stale:6",
	}, {
		`§7.2 conflicting evidence, arbitrated`,
		`trace "conflict-high" (namespace default): 9 records, 3 decisions, 0 refused; outcome: issue_refund committed`,
		"t0 constraint.no_duplicate_refund committed constraints:conflict-high:1",
		"t0 percept.charge committed (conflict=true, confidence=0.8) percepts:conflict-high:2",
		"t2 belief.refund_due proposed beliefs:conflict-high:3",
		"t3 evidence validation: CONFLICTING_EVIDENCE detected percepts:conflict-high:2",
		"t4 arbitration: confidence 0.8 >= threshold 0.7 -- resolved evidence:conflict-high:4",
		"t5 evidence artifact recorded evidence:conflict-high:4",
		"t6 belief.refund_due committed beliefs:conflict-high:5",
		"t7 plan.action_plan proposed -- feasible plans:conflict-high:7",
		"t8 action.issue_refund proposed actions:conflict-high:8",
		"t9 action.issue_refund committed actions:conflict-high:9",
	}, {
		`§7.2 conflicting evidence, unresolved`,
		`trace "conflict-low" (namespace default): 6 records, 3 decisions, 2 refused; outcome: queue_for_review committed`,
		"t0 constraint.no_duplicate_refund committed constraints:conflict-low:1",
		"t0 percept.charge committed (conflict=true, confidence=0.3) percepts:conflict-low:2",
		"t2 belief.refund_due proposed beliefs:conflict-low:3",
		"t3 evidence validation: UNRESOLVED_CONFLICT -- belief rejected beliefs:conflict-low:3",
		"t5 plan.action_plan proposed plans:conflict-low:4",
		"t6 plan validation: PLAN_MISSING_BELIEF -- plan rejected plans:conflict-low:4",
		"t8 action.queue_for_review proposed actions:conflict-low:5",
		"t9 action.queue_for_review committed (reason=PLAN_MISSING_BELIEF) actions:conflict-low:6",
	}}
	sections := strings.Split(strings.TrimSpace(buf.String()), "\n\n")
	if len(sections) != len(want) {
		t.Fatalf("%d sections, want %d:\n%s", len(sections), len(want), buf.String())
	}
	for i, sec := range sections {
		lines := strings.Split(sec, "\n")
		if len(lines) != len(want[i]) {
			t.Errorf("section %d has %d lines, want %d:\n%s", i, len(lines), len(want[i]), sec)
			continue
		}
		for j, l := range lines {
			if got := strings.Join(strings.Fields(l), " "); got != want[i][j] {
				t.Errorf("section %d line %d:\n got %q\nwant %q", i, j, got, want[i][j])
			}
		}
	}

	// A fixed clock makes the output identical on every run.
	var again bytes.Buffer
	if err := run(context.Background(), []string{"--steps"}, &again); err != nil || again.String() != buf.String() {
		t.Errorf("second run differs (err %v)", err)
	}

	// By default the same lines, without the paper's step numbers.
	var plain bytes.Buffer
	if err := run(context.Background(), nil, &plain); err != nil {
		t.Fatal(err)
	}
	stepLabel := regexp.MustCompile(`(?m)^  t\d   `)
	if stepLabel.MatchString(plain.String()) || plain.String() != stepLabel.ReplaceAllString(buf.String(), "  ") {
		t.Errorf("without --steps:\n%s", plain.String())
	}
}

// failAfter accepts n bytes, then fails every write.
type failAfter struct{ n int }

var errFull = errors.New("disk full")

func (w *failAfter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		return 0, errFull
	}
	w.n -= len(p)
	return len(p), nil
}

func TestRunReportsWriteErrors(t *testing.T) {
	for _, n := range []int{0, 100, 1000} {
		if err := run(context.Background(), nil, &failAfter{n: n}); !errors.Is(err, errFull) {
			t.Errorf("writer failing after %d bytes: run = %v", n, err)
		}
	}
}

// --store and --db mean what they mean for the bench and multi_episode:
// the walkthrough in a SQLite file prints what it prints in memory, a file
// that already holds it is refused with its name, and bad flags are usage
// errors before anything is opened.
func TestStoreFlags(t *testing.T) {
	ctx := context.Background()
	var mem bytes.Buffer
	if err := run(ctx, []string{"--store", "memory"}, &mem); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, args := range [][]string{{"--db", filepath.Join(dir, "a.db")}, {"--store", "sqlite", "--db", filepath.Join(dir, "b.db")}} {
		var buf bytes.Buffer
		if err := run(ctx, args, &buf); err != nil {
			t.Fatalf("run(%q): %v", args, err)
		}
		if buf.String() != mem.String() {
			t.Errorf("run(%q) printed\n%s\nwant\n%s", args, buf.String(), mem.String())
		}
	}
	db := filepath.Join(dir, "a.db")
	if err := run(ctx, []string{"--db", db}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), db) || !strings.Contains(err.Error(), "already holds") {
		t.Errorf("second run into %s: %v", db, err)
	}
	never := filepath.Join(dir, "never.db")
	for _, args := range [][]string{
		{"--store", "sqlite"}, {"--store", "memory", "--db", never}, {"--store", "postgres"}, {"--db", "/nonexistent/dir/x.db"},
		{"--seed", "7"}, {"extra"}, {"--store", "mysql"},
		{"--dsn", "postgres://127.0.0.1/bk"}, {"--store", "memory", "--dsn", "postgres://127.0.0.1/bk"},
		{"--store", "sqlite", "--db", never, "--dsn", "postgres://127.0.0.1/bk"},
		{"--store", "postgres", "--dsn", "postgres://127.0.0.1/bk", "--db", never},
	} {
		var buf bytes.Buffer
		if err := run(ctx, args, &buf); !errors.Is(err, errUsage) {
			t.Errorf("run(%q) = %v, want a usage error", args, err)
		}
		if buf.Len() != 0 {
			t.Errorf("run(%q) printed %q", args, buf.String())
		}
	}
	if _, err := os.Stat(never); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused run created the database: %v", err)
	}
	var help bytes.Buffer
	if err := run(ctx, []string{"-h"}, &help); !errors.Is(err, flag.ErrHelp) || !strings.Contains(help.String(), "-db") || !strings.Contains(help.String(), "-store") || !strings.Contains(help.String(), "-dsn") {
		t.Errorf("help: %v\n%s", err, help.String())
	}
}

// --store postgres --dsn DSN prints what the walkthrough prints in memory,
// and a second run into the same schema is refused, naming the schema and
// never the DSN.
func TestPostgresStore(t *testing.T) {
	dsn := pgtest.SchemaDSN(t)
	ctx := context.Background()
	var mem, buf bytes.Buffer
	if err := run(ctx, nil, &mem); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, []string{"--store", "postgres", "--dsn", dsn}, &buf); err != nil {
		t.Fatal(err)
	}
	if buf.String() != mem.String() {
		t.Errorf("postgres printed\n%s\nwant\n%s", buf.String(), mem.String())
	}
	err := run(ctx, []string{"--store", "postgres", "--dsn", dsn}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "already holds") || !strings.Contains(err.Error(), "schema bk_test_") || strings.Contains(err.Error(), dsn) {
		t.Errorf("second run into the same schema: %v", err)
	}
}

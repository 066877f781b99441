package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/bench/study"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/pgtest"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/pgstore"
)

// --store postgres --dsn DSN keeps the run in one PostgreSQL store, in the
// bench's namespace as with SQLite; the output names the schema, never the
// DSN, and a second run into the same schema succeeds beside the first.
func TestRunPostgresStore(t *testing.T) {
	dsn := pgtest.SchemaDSN(t)
	for range 2 {
		stdout, stderr, err := run(t, noEnv, "--seeds", "2", "--agents", "bk", "--out", "", "--store", "postgres", "--dsn", dsn)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stdout, "task success          1.000") || !strings.Contains(stdout, "Episodes stored in the database postgres (schema bk_test_") {
			t.Errorf("stdout:\n%s", stdout)
		}
		if strings.Contains(stdout+stderr, dsn) {
			t.Errorf("the DSN was printed:\n%s\n%s", stdout, stderr)
		}
	}
	ctx := context.Background()
	s, err := pgstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n := 0
	for r, err := range s.ListSlot(ctx, blackboard.Actions, store.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		if r.Namespace != study.Namespace {
			t.Fatalf("record %s in namespace %q, want %q", r.ID, r.Namespace, study.Namespace)
		}
		n++
	}
	if n == 0 {
		t.Error("no actions stored")
	}
}

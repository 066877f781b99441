package cli

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/blackboardkernel/bk/bench/study"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store/pgstore"
)

// pgDSN returns BK_PG_DSN with its search_path set to a new schema, dropped
// when t ends, so that the run's store (in the connection's current schema)
// starts empty; without BK_PG_DSN the test skips.
func pgDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("BK_PG_DSN")
	if dsn == "" {
		t.Skip("set BK_PG_DSN to run the PostgreSQL tests (make test-pg starts a throwaway server)")
	}
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		t.Skip("BK_PG_DSN is not a URL; this test adds a search_path to it")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	schema := fmt.Sprintf("bk_bench_%d", time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Error(err)
		}
	})
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// --store postgres --dsn DSN keeps the run in one PostgreSQL store, in the
// bench's namespace as with SQLite; the output names the schema, never the
// DSN, and a second run into the same schema succeeds beside the first.
func TestRunPostgresStore(t *testing.T) {
	dsn := pgDSN(t)
	for range 2 {
		stdout, stderr, err := run(t, noEnv, "--seeds", "2", "--agents", "bk", "--out", "", "--store", "postgres", "--dsn", dsn)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stdout, "task success          1.000") || !strings.Contains(stdout, "Episodes stored in the database postgres (schema bk_bench_") {
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
	for r, err := range s.ListSlot(ctx, kernel.Actions, kernel.Filter{}) {
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

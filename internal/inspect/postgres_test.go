package inspect_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/internal/inspect"
	"github.com/blackboardkernel/bk/internal/pgtest"
	"github.com/blackboardkernel/bk/store/pgstore"
)

// TestPostgres: on PostgreSQL (--dsn), bk reads what the application
// wrote, and bk approve lets the application's gate run the refund once.
// A schema holding no store is refused and left as it was: bk opens
// PostgreSQL read-only. Skipped without a server (see internal/pgtest).
func TestPostgres(t *testing.T) {
	dsn := pgtest.SchemaDSN(t)
	ctx := context.Background()
	s, err := pgstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var refunds atomic.Int32
	g := deskApp(t, s, &refunds)
	p := pendingRefund(t, g, "ticket-1")

	if out := mustBK(t, "--dsn", dsn, "traces"); !strings.Contains(out, "ticket-1") {
		t.Errorf("bk traces:\n%s", out)
	}
	var listed []inspect.PendingApproval
	if err := json.Unmarshal([]byte(mustBK(t, "--dsn", dsn, "approvals", "--json")), &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].ActionID != p.ActionID || listed[0].Digest != p.Digest {
		t.Fatalf("bk approvals %+v", listed)
	}
	if code, _, errOut := bk(t, "--dsn", dsn, "approve", p.ActionID, "--as", "human:bob", "--digest", "sha256:0"); code != inspect.ExitError || !strings.Contains(errOut, "digest does not match") {
		t.Errorf("a wrong digest: exit %d: %s", code, errOut)
	}
	mustBK(t, "--dsn", dsn, "approve", p.ActionID, "--as", "human:bob", "--digest", p.Digest)
	res, err := g.Execute(ctx, p.ActionID)
	if err != nil || res.Outcome != audit.OutcomeExecuted || refunds.Load() != 1 {
		t.Errorf("execute after bk approve: %+v %v, %d refunds", res, err, refunds.Load())
	}

	empty := pgtest.SchemaDSN(t)
	code, out, errOut := bk(t, "--dsn", empty, "traces")
	if code != inspect.ExitError || out != "" || !strings.Contains(errOut, "neither creates nor migrates") {
		t.Errorf("an empty schema: exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	var tables int
	if err := pgtest.Pool(t).QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = $1", schemaOf(t, empty)).Scan(&tables); err != nil || tables != 0 {
		t.Errorf("bk created %d tables in an empty schema (%v)", tables, err)
	}
}

// schemaOf returns the search_path a test DSN names.
func schemaOf(t *testing.T, dsn string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.RuntimeParams["search_path"]
}

package console_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/internal/inspect"
	bkserve "github.com/blackboardkernel/bk/internal/inspect/serve"
	"github.com/blackboardkernel/bk/internal/pgtest"
	"github.com/blackboardkernel/bk/store/pgstore"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

// syncBuffer is a buffer Main writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeCommand: `bk serve` refuses to start without exactly one
// identity (exit 2), fails in a program that gave Main no console
// (exit 1), and with a token file serves the inbox of a SQLite
// store on the loopback interface until its context ends (exit 0).
func TestServeCommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "desk.db")
	s, err := sqlitestore.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	d := newDeskOn(t, s, "A1")
	t.Cleanup(func() { s.Close() })
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte(aliceToken+" human:alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, args := range [][]string{{}, {"--identity-header", "X-User", "--token-file", tokens}} {
		var out, errOut bytes.Buffer
		code := inspect.Main(context.Background(), append([]string{"--db", db, "serve"}, args...), &out, &errOut, inspect.WithServe(bkserve.Run))
		if code != inspect.ExitUsage || !strings.Contains(errOut.String(), "exactly one of --identity-header") {
			t.Errorf("serve %q: exit %d\n%s", args, code, errOut.String())
		}
	}

	var out0, err0 bytes.Buffer
	if code := inspect.Main(context.Background(), []string{"--db", db, "serve", "--token-file", tokens}, &out0, &err0); code != inspect.ExitError ||
		!strings.Contains(err0.String(), "no approvals console") {
		t.Errorf("serve without WithServe: exit %d\n%s", code, err0.String())
	}

	base, stop := serve(t, "--db", db, "serve", "--addr", "127.0.0.1:0", "--token-file", tokens)
	req, _ := http.NewRequest("GET", base, nil)
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	if code, body, _ := do(t, req); code != http.StatusOK || !strings.Contains(body, d.action) {
		t.Errorf("inbox from bk serve: %d\n%s", code, body)
	}
	stop()
}

// serve runs bk with args, a serve command listening on a free port, and
// returns the console's address once it announced it, and a function
// that stops it and checks that it exited 0.
func serve(t *testing.T, args ...string) (base string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	exit := make(chan int, 1)
	go func() { exit <- inspect.Main(ctx, args, &out, &errOut, inspect.WithServe(bkserve.Run)) }()
	addr := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`)
	deadline := time.Now().Add(10 * time.Second)
	for addr.FindString(out.String()) == "" {
		if time.Now().After(deadline) {
			cancel()
			<-exit
			t.Fatalf("no address announced: %q %q", out.String(), errOut.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if code := <-exit; code != inspect.ExitOK {
			t.Errorf("bk serve exit %d: %s", code, errOut.String())
		}
	}
	t.Cleanup(stop)
	return addr.FindString(out.String()), stop
}

// TestServePostgres: `bk serve --dsn` over a PostgreSQL store lists the
// refund waiting there, and an approval given through its form is
// recorded as the person's and lets the application's gate pay the
// refund once. Skipped without a server (BK_PG_DSN; see internal/pgtest);
// CI runs it under .ci/with-postgres.
func TestServePostgres(t *testing.T) {
	dsn := pgtest.SchemaDSN(t)
	ctx := context.Background()
	s, err := pgstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	d := newDeskOn(t, s, "A1")
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte(aliceToken+" human:alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base, stop := serve(t, "--dsn", dsn, "serve", "--addr", "127.0.0.1:0", "--token-file", tokens)
	d.srv.URL = strings.TrimSuffix(base, "/") // the desk's requests go to bk serve

	code, body, _ := d.get(t, "/", aliceToken)
	if code != http.StatusOK || !strings.Contains(body, d.action) || !strings.Contains(body, "issue_refund") || !strings.Contains(body, "percept.order") {
		t.Fatalf("inbox from bk serve --dsn: %d\n%s", code, body)
	}
	if code, body := d.post(t, d.form(t, aliceToken, "approve", "checked on PostgreSQL"), aliceToken); code != http.StatusOK || !strings.Contains(body, "approved") {
		t.Fatalf("approve through bk serve --dsn: %d\n%s", code, body)
	}
	stop()
	var a audit.Approval
	for r, err := range d.g.Kernel().Reader().Trace(ctx, "ticket-1") {
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := audit.ApprovalOf(r); ok && got.ActionID == d.action {
			a = got
		}
	}
	if a.Approver != "human:alice" || a.Decision != audit.Approved || a.Note != "checked on PostgreSQL" {
		t.Errorf("approval recorded %+v", a)
	}
	if res, err := d.g.Execute(ctx, d.action); err != nil || res.Outcome != audit.OutcomeExecuted || d.refunds.Load() != 1 {
		t.Errorf("execute after the approval: %+v %v, %d refunds", res, err, d.refunds.Load())
	}
}

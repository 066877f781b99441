package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
)

// EnvDSN names the environment variable that holds the test server's DSN.
const EnvDSN = "BK_PG_DSN"

// SkipMessage is what a PostgreSQL test says when it skips.
const SkipMessage = "set " + EnvDSN + " to run the PostgreSQL tests (make test-pg starts a throwaway server)"

// DSN returns the test server's DSN, or skips tb when there is none.
func DSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn == "" {
		tb.Skip(SkipMessage)
	}
	return dsn
}

var shared struct {
	once sync.Once
	pool *pgxpool.Pool
	err  error
}

// Pool returns a pool on the test server shared by every test of the
// process, with room for the conformance suite's concurrent cases.
func Pool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	dsn := DSN(tb)
	shared.once.Do(func() {
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			shared.err = err
			return
		}
		cfg.MaxConns = 16
		cancelOnServer(cfg)
		shared.pool, shared.err = pgxpool.NewWithConfig(context.Background(), cfg)
	})
	if shared.err != nil {
		tb.Fatalf("pool on %s: %v", EnvDSN, shared.err)
	}
	return shared.pool
}

// PoolWith returns a pool of its own on the test server, configured by
// configure, and closes it when tb ends.
func PoolWith(tb testing.TB, configure func(*pgxpool.Config)) *pgxpool.Pool {
	tb.Helper()
	cfg, err := pgxpool.ParseConfig(DSN(tb))
	if err != nil {
		tb.Fatalf("parsing %s: %v", EnvDSN, err)
	}
	cancelOnServer(cfg)
	configure(cfg)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		tb.Fatalf("pool on %s: %v", EnvDSN, err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

// cancelOnServer does what pgstore.ConfigurePool does (this package cannot
// import pgstore, whose own tests import it): a context that ends sends
// the server a cancel request.
func cancelOnServer(cfg *pgxpool.Config) {
	cfg.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: time.Second}
	}
}

// Schema returns the name of a schema no other test uses, and drops it with
// everything in it when tb ends. The schema itself is not created: the
// store creates it (see pgstore.WithSchema).
func Schema(tb testing.TB) string {
	tb.Helper()
	pool := Pool(tb)
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := "bk_test_" + hex.EncodeToString(b[:])
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			tb.Errorf("dropping test schema %s: %v", name, err)
		}
	})
	return name
}

// SchemaDSN returns the test server's DSN with its search_path set to a new,
// empty schema that is dropped when tb ends, for programs that open a store
// in the connection's current schema (--store postgres --dsn DSN). It skips
// tb without a server, or when the DSN is not a URL it can add to.
func SchemaDSN(tb testing.TB) string {
	tb.Helper()
	u, err := url.Parse(DSN(tb))
	if err != nil || u.Scheme == "" {
		tb.Skip(EnvDSN + " is not a URL; this test adds a search_path to it")
	}
	name := Schema(tb)
	if _, err := Pool(tb).Exec(context.Background(), "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize()); err != nil {
		tb.Fatalf("creating test schema %s: %v", name, err)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String()
}

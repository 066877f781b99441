package pgtest

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// RoundTrips counts the exchanges a pool's connections have with the
// server: every Query, QueryRow and Exec (pgx.QueryTracer), every batch
// sent as one pipeline (pgx.BatchTracer), every Prepare and every new
// connection. It keeps the SQL of each, to show what a count is made of.
type RoundTrips struct {
	mu  sync.Mutex
	sql []string
}

func (r *RoundTrips) add(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sql = append(r.sql, what)
}

// Take returns what was counted since the last take, and forgets it.
func (r *RoundTrips) Take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.sql
	r.sql = nil
	return out
}

func (r *RoundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.add(d.SQL)
	return ctx
}

func (r *RoundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *RoundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	r.add("batch of " + strconv.Itoa(d.Batch.Len()))
	return ctx
}

func (r *RoundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *RoundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

func (r *RoundTrips) TracePrepareStart(ctx context.Context, _ *pgx.Conn, d pgx.TracePrepareStartData) context.Context {
	r.add("prepare " + d.SQL)
	return ctx
}

func (r *RoundTrips) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

func (r *RoundTrips) TraceConnectStart(ctx context.Context, _ pgx.TraceConnectStartData) context.Context {
	r.add("connect")
	return ctx
}

func (r *RoundTrips) TraceConnectEnd(context.Context, pgx.TraceConnectEndData) {}

// CountRoundTrips runs run on a trace named "warm-"+name, which warms
// the connection and its statement cache, then on "counted-"+name, and
// fails tb if that second run took more than ceiling round trips on
// counter (target is the goal, named in the failure). run uses a
// store on a pool made with [CountingPool] and counter.
func CountRoundTrips(tb testing.TB, counter *RoundTrips, name string, ceiling, target int, run func(trace string) error) {
	tb.Helper()
	if err := run("warm-" + name); err != nil {
		tb.Fatalf("%s (warming up): %v", name, err)
	}
	counter.Take()
	if err := run("counted-" + name); err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	trips := counter.Take()
	tb.Logf("%s: %d round trips", name, len(trips))
	for i, q := range trips {
		if _, from, ok := strings.Cut(q, " FROM "); ok {
			q = "SELECT … FROM " + from
		}
		tb.Logf("  %2d %.120s", i+1, q)
	}
	if len(trips) > ceiling {
		tb.Errorf("%s: %d round trips to PostgreSQL, ceiling %d (issue 25's target: %d)", name, len(trips), ceiling, target)
	}
}

// CountingPool returns a pool of one connection whose round trips counter
// counts, or skips tb without a server.
func CountingPool(tb testing.TB, counter *RoundTrips) *pgxpool.Pool {
	tb.Helper()
	return PoolWith(tb, func(cfg *pgxpool.Config) {
		cfg.MaxConns, cfg.MinConns = 1, 0
		cfg.ConnConfig.Tracer = counter
	})
}

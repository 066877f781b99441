package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/store"
)

// Store is a [store.Store] on PostgreSQL and a [store.StateStore]: it
// keeps each trace's counters and decision state in the transaction of
// every write, and enforces once-keys across every store and process
// sharing the database. It is safe for concurrent use; see the package
// documentation for how it orders writers.
type Store struct {
	pool     *pgxpool.Pool
	ownsPool bool
	schema   string
	retries  int
	q        queries

	mu     sync.RWMutex // held for reading by every call; Close takes it for writing
	closed bool
}

var (
	_ store.StateStore  = (*Store)(nil)
	_ store.TraceLister = (*Store)(nil)
)

// Option configures [Open] and [New].
type Option func(*config)

type config struct {
	schema  string
	retries int
}

// defaultRetries is how many times a transaction the server aborted with a
// serialization failure or a deadlock is run again when [WithRetries] is
// not given.
const defaultRetries = 8

// WithSchema keeps the store's tables in the named schema, which the store
// creates if it does not exist (that needs the CREATE privilege on the
// database). Without it the tables live in the connection's current schema
// (the first schema of search_path that exists, normally public). A name
// must be valid UTF-8 without NUL, and at most 63 bytes (PostgreSQL would
// silently cut a longer one).
func WithSchema(name string) Option { return func(c *config) { c.schema = name } }

// WithRetries sets how many times a call is run again after the server
// aborted its transaction with a serialization failure (SQLSTATE 40001) or
// a deadlock (40P01), or after it failed before reaching the server
// (default 8; 0 turns retries off). Nothing of an aborted
// transaction landed, so running it again is safe. It must not be
// negative.
func WithRetries(n int) Option { return func(c *config) { c.retries = n } }

// pageSize is how many rows a listing reads per query.
const pageSize = 256

// maxIdentifier is the longest identifier PostgreSQL keeps whole
// (NAMEDATALEN - 1).
const maxIdentifier = 63

func newConfig(opts []Option) (config, error) {
	cfg := config{retries: defaultRetries}
	for _, o := range opts {
		if o == nil {
			return cfg, fmt.Errorf("pgstore: %w: nil option", blackboard.ErrInvalidInput)
		}
		o(&cfg)
	}
	switch {
	case cfg.retries < 0:
		return cfg, fmt.Errorf("pgstore: %w: negative retries %d", blackboard.ErrInvalidInput, cfg.retries)
	case len(cfg.schema) > maxIdentifier || !utf8.ValidString(cfg.schema) || hasNUL(cfg.schema):
		return cfg, fmt.Errorf("pgstore: %w: schema name %q: at most %d bytes of UTF-8 without NUL", blackboard.ErrInvalidInput, cfg.schema, maxIdentifier)
	}
	return cfg, nil
}

// Open connects to the database the DSN names and returns a store that owns
// its connection pool: [Store.Close] closes it. The DSN is a URL
// (postgres://user:password@host:port/database?sslmode=disable) or
// keyword/value pairs (host=... dbname=...), as libpq reads them, with the
// pool settings of pgxpool (pool_max_conns=16, say); PG* environment
// variables fill in what it leaves out.
//
// Open checks that the server answers and creates or migrates the schema
// (see the package documentation). It returns an error wrapping
// [blackboard.ErrInvalidInput] for a DSN it cannot parse or a bad option,
// [ErrUnreachable] when no connection can be made, [ErrSchemaTooNew] for a
// schema written by a newer version of this package, and ctx's error when
// ctx ends first.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w: %v", blackboard.ErrInvalidInput, err)
	}
	ConfigurePool(pc)
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, wrap("open", err, false)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, wrap("open", err, false)
	}
	s, err := newStore(ctx, pool, cfg)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.ownsPool = true
	return s, nil
}

// ConfigurePool sets on cfg what [Open] sets on the pools it opens: when a
// call's context ends while the server runs its statement, the call asks
// the server to cancel it (a cancel request) and returns once the server
// has answered, keeping the connection. A batch cancelled that way has
// rolled back when the call returns: its error wraps the context's error
// without saying the write may have landed. (pgx's default drops the
// connection and sends the cancel request in the background, so the call
// returns before the server has stopped the batch.) If the server does not
// answer within a second the connection is closed. Call it before
// pgxpool.NewWithConfig on a pool you pass to [New].
func ConfigurePool(cfg *pgxpool.Config) {
	cfg.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: time.Second}
	}
}

// New returns a store on a pool the caller opened. The caller keeps
// ownership: [Store.Close] does not close the pool, and several stores (in
// different schemas, say) may share one pool. Connection settings are the
// pool's; see [ConfigurePool] for the one the store relies on.
//
// New creates or migrates the schema. It returns an error wrapping
// [blackboard.ErrInvalidInput] for a nil pool or a bad option,
// [ErrUnreachable] when the pool cannot reach the server,
// [ErrSchemaTooNew] for a schema written by a newer version of this
// package, and ctx's error when ctx ends first.
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Store, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if pool == nil {
		return nil, fmt.Errorf("pgstore: %w: nil pool", blackboard.ErrInvalidInput)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return newStore(ctx, pool, cfg)
}

func newStore(ctx context.Context, pool *pgxpool.Pool, cfg config) (*Store, error) {
	schema := cfg.schema
	if schema == "" {
		var current *string
		if err := pool.QueryRow(ctx, "SELECT current_schema()").Scan(&current); err != nil {
			return nil, wrap("open: current schema", err, false)
		}
		if current == nil {
			return nil, fmt.Errorf("pgstore: %w: search_path names no schema that exists; create one or use WithSchema", blackboard.ErrInvalidInput)
		}
		schema = *current
	}
	if err := migrate(ctx, pool, schema, cfg.schema != ""); err != nil {
		return nil, err
	}
	return &Store{pool: pool, schema: schema, retries: cfg.retries, q: newQueries(schema)}, nil
}

// Schema returns the name of the schema that holds the store's tables.
func (s *Store) Schema() string { return s.schema }

var errClosed = fmt.Errorf("pgstore: %w", blackboard.ErrClosed)

// active is how the ACTIVE status is stored.
var active = string(blackboard.StatusActive)

// enter checks ctx and that the store is open, and holds the store open
// until the returned function is called.
func (s *Store) enter(ctx context.Context) (leave func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return nil, errClosed
	}
	return s.mu.RUnlock, nil
}

// retry runs f until it succeeds, fails for good, or has been retried
// s.retries times, waiting a little longer after each failure, and returns
// its last error in the form a method returns (what names the call). f is
// run again when the server aborted its transaction (a serialization
// failure or a deadlock) or the connection failed or was lost, which f
// only reports before anything could have committed; f returns any other
// error it wants returned as is inside a [final].
func (s *Store) retry(ctx context.Context, what string, f func() error) error {
	for attempt := 0; ; attempt++ {
		err := f()
		if fe, ok := err.(final); ok {
			return fe.err
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil && !isContext(err) {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		if !(retryable(err) || unreachable(err)) || attempt >= s.retries || ctx.Err() != nil {
			return wrap(what, err, false)
		}
		// Up to 1, 2, 4 ... 64 ms, jittered so that the transactions that
		// collided do not collide again.
		d := time.Duration(rand.Int64N(int64(time.Millisecond)<<min(attempt, 6))) + 100*time.Microsecond
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return wrap(what, err, false)
		case <-t.C:
		}
	}
}

// final is an error retry returns at once, as it is.
type final struct{ err error }

func (f final) Error() string { return f.err.Error() }

// Get implements [store.Store] through the unique index on the id. It
// returns an error wrapping [blackboard.ErrNotFound] for an unknown id.
func (s *Store) Get(ctx context.Context, id string) (blackboard.Record, error) {
	return s.one(ctx, "get", s.q.get, "no record "+id, id)
}

// FindActive implements [store.Store] through the trace index, walking
// the trace from its latest record back, so its cost grows with the length
// of the trace, not with the store. It returns an error wrapping
// [blackboard.ErrNotFound] when no record of that kind is ACTIVE in that slot
// of the trace.
func (s *Store) FindActive(ctx context.Context, namespace, traceID string, slot blackboard.Slot, kind string) (blackboard.Record, error) {
	ns := cmp.Or(namespace, blackboard.DefaultNamespace)
	return s.one(ctx, "find active", s.q.find, fmt.Sprintf("no active %s %q in trace %q of namespace %q", slot, kind, traceID, ns),
		traceID, ns, string(slot), kind, active)
}

// one runs a query for at most one record; missing describes no result.
func (s *Store) one(ctx context.Context, what, query, missing string, args ...any) (blackboard.Record, error) {
	leave, err := s.enter(ctx)
	if err != nil {
		return blackboard.Record{}, err
	}
	defer leave()
	notFound := fmt.Errorf("pgstore: %w: %s", blackboard.ErrNotFound, missing)
	for _, a := range args {
		if str, ok := a.(string); ok && !storable(str) {
			return blackboard.Record{}, notFound
		}
	}
	var recs []blackboard.Record
	err = s.retry(ctx, what, func() error {
		var err error
		recs, _, err = s.query(ctx, query, args)
		return err
	})
	switch {
	case err != nil:
		return blackboard.Record{}, err
	case len(recs) == 0:
		return blackboard.Record{}, notFound
	}
	return recs[0], nil
}

// query runs a query for records and returns them with the cursor of the
// last (its position in the trace when byPos, else its seq).
func (s *Store) query(ctx context.Context, query string, args []any) (recs []blackboard.Record, cursors [2]int64, err error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, cursors, err
	}
	defer rows.Close()
	for rows.Next() {
		seq, pos, r, err := scan(rows)
		if err != nil {
			return nil, cursors, err
		}
		recs, cursors = append(recs, r), [2]int64{seq, pos}
	}
	return recs, cursors, rows.Err()
}

// ReadState implements [store.StateStore] with one query, two primary-key
// lookups: the trace's counter row (its record count, namespace, change
// counter and the encoding of the last state a batch stored, in Data, nil
// when none) and the change counter of namespace's persistent constraints
// (Shared, from 0), as of the last committed batch. An unknown trace is
// the zero [store.TraceState] but for Shared.
func (s *Store) ReadState(ctx context.Context, namespace, traceID string) (store.TraceState, error) {
	leave, err := s.enter(ctx)
	if err != nil {
		return store.TraceState{}, err
	}
	defer leave()
	// A string the store cannot hold names no trace or namespace: '' is
	// neither (a record needs a trace id, and an empty namespace is kept
	// as the default one).
	ns := cmp.Or(namespace, blackboard.DefaultNamespace)
	if !storable(ns) {
		ns = ""
	}
	if !storable(traceID) {
		traceID = ""
	}
	if ns == "" && traceID == "" {
		return store.TraceState{}, nil
	}
	var st store.TraceState
	var n, version, stateVersion, shared int64
	err = s.retry(ctx, "read state", func() error {
		return s.pool.QueryRow(ctx, s.q.readState, traceID, ns).Scan(&n, &st.Namespace, &version, &stateVersion, &st.Data, &shared)
	})
	if err != nil {
		return store.TraceState{}, err
	}
	st.Len, st.Version, st.StateVersion, st.Shared = int(n), uint64(version), uint64(stateVersion), uint64(shared)
	return st, nil
}

// ListTraces implements [store.TraceLister] with one grouped pass over
// the records (an inspector's query, never the kernel's hot path). It reads
// the whole listing before it yields, so the loop body may call back into
// the store.
func (s *Store) ListTraces(ctx context.Context, namespace string) iter.Seq2[store.TraceSummary, error] {
	return func(yield func(store.TraceSummary, error) bool) {
		leave, err := s.enter(ctx)
		if err != nil {
			yield(store.TraceSummary{}, err)
			return
		}
		var out []store.TraceSummary
		err = s.retry(ctx, "list traces", func() error {
			out = out[:0]
			rows, err := s.pool.Query(ctx, s.q.traces, namespace)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var t store.TraceSummary
				var n int64
				if err := rows.Scan(&t.TraceID, &t.Namespace, &n, &t.FirstMS, &t.LastMS); err != nil {
					return err
				}
				t.Records = int(n)
				out = append(out, t)
			}
			return rows.Err()
		})
		leave()
		if err != nil {
			yield(store.TraceSummary{}, err)
			return
		}
		for _, t := range out {
			if !yield(t, nil) {
				return
			}
		}
	}
}

// ClaimedBy implements [store.Store] through the primary key of the
// once-keys table. It returns an error wrapping [blackboard.ErrNotFound] for a
// key no batch has claimed in namespace (empty: the default namespace).
func (s *Store) ClaimedBy(ctx context.Context, namespace, key string) (string, error) {
	leave, err := s.enter(ctx)
	if err != nil {
		return "", err
	}
	defer leave()
	ns := cmp.Or(namespace, blackboard.DefaultNamespace)
	notFound := fmt.Errorf("pgstore: %w: once-key %q is not claimed in namespace %q", blackboard.ErrNotFound, key, ns)
	if !storable(key) || !storable(ns) {
		return "", notFound
	}
	var id string
	err = s.retry(ctx, fmt.Sprintf("once-key %q", key), func() error { return s.pool.QueryRow(ctx, s.q.claimedBy, ns, key).Scan(&id) })
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", notFound
	case err != nil:
		return "", err
	}
	return id, nil
}

// ListTrace implements [store.Store] through the trace index, in the
// order the trace's records were appended. The listing reads pages of rows
// and holds no connection while it yields, so the loop body may call back
// into the store.
func (s *Store) ListTrace(ctx context.Context, namespace, traceID string) iter.Seq2[blackboard.Record, error] {
	ns := cmp.Or(namespace, blackboard.DefaultNamespace)
	if !storable(traceID) || !storable(ns) {
		return s.list(ctx, "", true)
	}
	return s.list(ctx, s.q.trace, true, traceID, ns)
}

// ListSlot implements [store.Store]. A listing of persistent records, in
// one namespace or in all (the kernel reads its namespace's active
// persistent constraints on every gated decision), is answered from an
// index of persistent records only; other filters read the slot's records
// in append order through the slot index, so they cost time in proportion
// to the slot's size. Records appended by transactions that commit while
// the listing runs may or may not be listed. Like [Store.ListTrace] it
// holds no connection while it yields. An unknown slot, status or scope
// yields an error wrapping [blackboard.ErrInvalidInput].
func (s *Store) ListSlot(ctx context.Context, slot blackboard.Slot, f store.Filter) iter.Seq2[blackboard.Record, error] {
	if err := store.CheckFilter(slot, f); err != nil {
		err = fmt.Errorf("pgstore: %w", err)
		return func(yield func(blackboard.Record, error) bool) { yield(blackboard.Record{}, err) }
	}
	status, scope := string(f.Status), string(f.Scope)
	switch {
	case !storable(f.Namespace):
		return s.list(ctx, "", false)
	case f.Scope == blackboard.ScopePersistent && f.Namespace != "":
		return s.list(ctx, s.q.slotPersistentNS, false, string(slot), f.Namespace, status)
	case f.Scope == blackboard.ScopePersistent:
		return s.list(ctx, s.q.slotPersistent, false, string(slot), status)
	}
	return s.list(ctx, s.q.slotAny, false, string(slot), status, scope, f.Namespace)
}

// list streams the rows of a paged query: args are followed by the cursor
// to start after (a position in the trace when byPos, else a seq) and the
// page size. An empty query lists nothing (after checking ctx and that the
// store is open).
func (s *Store) list(ctx context.Context, query string, byPos bool, args ...any) iter.Seq2[blackboard.Record, error] {
	return func(yield func(blackboard.Record, error) bool) {
		var after int64
		for {
			recs, last, err := s.page(ctx, query, append(args[:len(args):len(args)], after, pageSize))
			if err != nil {
				yield(blackboard.Record{}, err)
				return
			}
			for _, r := range recs {
				if !yield(r, nil) {
					return
				}
			}
			if len(recs) < pageSize {
				return
			}
			after = last[0]
			if byPos {
				after = last[1]
			}
		}
	}
}

// page reads one page of a listing into memory and releases the connection.
func (s *Store) page(ctx context.Context, query string, args []any) (recs []blackboard.Record, last [2]int64, err error) {
	leave, err := s.enter(ctx)
	if err != nil {
		return nil, last, err
	}
	defer leave()
	if query == "" {
		return nil, last, nil
	}
	err = s.retry(ctx, "list", func() error {
		var err error
		recs, last, err = s.query(ctx, query, args)
		return err
	})
	return recs, last, err
}

// Close implements [store.Store]. It waits for calls in progress, then
// closes the pool if [Open] opened it. A second Close returns an error
// wrapping [blackboard.ErrClosed].
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	s.closed = true
	if s.ownsPool {
		s.pool.Close()
	}
	return nil
}

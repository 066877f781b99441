package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
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

// DefaultRetries is how many times a transaction the server aborted with a
// serialization failure or a deadlock is run again when [WithRetries] is
// not given.
const DefaultRetries = 8

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
// (default [DefaultRetries]; 0 turns retries off). Nothing of an aborted
// transaction landed, so running it again is safe. It must not be
// negative.
func WithRetries(n int) Option { return func(c *config) { c.retries = n } }

// pageSize is how many rows a listing reads per query.
const pageSize = 256

// maxIdentifier is the longest identifier PostgreSQL keeps whole
// (NAMEDATALEN - 1).
const maxIdentifier = 63

func newConfig(opts []Option) (config, error) {
	cfg := config{retries: DefaultRetries}
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

// queries are the store's statements, with the schema's table names.
type queries struct {
	get, find, trace, count, claimedBy                  string
	slotAny, slotPersistent, slotPersistentNS           string
	lockTraces, lockTracesIf, invalidate                string
	countInvalidated, checkVersion, setState, readState string
	checkShared                                         string
	insert, claim, traces, share                        string
}

func newQueries(schema string) queries {
	records := pgx.Identifier{schema, "bk_records"}.Sanitize()
	traces := pgx.Identifier{schema, "bk_traces"}.Sanitize()
	keys := pgx.Identifier{schema, "bk_once_keys"}.Sanitize()
	namespaces := pgx.Identifier{schema, "bk_namespaces"}.Sanitize()
	require := pgx.Identifier{schema, "bk_require"}.Sanitize()
	// A trace is its namespace and its id: $1 holds the trace ids, $3
	// their namespaces. A trace the batch appends to counts one change
	// (version).
	upsert := "INSERT INTO " + traces + " AS t (trace_id, n, namespace, version)" +
		" SELECT u.trace_id, u.n, u.ns, (u.n > 0)::int FROM unnest($1::text[], $2::bigint[], $3::text[]) AS u(trace_id, n, ns)" +
		" ON CONFLICT (namespace, trace_id) DO UPDATE SET n = t.n + excluded.n, version = t.version + excluded.version" +
		" RETURNING t.trace_id, t.n, t.namespace"
	sel := "SELECT " + columns + " FROM " + records + " "
	return queries{
		get:   sel + "WHERE id = $1",
		find:  sel + "WHERE trace_id = $1 AND namespace = $2 AND slot = $3 AND kind = $4 AND status = $5 ORDER BY pos DESC LIMIT 1",
		trace: sel + "WHERE trace_id = $1 AND namespace = $2 AND pos > $3 ORDER BY pos LIMIT $4",
		count: "SELECT n FROM " + traces + " WHERE trace_id = $1 AND namespace = $2",
		// A zero filter field is passed as '' and matches everything.
		slotAny: sel + "WHERE slot = $1 AND ($2 = '' OR status = $2) AND ($3 = '' OR scope = $3) AND ($4 = '' OR namespace = $4)" +
			" AND seq > $5 ORDER BY seq LIMIT $6",
		// The scope is a literal so that every plan, generic ones included,
		// can use the partial indexes, whose condition it must match.
		slotPersistent: sel + "WHERE slot = $1 AND scope = 'persistent' AND ($2 = '' OR status = $2)" +
			" AND seq > $3 ORDER BY seq LIMIT $4",
		slotPersistentNS: sel + "WHERE slot = $1 AND namespace = $2 AND scope = 'persistent' AND ($3 = '' OR status = $3)" +
			" AND seq > $4 ORDER BY seq LIMIT $5",
		claimedBy: "SELECT record_id FROM " + keys + " WHERE namespace = $1 AND key = $2",
		// Creates the counters of new traces and adds each trace's appends
		// to its counter, locking the rows in the order given (sorted, so
		// that two batches never wait for each other in opposite orders).
		// ON CONFLICT DO UPDATE works on the latest committed row even
		// under READ COMMITTED, so the count is exact. lockTracesIf then
		// checks the batch's condition: $4 is the trace, of namespace $7, $5
		// what the batch appends to it, $6 the length its author read.
		lockTraces: "WITH t AS (" + upsert + ") SELECT count(*) FROM t",
		lockTracesIf: "WITH t AS (" + upsert + ")," +
			" c AS (SELECT coalesce((SELECT n FROM t WHERE trace_id = $4 AND namespace = $7), 0) - $5 AS had)" +
			" SELECT " + require + "(had = $6, '" + codeConflict + "'," +
			" format('trace %L of namespace %L holds %s records, not %s', $4::text, $7::text, had, $6::bigint)) FROM c",
		// A status change that changes no row fails the batch: not found,
		// or not active (then or since).
		invalidate: "WITH u AS (UPDATE " + records + " SET status = $1, reason = $2 WHERE id = $3 AND status = $4 RETURNING id)," +
			" c AS (SELECT (SELECT status FROM " + records + " WHERE id = $3) AS status)" +
			" SELECT " + require + "(EXISTS (SELECT 1 FROM u)," +
			" CASE WHEN c.status IS NULL THEN '" + codeNotFound + "' ELSE '" + codeNotActive + "' END," +
			" CASE WHEN c.status IS NULL THEN $3 ELSE $3 || ' is ' || c.status END) FROM c",
		// After the batch's status changes ($1, their ids): one change for
		// each trace they touched that the batch does not append to ($2
		// and $3, the ids and namespaces of those whose change the
		// counters' upsert counted). The traces are found first, so that
		// the counters are reached through their primary key.
		countInvalidated: "UPDATE " + traces + " t SET version = t.version + 1" +
			" FROM (SELECT DISTINCT r.namespace, r.trace_id FROM " + records + " r WHERE r.id = ANY ($1::text[])) AS x" +
			" WHERE t.namespace = x.namespace AND t.trace_id = x.trace_id" +
			" AND NOT EXISTS (SELECT 1 FROM unnest($2::text[], $3::text[]) AS a(trace_id, ns) WHERE a.trace_id = x.trace_id AND a.ns = x.namespace)",
		// Last in the batch: the state is stored with the version the
		// batch left. A trace that holds no record (a counter the batch's
		// condition created) keeps no state.
		setState: "UPDATE " + traces + " SET state = $2, state_version = version WHERE trace_id = $1 AND namespace = $3 AND n > 0",
		// A state is derived from the trace at one version ($2): it is
		// refused if any other change reached the trace since (the batch
		// itself counted one).
		// $1 is of namespace $5; $3 and $6 are the ids and namespaces of
		// the traces the batch appends to, $4 the ids whose status it
		// changes: whether the batch counted a change of $1.
		checkVersion: "WITH b AS (SELECT CASE WHEN EXISTS (SELECT 1 FROM unnest($3::text[], $6::text[]) AS a(trace_id, ns) WHERE a.trace_id = $1 AND a.ns = $5)" +
			" OR EXISTS (SELECT 1 FROM " + records + " r WHERE r.id = ANY ($4::text[]) AND r.trace_id = $1 AND r.namespace = $5) THEN 1 ELSE 0 END AS own)" +
			" SELECT " + require + "(version = $2::bigint + b.own, '" + codeConflict + "'," +
			" format('trace %L is at version %s, not %s', $1::text, version - b.own, $2::bigint)) FROM " + traces + ", b WHERE trace_id = $1 AND namespace = $5 AND n > 0",
		// The batch's condition on the persistent constraints of namespace
		// $1: their counter is still $2. The share lock holds off a
		// concurrent change of the counter until this batch commits.
		checkShared: "WITH c AS (SELECT shared FROM " + namespaces + " WHERE namespace = $1 FOR SHARE)" +
			" SELECT " + require + "(coalesce((SELECT shared FROM c), 0) = $2::bigint, '" + codeConflict + "'," +
			" format('the persistent constraints of namespace %L changed (%s, not %s)', $1::text, coalesce((SELECT shared FROM c), 0), $2::bigint))",
		// One row whether or not the trace exists (an unknown trace reads
		// as zeros and a NULL state), with the counter of namespace $2 (0
		// without a row).
		readState: "SELECT coalesce(t.n, 0), CASE WHEN t.n > 0 THEN t.namespace ELSE '' END, coalesce(t.version, 0), coalesce(t.state_version, 0), t.state," +
			" coalesce((SELECT shared FROM " + namespaces + " WHERE namespace = $2), 0)" +
			" FROM (VALUES (1)) AS one LEFT JOIN " + traces + " t ON t.trace_id = $1 AND t.namespace = $2",
		// One change for each namespace whose persistent constraints the
		// batch appends to ($1, known before the batch is sent) or changes
		// the status of (among the ids $2, found after the status changes),
		// once however many of them the batch touches. The rows are locked
		// in sorted order, so that two batches never wait for each other in
		// opposite orders.
		// The records are found by id, and their slot and scope tested in
		// a CASE: as a condition, they would match the partial index of
		// persistent records, which the server may then read whole.
		share: "INSERT INTO " + namespaces + " AS c (namespace, shared)" +
			" SELECT ns, 1 FROM (SELECT unnest($1::text[]) UNION SELECT CASE WHEN r.slot = '" + blackboard.Constraints.String() +
			"' AND r.scope = '" + blackboard.ScopePersistent.String() + "' THEN r.namespace END FROM " + records + " r" +
			" WHERE r.id = ANY ($2::text[])) AS x(ns) WHERE ns IS NOT NULL" +
			" ORDER BY ns ON CONFLICT (namespace) DO UPDATE SET shared = c.shared + 1",
		// The position is the trace's counter, already advanced past the
		// batch's appends, less the appends to the trace that follow.
		insert: "INSERT INTO " + records + " (id, trace_id, pos, slot, mode, kind, payload, role, writer, ts_ms," +
			" input_refs, confidence, ttl_ms, evidence_refs, status, reason, scope, namespace, span) VALUES" +
			" ($1, $2, (SELECT n FROM " + traces + " WHERE trace_id = $2 AND namespace = $18) - $3, $4, $5, $6, $7, $8, $9, $10," +
			" $11, $12, $13, $14, $15, $16, $17, $18, $19)",
		claim: "INSERT INTO " + keys + " (namespace, key, record_id) VALUES ($1, $2, $3)",
		// The inspector's listing: a pass over the records, grouped by
		// trace (a namespace and an id), in the order of each trace's first
		// append.
		traces: "SELECT trace_id, namespace, count(*), min(ts_ms), max(ts_ms) FROM " + records +
			" WHERE ($1 = '' OR namespace = $1) GROUP BY trace_id, namespace ORDER BY min(seq)",
	}
}

var errClosed = fmt.Errorf("pgstore: %w", blackboard.ErrClosed)

// active is how the ACTIVE status is stored.
var active = blackboard.StatusActive.String()

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

// traceKey names a trace: its namespace (as stored) and its id.
type traceKey struct{ namespace, trace string }

// plan is a checked batch, ready to run.
type plan struct {
	b        store.Batch
	rows     []row
	traces   []string // the ids of the traces to lock, sorted by namespace and id
	deltas   []int64  // how many records the batch appends to each
	nss      []string // the namespace of each
	appended []string // the ids of the traces the batch appends to
	appNSs   []string // and their namespaces
	changed  []string // the ids of the records whose status the batch changes
	shared   []string // the namespaces of the persistent constraints the batch appends
	state    []byte   // the encoding of b.State; nil when there is none to store
}

// Apply implements [store.Store]: the batch runs in
// one transaction that is rolled back on any error, and lands whole or not
// at all. The transaction first locks the counters of the traces it
// appends to and of the trace its condition names ([store.Batch.Trace]),
// so the condition is checked against the exact length of the trace,
// which no other writer, in any process, can change until the
// transaction ends. Status changes are applied before the appends, so a
// batch cannot invalidate a record it appends (that is
// [blackboard.ErrNotFound], as in [memstore.Store]). The batch's claims are
// inserted in the same transaction, so a claim lands exactly when the rest
// of its batch does; so do the change counters of the traces the batch
// touches and the batch's State (see [Store.ReadState]).
//
// A single record is a one-record batch, a status change a batch with one
// [store.Invalidation]. Apply returns an error wrapping
// [store.ErrDuplicateID] for an id the store holds (or two appends of
// one id); the error of [store.CheckRecord] for a record it refuses
// ([blackboard.ErrInvalidInput] for a bad field, a string field or
// reference that is not valid UTF-8, or a TTL beyond [blackboard.MaxTTL];
// [blackboard.ErrInvalidPayload] for a payload string that is not);
// [blackboard.ErrInvalidInput] for an unknown role, a NaN confidence or a
// NUL character in a string field or reference;
// [blackboard.ErrInvalidPayload] for a payload value JSON cannot encode or
// a NUL character in a payload string or key; [store.ErrNotActive]
// for a status change of a record that is not ACTIVE,
// [blackboard.ErrNotFound] for one of an unknown id and
// [blackboard.ErrInvalidInput] for one to a bad status or without a
// reason; an error wrapping [blackboard.ErrConflict] when the condition's
// trace does not hold TraceLen records; [blackboard.ErrDuplicateKey] for a claim of a key
// already claimed, by any store on the database, or of one key twice in the
// batch; [blackboard.ErrInvalidInput] for a claim [store.CheckClaim] refuses or
// that holds a NUL character, or a State whose MarshalBinary fails (that
// error is wrapped too); [ErrSerialization] when the server kept aborting
// the transaction; and [ErrUnreachable] when the server could not be
// reached.
func (s *Store) Apply(ctx context.Context, b store.Batch) error {
	leave, err := s.enter(ctx)
	if err != nil {
		return err
	}
	defer leave()
	p, err := newPlan(b)
	if err != nil || p == nil {
		return err
	}
	return s.retry(ctx, "apply", func() error { return s.applyOnce(ctx, p) })
}

// newPlan checks what can be checked without the database and works out
// the trace counters to lock. It returns nil for a batch with nothing to
// do.
func newPlan(b store.Batch) (*plan, error) {
	p := &plan{b: b, rows: make([]row, len(b.Appends))}
	for i := range b.Appends {
		var err error
		if p.rows[i], err = encode(&b.Appends[i]); err != nil {
			return nil, err
		}
		if r := &b.Appends[i]; r.Slot == blackboard.Constraints && r.Scope == blackboard.ScopePersistent && !slices.Contains(p.shared, p.rows[i].namespace) {
			p.shared = append(p.shared, p.rows[i].namespace)
		}
	}
	for _, inv := range b.Invalidations {
		if err := store.CheckInvalidation(inv); err != nil {
			return nil, fmt.Errorf("pgstore: %w", err)
		}
	}
	// Batches are small: a quadratic scan for a key claimed twice beats
	// allocating a set, and it names the fault better than the primary key
	// would.
	for i, c := range b.Claims {
		if err := store.CheckClaim(c); err != nil {
			return nil, fmt.Errorf("pgstore: %w", err)
		}
		if hasNUL(c.Key, c.RecordID, c.Namespace) {
			return nil, fmt.Errorf("pgstore: %w: a claim holds a NUL character", blackboard.ErrInvalidInput)
		}
		for _, prev := range b.Claims[:i] {
			if prev.Key == c.Key && blackboard.NamespaceOf(prev.Namespace) == blackboard.NamespaceOf(c.Namespace) {
				return nil, fmt.Errorf("pgstore: %w: %q twice in one batch", blackboard.ErrDuplicateKey, c.Key)
			}
		}
	}
	if b.State != nil && b.Trace != "" {
		var err error
		if p.state, err = b.State.MarshalBinary(); err != nil {
			return nil, fmt.Errorf("pgstore: %w: the state of trace %q: %w", blackboard.ErrInvalidInput, b.Trace, err)
		}
		if p.state == nil {
			p.state = []byte{} // an empty state is a state: not NULL
		}
	}
	if b.Trace != "" && !storable(b.Trace) {
		// No trace has that id: it holds no records (nor state).
		p.state = nil
		if b.TraceLen != 0 {
			return nil, fmt.Errorf("pgstore: %w: trace %q holds 0 records, not %d", blackboard.ErrConflict, b.Trace, b.TraceLen)
		}
		p.b.Trace = ""
	}
	for _, inv := range b.Invalidations {
		if !storable(inv.ID) {
			return nil, fmt.Errorf("pgstore: %w: %q", blackboard.ErrNotFound, inv.ID)
		}
		p.changed = append(p.changed, inv.ID)
	}
	if len(p.rows) == 0 && len(b.Invalidations) == 0 && len(b.Claims) == 0 && p.b.Trace == "" {
		return nil, nil
	}

	// A trace is its namespace and its id.
	counts := map[traceKey]int64{}
	if p.b.Trace != "" {
		counts[traceKey{blackboard.NamespaceOf(p.b.TraceNamespace), p.b.Trace}] = 0
	}
	// Each row's parameter 3 is how many appends to its trace follow it in
	// the batch: its position is the advanced counter less that.
	for i := len(p.rows) - 1; i >= 0; i-- {
		r := &p.rows[i]
		k := traceKey{r.namespace, r.trace}
		r.args[2] = counts[k]
		counts[k]++
	}
	keys := make([]traceKey, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b traceKey) int {
		return cmp.Or(cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.trace, b.trace))
	})
	p.appended = make([]string, 0, len(keys)) // never NULL: unnest(NULL) is no rows, but say so
	p.appNSs = make([]string, 0, len(keys))
	for _, k := range keys {
		p.traces = append(p.traces, k.trace)
		p.deltas = append(p.deltas, counts[k])
		p.nss = append(p.nss, k.namespace)
		if counts[k] > 0 {
			p.appended = append(p.appended, k.trace)
			p.appNSs = append(p.appNSs, k.namespace)
		}
	}
	return p, nil
}

// applyOnce sends the whole batch to the server in one pipeline, which
// the server runs as one implicit transaction: the first statement that
// fails (a check of bk_require, a unique index) rolls all of it back, and
// the transaction commits when the server reaches the end of the pipeline.
// One round trip. Errors the store should run again come back raw, for
// retry; any other comes back final, in the form Apply returns.
func (s *Store) applyOnce(ctx context.Context, p *plan) error {
	batch := &pgx.Batch{}
	switch {
	case p.b.Trace != "":
		ns := blackboard.NamespaceOf(p.b.TraceNamespace)
		i := 0
		for i < len(p.traces) && (p.traces[i] != p.b.Trace || p.nss[i] != ns) {
			i++
		}
		batch.Queue(s.q.lockTracesIf, p.traces, p.deltas, p.nss, p.b.Trace, p.deltas[i], int64(p.b.TraceLen), ns)
	case len(p.traces) > 0:
		batch.Queue(s.q.lockTraces, p.traces, p.deltas, p.nss)
	}
	if p.b.SharedNamespace != "" {
		batch.Queue(s.q.checkShared, blackboard.NamespaceOf(p.b.SharedNamespace), int64(p.b.Shared))
	}
	for _, inv := range p.b.Invalidations {
		batch.Queue(s.q.invalidate, inv.Status.String(), string(inv.Reason), inv.ID, active)
	}
	if len(p.changed) > 0 {
		batch.Queue(s.q.countInvalidated, p.changed, p.appended, p.appNSs)
	}
	for _, r := range p.rows {
		batch.Queue(s.q.insert, r.args...)
	}
	for _, c := range p.b.Claims {
		batch.Queue(s.q.claim, blackboard.NamespaceOf(c.Namespace), c.Key, c.RecordID)
	}
	if len(p.shared) > 0 || len(p.changed) > 0 {
		batch.Queue(s.q.share, p.shared, p.changed)
	}
	if p.state != nil {
		ns := blackboard.NamespaceOf(p.b.TraceNamespace)
		batch.Queue(s.q.checkVersion, p.b.Trace, int64(p.b.Version), p.appended, p.changed, ns, p.appNSs)
		batch.Queue(s.q.setState, p.b.Trace, p.state, ns)
	}
	err := s.pool.SendBatch(ctx, batch).Close()
	if err == nil {
		return nil
	}
	pe := pgError(err)
	switch {
	case ctx.Err() != nil && pe != nil:
		// The server cancelled the batch (or refused it first): nothing
		// landed.
		return final{fmt.Errorf("pgstore: apply: %w (%v)", ctx.Err(), err)}
	case ctx.Err() != nil && !pgconn.SafeToRetry(err):
		return final{fmt.Errorf("pgstore: apply: %w (the write may have landed)", ctx.Err())}
	case ctx.Err() != nil:
		return final{fmt.Errorf("pgstore: apply: %w", ctx.Err())}
	case pe == nil && !pgconn.SafeToRetry(err) && !connectFailed(err):
		// The pipeline may have reached the server and committed.
		return final{wrap("apply", err, true)}
	case pe == nil:
		return err // nothing was sent: run it again
	}
	// The server answered with an error before the end of the pipeline:
	// nothing of the batch committed.
	switch {
	case pe.Code == codeConflict:
		return final{fmt.Errorf("pgstore: %w: %s", blackboard.ErrConflict, pe.Message)}
	case pe.Code == codeNotFound:
		return final{fmt.Errorf("pgstore: %w: %s", blackboard.ErrNotFound, pe.Message)}
	case pe.Code == codeNotActive:
		return final{fmt.Errorf("pgstore: %w: %s", store.ErrNotActive, pe.Message)}
	case pe.Code == codeUniqueViolation && pe.ConstraintName == "bk_records_id":
		return final{fmt.Errorf("pgstore: %w: %s", store.ErrDuplicateID, pe.Detail)}
	case pe.Code == codeUniqueViolation && pe.ConstraintName == "bk_once_keys_pkey":
		return final{fmt.Errorf("pgstore: %w: %s", blackboard.ErrDuplicateKey, pe.Detail)}
	}
	return err // run again if the server aborted it (retryable), else wrapped by retry
}

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
	ns := blackboard.NamespaceOf(namespace)
	return s.one(ctx, "find active", s.q.find, fmt.Sprintf("no active %s %q in trace %q of namespace %q", slot, kind, traceID, ns),
		traceID, ns, slot.String(), kind, active)
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

// CountTrace returns how many records trace traceID of namespace holds (0
// for an unknown trace) from the trace's counter: one primary-key lookup,
// exact as of the last committed batch.
func (s *Store) CountTrace(ctx context.Context, namespace, traceID string) (int, error) {
	leave, err := s.enter(ctx)
	if err != nil {
		return 0, err
	}
	defer leave()
	ns := blackboard.NamespaceOf(namespace)
	if !storable(traceID) || !storable(ns) {
		return 0, nil
	}
	var n int64
	err = s.retry(ctx, "count trace", func() error { return s.pool.QueryRow(ctx, s.q.count, traceID, ns).Scan(&n) })
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, err
	}
	return int(n), nil
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
	ns := blackboard.NamespaceOf(namespace)
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
	ns := blackboard.NamespaceOf(namespace)
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
	ns := blackboard.NamespaceOf(namespace)
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
	var status, scope string
	if f.Status != 0 {
		status = f.Status.String()
	}
	if f.Scope != 0 {
		scope = f.Scope.String()
	}
	switch {
	case !storable(f.Namespace):
		return s.list(ctx, "", false)
	case f.Scope == blackboard.ScopePersistent && f.Namespace != "":
		return s.list(ctx, s.q.slotPersistentNS, false, slot.String(), f.Namespace, status)
	case f.Scope == blackboard.ScopePersistent:
		return s.list(ctx, s.q.slotPersistent, false, slot.String(), status)
	}
	return s.list(ctx, s.q.slotAny, false, slot.String(), status, scope, f.Namespace)
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

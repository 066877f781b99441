package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/store"
)

// Store is a [store.Store] on SQLite, and a [store.StateStore]: it keeps
// each trace's counters and decision state in the transaction of every
// write, and enforces once-keys across every store and process sharing the
// database. It is safe for concurrent use; see the package documentation
// for how it orders writers.
type Store struct {
	db       *sql.DB
	ownsDB   bool
	readOnly bool // OpenReadOnly: every write fails
	// write admits one write transaction of this Store at a time, so that
	// its writers queue here (honouring their contexts) rather than in
	// SQLite's busy handler. Other Stores and processes on the same file
	// still meet in the busy handler.
	write chan struct{}

	mu     sync.RWMutex // held for reading by every operation; Close takes it for writing
	closed bool

	get, find, trace                    *sql.Stmt
	slotAny, slotPersistent, slotNS     *sql.Stmt
	insert, invalidate, status          *sql.Stmt
	bump, setState, count, readState    *sql.Stmt
	claim, claimedBy, share, readShared *sql.Stmt
	end, bumpChain, setHead, head       *sql.Stmt
	chainAppends, chainEnds             *sql.Stmt
	stmts                               []*sql.Stmt // all of the above, for Close
}

var (
	_ store.StateStore = (*Store)(nil)
	_ store.Chainer    = (*Store)(nil)
)

// Option configures [Open] and [New].
type Option func(*config)

type config struct {
	busyTimeout    time.Duration
	busyTimeoutSet bool
	check          bool // WithCheck
}

// defaultBusyTimeout is how long Open's connections wait for another
// connection's write lock.
const defaultBusyTimeout = 5 * time.Second

// WithBusyTimeout sets how long a connection Open creates waits for a lock
// held by another connection before failing (default 5s). It must not be
// negative. New does not accept it: it cannot configure connections it did
// not open (set busy_timeout in the DSN of the *sql.DB instead).
func WithBusyTimeout(d time.Duration) Option {
	return func(c *config) { c.busyTimeout, c.busyTimeoutSet = d, true }
}

// pageSize is how many rows a listing reads per query.
const pageSize = 256

// Open opens (creating it if need be) the SQLite database at path and
// returns a store on it that owns the database: [Store.Close] closes it.
// path is a file name, or ":memory:" for a private in-memory database
// that lives as long as the store (it uses a single connection, since each
// SQLite connection to ":memory:" would see a database of its own).
//
// A file is put in WAL mode; every connection gets synchronous=NORMAL, the
// busy timeout and immediate write transactions. The schema is created or
// migrated. Open returns an error wrapping [blackboard.ErrInvalidInput] for an
// empty path or a bad option, [ErrSchemaTooNew] for a database written by
// a newer version of this package, [ErrCorrupt] for a damaged file when
// given [WithCheck], and ctx's error when ctx ends while the schema is
// read or migrated.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	cfg := config{busyTimeout: defaultBusyTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	switch {
	case path == "":
		return nil, fmt.Errorf("sqlitestore: %w: empty path", blackboard.ErrInvalidInput)
	case cfg.busyTimeout < 0:
		return nil, fmt.Errorf("sqlitestore: %w: negative busy timeout %v", blackboard.ErrInvalidInput, cfg.busyTimeout)
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", cfg.busyTimeout.Milliseconds()))
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	memory := path == ":memory:"
	var dsn string
	if memory {
		dsn = ":memory:?" + q.Encode()
	} else {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("sqlitestore: %w: %v", blackboard.ErrInvalidInput, err)
		}
		if cfg.check {
			if err := checkFile(ctx, path, abs); err != nil {
				return nil, err
			}
		}
		q.Add("_pragma", "journal_mode(WAL)")
		dsn = (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}).String()
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	if memory {
		// One connection, never retired: the database lives in it.
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		db.SetConnMaxLifetime(0)
		db.SetConnMaxIdleTime(0)
	}
	s, err := newStore(ctx, db, cfg.busyTimeout)
	if err != nil {
		return nil, errors.Join(err, db.Close())
	}
	s.ownsDB = true
	return s, nil
}

// New returns a store on a database the caller opened with the driver
// modernc.org/sqlite registers ("sqlite"). The caller keeps ownership:
// [Store.Close] does not close db. New leaves connection settings to the
// caller; set them in the DSN, for example
// "file:bk.db?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate".
// For an in-memory database, limit db to one connection.
//
// New creates or migrates the schema. It returns an error wrapping
// [blackboard.ErrInvalidInput] for a nil db or an option that only [Open] can
// honour, [ErrSchemaTooNew] for a database written by a newer version
// of this package, and ctx's error when ctx ends while the schema is read
// or migrated.
func New(ctx context.Context, db *sql.DB, opts ...Option) (*Store, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	switch {
	case db == nil:
		return nil, fmt.Errorf("sqlitestore: %w: nil *sql.DB", blackboard.ErrInvalidInput)
	case cfg.busyTimeoutSet:
		return nil, fmt.Errorf("sqlitestore: %w: WithBusyTimeout applies to Open; set busy_timeout in the DSN of db", blackboard.ErrInvalidInput)
	}
	return newStore(ctx, db, defaultBusyTimeout)
}

// The store's statements. Listings are paged: their last two parameters
// are the seq to start after and the page size.
const (
	selectRecord = "SELECT seq, " + columns + " FROM records "
	pageTail     = " AND seq > ? ORDER BY seq LIMIT ?"

	queryGet = selectRecord + "WHERE id = ?"
	// Without statistics the planner may prefer the slot index; the trace
	// index is the one whose cost does not grow with the store.
	// A trace is its namespace and id: the trace index finds the id, of
	// which other namespaces rarely hold a trace.
	queryFind  = selectRecord + "INDEXED BY records_trace WHERE trace_id = ? AND namespace = ? AND slot = ? AND kind = ? AND status = ? ORDER BY seq DESC LIMIT 1"
	queryTrace = selectRecord + "INDEXED BY records_trace WHERE trace_id = ? AND namespace = ?" + pageTail
	// A zero filter field is passed as '' and matches everything.
	querySlotAny = selectRecord + "WHERE slot = ?1 AND (?2 = '' OR status = ?2) AND (?3 = '' OR scope = ?3) AND (?4 = '' OR namespace = ?4) AND seq > ?5 ORDER BY seq LIMIT ?6"
	// The scope is a literal so that the planner can use the partial
	// indexes records_persistent and records_persistent_ns, whose condition
	// it must match.
	querySlotPersistent   = selectRecord + "WHERE slot = ? AND status = ? AND scope = 'persistent'" + pageTail
	querySlotPersistentNS = selectRecord + "WHERE slot = ? AND status = ? AND namespace = ? AND scope = 'persistent'" + pageTail
	queryInsert           = "INSERT INTO records (" + columns + ", link, link_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	// A status change names the row it changed, the trace it touched, whose
	// row then counts it, the record's slot and scope, which say whether
	// its namespace's row counts it too, and where the trace's chain stood
	// before the batch (NULLs without a row), from which the change is
	// linked. It keeps the reason the record was appended with.
	queryInvalidate = "UPDATE records SET status = ?, reason = ?, born_reason = reason WHERE id = ? AND status = ?" +
		" RETURNING seq, trace_id, namespace, slot, scope," +
		" (SELECT events FROM traces t WHERE t.trace_id = records.trace_id AND t.namespace = records.namespace)," +
		" (SELECT head FROM traces t WHERE t.trace_id = records.trace_id AND t.namespace = records.namespace)"
	// The position and link of a status change, on the row it changed.
	queryEnd    = "UPDATE records SET end_seq = ?, end_link = ? WHERE seq = ?"
	queryStatus = "SELECT status FROM records WHERE id = ?"
	// Counts one change of a trace and adds the batch's appends to it
	// (?3, 0 for a trace the batch only changes a status in) of trace ?1 of
	// namespace ?2. It returns the count after the batch, which a
	// conditional batch is checked against.
	// It also returns where the trace's chain stands before the batch,
	// which it does not change: the batch's links follow from it, and
	// querySetHead records the last.
	queryBump = "INSERT INTO traces (trace_id, namespace, n, version) VALUES (?1, ?2, ?3, 1)" +
		" ON CONFLICT (namespace, trace_id) DO UPDATE SET n = n + excluded.n, version = version + 1 RETURNING n, version, events, head"
	// queryBump for a trace whose chain the batch read before (from a
	// status change): it records the chain's new length ?4 and head ?5.
	queryBumpChain = "INSERT INTO traces (trace_id, namespace, n, version, events, head) VALUES (?1, ?2, ?3, 1, ?4, ?5)" +
		" ON CONFLICT (namespace, trace_id) DO UPDATE SET n = n + excluded.n, version = version + 1, events = excluded.events, head = excluded.head RETURNING n, version"
	querySetHead = "UPDATE traces SET events = ?3, head = ?4 WHERE trace_id = ?1 AND namespace = ?2"
	queryHead    = "SELECT events, head, migrated FROM traces WHERE trace_id = ? AND namespace = ?"
	// A trace's appends in append order, with their links and what a
	// status change left of the reason they were appended with, and its
	// status changes in chain order (paged by position, then seq, so that
	// two rows claiming one position are both read).
	queryChainAppends = "SELECT seq, " + columns + ", link, link_seq, end_seq, born_reason FROM records INDEXED BY records_trace WHERE trace_id = ? AND namespace = ?" + pageTail
	queryChainEnds    = "SELECT seq, id, status, reason, end_seq, end_link FROM records INDEXED BY records_ended" +
		" WHERE trace_id = ?1 AND namespace = ?2 AND end_seq IS NOT NULL AND end_seq >= ?3 AND (end_seq > ?3 OR seq > ?4) ORDER BY end_seq, seq LIMIT ?5"
	// The state is stored with the version the batch left.
	querySetState = "UPDATE traces SET state = ?2, state_version = version WHERE trace_id = ?1 AND namespace = ?3"
	queryCount    = "SELECT n, version FROM traces WHERE trace_id = ? AND namespace = ?"
	// The trace's row and its namespace's counter (0 without a row). An
	// aggregate over the trace's row, of which there is at most one, so
	// that an unknown trace still gives one row (of NULLs, read as zeros
	// and no state), through the primary keys alone.
	queryReadState = "SELECT coalesce(max(n), 0), coalesce(max(namespace), ''), coalesce(max(version), 0), coalesce(max(state_version), 0), max(state)," +
		" coalesce((SELECT shared FROM namespaces WHERE namespace = ?2), 0) FROM traces WHERE trace_id = ?1 AND namespace = ?2"
	// Counts one change of a namespace's persistent constraints.
	queryReadShared = "SELECT shared FROM namespaces WHERE namespace = ?"
	queryShare      = "INSERT INTO namespaces (namespace, shared) VALUES (?, 1) ON CONFLICT (namespace) DO UPDATE SET shared = shared + 1"
	queryClaim      = "INSERT INTO once_keys (namespace, key, record_id) VALUES (?, ?, ?)"
	queryClaimedBy  = "SELECT record_id FROM once_keys WHERE namespace = ? AND key = ?"
)

func newStore(ctx context.Context, db *sql.DB, wait time.Duration) (*Store, error) {
	if err := migrate(ctx, db, wait); err != nil {
		return nil, err
	}
	return prepare(ctx, db)
}

// prepare returns a store on a database whose schema is current.
func prepare(ctx context.Context, db *sql.DB) (*Store, error) {
	s := &Store{db: db, write: make(chan struct{}, 1)}
	for _, st := range []struct {
		dst   **sql.Stmt
		query string
	}{
		{&s.get, queryGet},
		{&s.find, queryFind},
		{&s.trace, queryTrace},
		{&s.slotAny, querySlotAny},
		{&s.slotPersistent, querySlotPersistent},
		{&s.slotNS, querySlotPersistentNS},
		{&s.insert, queryInsert},
		{&s.invalidate, queryInvalidate},
		{&s.status, queryStatus},
		{&s.bump, queryBump},
		{&s.setState, querySetState},
		{&s.count, queryCount},
		{&s.readState, queryReadState},
		{&s.claim, queryClaim},
		{&s.claimedBy, queryClaimedBy},
		{&s.share, queryShare},
		{&s.readShared, queryReadShared},
		{&s.end, queryEnd},
		{&s.bumpChain, queryBumpChain},
		{&s.setHead, querySetHead},
		{&s.head, queryHead},
		{&s.chainAppends, queryChainAppends},
		{&s.chainEnds, queryChainEnds},
	} {
		stmt, err := db.PrepareContext(ctx, st.query)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("sqlitestore: prepare: %w", err), s.closeStmts())
		}
		*st.dst = stmt
		s.stmts = append(s.stmts, stmt)
	}
	return s, nil
}

func (s *Store) closeStmts() error {
	var errs []error
	for _, st := range s.stmts {
		errs = append(errs, st.Close())
	}
	return errors.Join(errs...)
}

var errClosed = fmt.Errorf("sqlitestore: %w", blackboard.ErrClosed)

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

// Get implements [store.Store]. It returns an error wrapping
// [blackboard.ErrNotFound] for an unknown id.
func (s *Store) Get(ctx context.Context, id string) (blackboard.Record, error) {
	return s.one(ctx, s.get, "no record "+id, id)
}

// FindActive implements [store.Store] through the trace index, walking
// the trace from its latest record back, so its cost grows with the length
// of the trace, not with the store. It returns an error wrapping
// [blackboard.ErrNotFound] when no record of that kind is ACTIVE in that slot of
// the trace.
func (s *Store) FindActive(ctx context.Context, namespace, traceID string, slot blackboard.Slot, kind string) (blackboard.Record, error) {
	ns := cmp.Or(namespace, blackboard.DefaultNamespace)
	return s.one(ctx, s.find, fmt.Sprintf("no active %s %q in trace %q of namespace %q", slot, kind, traceID, ns),
		traceID, ns, string(slot), kind, active)
}

// one runs a query for at most one record; missing describes no result.
func (s *Store) one(ctx context.Context, stmt *sql.Stmt, missing string, args ...any) (blackboard.Record, error) {
	leave, err := s.enter(ctx)
	if err != nil {
		return blackboard.Record{}, err
	}
	defer leave()
	_, r, err := scan(stmt.QueryRowContext(ctx, args...))
	if err = ctxErr(ctx, err); errors.Is(err, sql.ErrNoRows) {
		return blackboard.Record{}, fmt.Errorf("sqlitestore: %w: %s", blackboard.ErrNotFound, missing)
	}
	return r, err
}

// ReadState implements [store.StateStore] with one query, two
// primary-key lookups: the trace's row (its record count, namespace, change
// counter and the encoding of the last state a batch stored, in Data, nil
// when none) and the change counter of namespace's persistent constraints
// (Shared, from 0). An unknown trace is the zero [store.TraceState] but
// for Shared.
func (s *Store) ReadState(ctx context.Context, namespace, traceID string) (store.TraceState, error) {
	leave, err := s.enter(ctx)
	if err != nil {
		return store.TraceState{}, err
	}
	defer leave()
	var st store.TraceState
	var version, stateVersion, shared int64
	err = ctxErr(ctx, s.readState.QueryRowContext(ctx, traceID, cmp.Or(namespace, blackboard.DefaultNamespace)).Scan(&st.Len, &st.Namespace, &version, &stateVersion, &st.Data, &shared))
	if err != nil {
		return store.TraceState{}, fmt.Errorf("sqlitestore: read state: %w", err)
	}
	st.Version, st.StateVersion, st.Shared = uint64(version), uint64(stateVersion), uint64(shared)
	return st, nil
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
	var id string
	err = ctxErr(ctx, s.claimedBy.QueryRowContext(ctx, cmp.Or(namespace, blackboard.DefaultNamespace), key).Scan(&id))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", fmt.Errorf("sqlitestore: %w: once-key %q is not claimed in namespace %q", blackboard.ErrNotFound, key, cmp.Or(namespace, blackboard.DefaultNamespace))
	case err != nil:
		return "", fmt.Errorf("sqlitestore: once-key %q: %w", key, err)
	}
	return id, nil
}

// ListTrace implements [store.Store] through the trace index. The listing
// reads pages of rows and holds no connection while it yields, so the loop
// body may call back into the store.
func (s *Store) ListTrace(ctx context.Context, namespace, traceID string) iter.Seq2[blackboard.Record, error] {
	return s.list(ctx, s.trace, traceID, cmp.Or(namespace, blackboard.DefaultNamespace))
}

// ListSlot implements [store.Store]. A listing of persistent records of
// one status, in one namespace or in all (the kernel reads its namespace's
// active persistent constraints on every gated decision), is answered from
// an index of persistent records only; other filters read the slot's
// records in append order through the slot index, so they cost time in
// proportion to the slot's size. Like [Store.ListTrace] it holds no
// connection while it yields. An unknown slot, status or scope yields an
// error wrapping [blackboard.ErrInvalidInput].
func (s *Store) ListSlot(ctx context.Context, slot blackboard.Slot, f store.Filter) iter.Seq2[blackboard.Record, error] {
	if err := store.CheckFilter(slot, f); err != nil {
		err = fmt.Errorf("sqlitestore: %w", err)
		return func(yield func(blackboard.Record, error) bool) { yield(blackboard.Record{}, err) }
	}
	status, scope := string(f.Status), string(f.Scope)
	switch {
	case status != "" && f.Scope == blackboard.ScopePersistent && f.Namespace != "":
		return s.list(ctx, s.slotNS, string(slot), status, f.Namespace)
	case status != "" && f.Scope == blackboard.ScopePersistent:
		return s.list(ctx, s.slotPersistent, string(slot), status)
	}
	return s.list(ctx, s.slotAny, string(slot), status, scope, f.Namespace)
}

// list streams the rows of a paged query: args are followed by the seq to
// start after and the page size.
func (s *Store) list(ctx context.Context, stmt *sql.Stmt, args ...any) iter.Seq2[blackboard.Record, error] {
	return func(yield func(blackboard.Record, error) bool) {
		var after int64
		for {
			recs, last, err := s.page(ctx, stmt, append(args[:len(args):len(args)], after, pageSize))
			if err != nil {
				yield(blackboard.Record{}, ctxErr(ctx, err))
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
			after = last
		}
	}
}

// page reads one page of a listing into memory and releases the connection.
func (s *Store) page(ctx context.Context, stmt *sql.Stmt, args []any) (recs []blackboard.Record, last int64, err error) {
	leave, err := s.enter(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer leave()
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		seq, r, err := scan(rows)
		if err != nil {
			return nil, 0, err
		}
		recs, last = append(recs, r), seq
	}
	return recs, last, rows.Err()
}

// Close implements [store.Store]. It waits for operations in progress,
// then closes the store's statements and, if [Open] opened it, the
// database. A second Close returns an error wrapping [blackboard.ErrClosed].
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	s.closed = true
	err := s.closeStmts()
	if s.ownsDB {
		err = errors.Join(err, s.db.Close())
	}
	return err
}

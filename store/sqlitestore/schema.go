package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// migrations[i] takes the schema from version i to version i+1. The
// database's PRAGMA user_version records how many have run. Entries are
// never edited once released: a change is a new entry.
var migrations = []string{
	// Version 1: the records table and the indexes of the kernel's queries.
	//   seq is the append order. It is the rowid, so every secondary index
	//   ends in it and lists in append order without a sort.
	//   records_trace       ListTrace (trace_id = ? AND seq > ?) and
	//                       FindActive, which walks the trace backwards
	//   records_slot        ListSlot across traces (analysis)
	//   records_persistent  ListSlot of active persistent records, read on
	//                       every commit; partial, so episode records (the
	//                       bulk) never touch it
	// Get and status changes use the unique index on id. Every index is
	// paid for on each insert; none of them holds status except the partial
	// one, so a status change rewrites no index of an episode record.
	`CREATE TABLE records (
		seq           INTEGER PRIMARY KEY,
		id            TEXT    NOT NULL UNIQUE,
		trace_id      TEXT    NOT NULL,
		slot          TEXT    NOT NULL,
		mode          TEXT    NOT NULL,
		kind          TEXT    NOT NULL,
		payload       TEXT    NOT NULL,
		role          TEXT    NOT NULL,
		writer        TEXT    NOT NULL,
		ts_ms         INTEGER NOT NULL,
		input_refs    TEXT,
		confidence    REAL,
		ttl_ms        INTEGER NOT NULL,
		evidence_refs TEXT,
		status        TEXT    NOT NULL,
		reason        TEXT    NOT NULL,
		scope         TEXT    NOT NULL
	) STRICT;
	CREATE INDEX records_trace ON records (trace_id);
	CREATE INDEX records_slot ON records (slot);
	CREATE INDEX records_persistent ON records (slot, status) WHERE scope = 'persistent';`,

	// Version 2: namespaces and once-keys.
	//   namespace              every record's namespace; rows of version 1
	//                          read the default, without a table rewrite
	//   records_persistent_ns  ListSlot of a namespace's active persistent
	//                          records, which the kernel reads on every
	//                          gated decision. A second partial index
	//                          rather than a wider records_persistent: with
	//                          namespace in that index, a listing across
	//                          namespaces would have to sort. Persistent
	//                          records are few, so the extra index costs
	//                          little.
	//   once_keys              a claimed key and the record whose batch
	//                          claimed it; the primary key is what refuses
	//                          a second claim, in any process. WITHOUT
	//                          ROWID: it is only ever searched by key.
	`ALTER TABLE records ADD COLUMN namespace TEXT NOT NULL DEFAULT 'default';
	CREATE INDEX records_persistent_ns ON records (slot, status, namespace) WHERE scope = 'persistent';
	CREATE TABLE once_keys (
		key       TEXT NOT NULL PRIMARY KEY,
		record_id TEXT NOT NULL
	) STRICT, WITHOUT ROWID;`,
	// Version 3: the span a record was written under (a W3C traceparent,
	// '' when untraced); rows of earlier versions read ''.
	`ALTER TABLE records ADD COLUMN span TEXT NOT NULL DEFAULT '';`,
	// Version 4: once-keys per namespace. A key is claimed at most once in
	// its namespace, and one namespace neither claims nor sees another's
	// keys: the primary key becomes (namespace, key). SQLite cannot change
	// a table's primary key, so the table is rebuilt; a claim of an earlier
	// version keeps its key and goes to the namespace of the record that
	// claimed it (the default namespace when that record is gone), so that
	// every claim stays in force where it was made.
	`CREATE TABLE once_keys_ns (
		namespace TEXT NOT NULL,
		key       TEXT NOT NULL,
		record_id TEXT NOT NULL,
		PRIMARY KEY (namespace, key)
	) STRICT, WITHOUT ROWID;
	INSERT INTO once_keys_ns (namespace, key, record_id)
		SELECT COALESCE((SELECT r.namespace FROM records r WHERE r.id = k.record_id), 'default'), k.key, k.record_id
		FROM once_keys k;
	DROP TABLE once_keys;
	ALTER TABLE once_keys_ns RENAME TO once_keys;`,
	// Version 5: one row per trace, kept by Apply in the transaction of
	// every batch that touches the trace (see store.StateStore), so that
	// the kernel reads a trace's counters and decision state in one lookup
	// rather than reading the trace.
	//   n              the trace's record count: the length a conditional
	//                  batch is checked against, without counting rows
	//   namespace      the namespace of the trace's records
	//   version        one more for every batch that appends to the trace
	//                  or changes the status of one of its records
	//   state_version  the version the batch that stored state left (0:
	//                  none stored)
	//   state          the decision state's encoding, NULL when none
	// Existing traces are counted from their records; their version starts
	// at their record count (any value above 0 would do: they hold no
	// state, so the kernel reads them whole once).
	`CREATE TABLE traces (
		trace_id      TEXT    NOT NULL PRIMARY KEY,
		namespace     TEXT    NOT NULL,
		n             INTEGER NOT NULL,
		version       INTEGER NOT NULL,
		state_version INTEGER NOT NULL DEFAULT 0,
		state         BLOB
	) STRICT;
	INSERT INTO traces (trace_id, namespace, n, version)
		SELECT trace_id, MIN(namespace), COUNT(*), COUNT(*) FROM records GROUP BY trace_id;`,
	// Version 6: one row per namespace whose persistent constraints have
	// changed (see store.StateStore), kept by Apply in the transaction of
	// every batch that appends a persistent constraint of the namespace or
	// changes the status of one, so that ReadState answers, with the
	// trace's row, whether the namespace's constraints changed since the
	// kernel last listed them.
	//   shared  one more for every such batch
	// A namespace without a row is at 0, as every namespace of an earlier
	// version starts (the kernel only compares the counter with what it
	// read before). WITHOUT ROWID: it is only ever searched by namespace.
	`CREATE TABLE namespaces (
		namespace TEXT    NOT NULL PRIMARY KEY,
		shared    INTEGER NOT NULL
	) STRICT, WITHOUT ROWID;`,
	// Version 7: traces per namespace. A trace is named by its namespace
	// and its id, so one trace id in two namespaces is two traces: the
	// primary key of traces becomes (namespace, trace_id). SQLite cannot
	// change a table's primary key, so the table is rebuilt, in the order
	// its rows were made. A trace of an earlier version holds the records
	// of one namespace (Apply refused any other), which is the namespace
	// its row already names, so every trace, its counters and its state
	// carry over as they are. The records and their trace index are
	// unchanged: queries name the namespace beside the trace id.
	`CREATE TABLE traces_ns (
		namespace     TEXT    NOT NULL,
		trace_id      TEXT    NOT NULL,
		n             INTEGER NOT NULL,
		version       INTEGER NOT NULL,
		state_version INTEGER NOT NULL DEFAULT 0,
		state         BLOB,
		PRIMARY KEY (namespace, trace_id)
	) STRICT;
	INSERT INTO traces_ns (namespace, trace_id, n, version, state_version, state)
		SELECT namespace, trace_id, n, version, state_version, state FROM traces ORDER BY rowid;
	DROP TABLE traces;
	ALTER TABLE traces_ns RENAME TO traces;`,
	// Version 8: every trace's hash chain (package chain, see
	// store.Chainer). A record changes status at most once, so its row
	// holds both of its events:
	//   link, link_seq  the link and position of the event that appended it
	//   born_reason     the reason it was appended with, once a status
	//                   change has replaced it (NULL until then)
	//   end_seq,        the position and link of its status change (NULL
	//   end_link        while it is ACTIVE)
	//   records_ended   a trace's status changes in chain order, so that
	//                   Chain merges them with the appends (read through
	//                   records_trace) without a sort; partial, so the
	//                   records never changed (the bulk) are not in it
	// and the traces row holds where the chain stands:
	//   events, head    its length and last link (NULL for none)
	//   migrated        how many events migrateChains chained from the
	//                   records of an earlier version
	// The records an earlier version holds are chained by migrateChains,
	// Go code run in this migration's transaction (SQLite cannot hash).
	`ALTER TABLE records ADD COLUMN link BLOB;
	ALTER TABLE records ADD COLUMN link_seq INTEGER;
	ALTER TABLE records ADD COLUMN born_reason TEXT;
	ALTER TABLE records ADD COLUMN end_seq INTEGER;
	ALTER TABLE records ADD COLUMN end_link BLOB;
	CREATE INDEX records_ended ON records (trace_id, namespace, end_seq) WHERE end_seq IS NOT NULL;
	ALTER TABLE traces ADD COLUMN events INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE traces ADD COLUMN head BLOB;
	ALTER TABLE traces ADD COLUMN migrated INTEGER NOT NULL DEFAULT 0;`,
}

// migrationCode holds, by the version it completes, the Go code a
// migration runs after its SQL, in the same transaction: what SQL cannot
// compute. Like migrations, an entry is never edited once released.
var migrationCode = map[int]func(ctx context.Context, conn *sql.Conn) error{
	8: migrateChains,
}

// ErrSchemaTooNew is returned by [Open] and [New] for a database whose schema
// version is newer than this package knows: it was written by a later
// version of the package, which may have changed the schema.
var ErrSchemaTooNew = errors.New("sqlitestore: database schema is newer than this package supports")

// migrate brings the schema up to date in one write transaction, so that
// stores opening the same new file at once do not both create it.
func migrate(ctx context.Context, db *sql.DB, wait time.Duration) error {
	conn, err := connect(ctx, db, wait)
	if err != nil {
		return fmt.Errorf("sqlitestore: open: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("sqlitestore: open: %w", err)
	}
	if err := migrateTx(ctx, conn); err != nil {
		_, _ = conn.ExecContext(context.Background(), "ROLLBACK") // the error that caused it matters more
		return err
	}
	return nil
}

// connect takes a connection for the migration, waiting up to wait while
// SQLite answers SQLITE_BUSY. A new connection's pragmas switch a
// rollback-journal file to WAL, which needs the file to itself, and SQLite
// refuses that at once, without its busy handler, while another connection
// of another store opening the same file holds it: stores opening one old
// file together would otherwise fail at random.
func connect(ctx context.Context, db *sql.DB, wait time.Duration) (*sql.Conn, error) {
	deadline := time.Now().Add(wait)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		conn, err := db.Conn(ctx)
		var se *sqlite.Error
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().Add(pause).After(deadline) {
			return conn, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause):
		}
	}
}

// migrateTx runs the missing migrations inside migrate's transaction and
// commits it.
func migrateTx(ctx context.Context, conn *sql.Conn) error {
	var version int
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("sqlitestore: schema version: %w", err)
	}
	switch {
	case version < 0:
		return fmt.Errorf("sqlitestore: user_version %d: not a database of this package", version)
	case version > len(migrations):
		return fmt.Errorf("%w: version %d, this package knows up to %d", ErrSchemaTooNew, version, len(migrations))
	}
	for v := version; v < len(migrations); v++ {
		if _, err := conn.ExecContext(ctx, migrations[v]); err != nil {
			return fmt.Errorf("sqlitestore: migration to version %d: %w", v+1, err)
		}
		if code := migrationCode[v+1]; code != nil {
			if err := code(ctx, conn); err != nil {
				return fmt.Errorf("sqlitestore: migration to version %d: %w", v+1, err)
			}
		}
	}
	// PRAGMA takes no parameters; the value is a constant of this package.
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(migrations))); err != nil {
		return fmt.Errorf("sqlitestore: schema version: %w", err)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("sqlitestore: schema: %w", err)
	}
	return nil
}

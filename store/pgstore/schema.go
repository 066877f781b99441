package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrations[i] takes the schema from version i to version i+1; the
// version table records how many have run. {schema} stands for the quoted
// name of the store's schema. Entries are never edited once released: a
// change is a new entry.
var migrations = []string{
	// Version 1: records, the per-trace counters and the once-keys.
	//
	// bk_records holds one row per record.
	//   seq        the append order across the store (ListSlot pages by it)
	//   pos        the record's position in its trace, 1, 2, 3...: taken
	//              from the trace's counter under the counter's row lock,
	//              so a trace's positions have no gaps and follow the order
	//              its batches committed in
	//   payload    JSONB; the reference lists are text arrays, NULL when nil
	//   enumerations by their stable names, as the other stores keep them
	// Identifiers compare bytewise (COLLATE "C"), as they do in Go.
	// Indexes, each for a query of the store:
	//   bk_records_id          Get, and the status changes of Apply
	//   bk_records_trace       ListTrace (trace_id = ? AND pos > ?)
	//   bk_records_kind        FindActive: the records of one kind in one
	//                          slot of one trace, latest first
	//   bk_records_slot        ListSlot across traces (analysis)
	//   bk_records_persistent_ns
	//                          ListSlot of the persistent records of one
	//                          namespace: the listing the kernel runs on
	//                          every gated decision
	//   bk_records_persistent  ListSlot of the persistent records of every
	//                          namespace
	// The last two are partial, so episode records (the bulk) never touch
	// them, and small.
	// No index holds status or reason, the only columns that ever change, so
	// a status change can be a heap-only update; the fill factor leaves room
	// on each page for it.
	//
	// bk_traces counts each trace's records. Apply locks the rows of the
	// traces it appends to (and of the trace its condition names) and adds
	// its appends to them: that lock orders the writers of one trace, across
	// every process, and gives the exact length a conditional batch is
	// checked against, without SERIALIZABLE isolation.
	//
	// bk_once_keys holds the claimed once-keys; its primary key is what
	// refuses a second claim of a key, in any process.
	//
	// bk_require(ok, code, message) raises an error with that SQLSTATE
	// unless ok is true. Apply sends a batch as one pipeline that the
	// server runs as one implicit transaction; a check that fails in it
	// (the batch's trace condition, a status change that finds no active
	// record) aborts the whole transaction, like a unique index does.
	`CREATE TABLE {schema}.bk_records (
		seq           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		id            text COLLATE "C" NOT NULL,
		trace_id      text COLLATE "C" NOT NULL,
		pos           bigint NOT NULL,
		slot          text NOT NULL,
		mode          text NOT NULL,
		kind          text COLLATE "C" NOT NULL,
		payload       jsonb NOT NULL,
		role          text NOT NULL,
		writer        text NOT NULL,
		ts_ms         bigint NOT NULL,
		input_refs    text[],
		confidence    double precision,
		ttl_ms        bigint NOT NULL,
		evidence_refs text[],
		status        text NOT NULL,
		reason        text NOT NULL,
		scope         text NOT NULL,
		namespace     text COLLATE "C" NOT NULL,
		CONSTRAINT bk_records_id UNIQUE (id),
		CONSTRAINT bk_records_trace UNIQUE (trace_id, pos)
	) WITH (fillfactor = 90);
	CREATE INDEX bk_records_kind ON {schema}.bk_records (trace_id, slot, kind, pos);
	CREATE INDEX bk_records_slot ON {schema}.bk_records (slot, seq);
	CREATE INDEX bk_records_persistent_ns ON {schema}.bk_records (slot, namespace, seq) WHERE scope = 'persistent';
	CREATE INDEX bk_records_persistent ON {schema}.bk_records (slot, seq) WHERE scope = 'persistent';
	CREATE TABLE {schema}.bk_traces (
		trace_id text COLLATE "C" PRIMARY KEY,
		n        bigint NOT NULL
	);
	CREATE TABLE {schema}.bk_once_keys (
		key       text COLLATE "C" PRIMARY KEY,
		record_id text COLLATE "C" NOT NULL
	);
	CREATE FUNCTION {schema}.bk_require(ok boolean, code text, message text) RETURNS boolean
	LANGUAGE plpgsql AS $fn$
	BEGIN
		IF ok IS NOT TRUE THEN
			RAISE EXCEPTION USING ERRCODE = code, MESSAGE = message;
		END IF;
		RETURN true;
	END
	$fn$;`,
	// Version 2: the span a record was written under (a W3C traceparent,
	// '' when untraced), and the namespace a trace belongs to on its
	// counter, so that Apply refuses a record of another namespace in the
	// same statement that locks the counter. Counters of version 1 take
	// the namespace of their trace's first record.
	`ALTER TABLE {schema}.bk_records ADD COLUMN span text NOT NULL DEFAULT '';
	ALTER TABLE {schema}.bk_traces ADD COLUMN namespace text COLLATE "C";
	UPDATE {schema}.bk_traces t SET namespace = (SELECT r.namespace FROM {schema}.bk_records r
		WHERE r.trace_id = t.trace_id ORDER BY r.pos LIMIT 1);`,
	// Version 3: once-keys per namespace. A key is claimed at most once in
	// its namespace, and one namespace neither claims nor sees another's
	// keys: the primary key becomes (namespace, key), under its old name.
	// A claim of an earlier version keeps its key and goes to the namespace
	// of the record that claimed it (the default namespace when that record
	// is gone), so that every claim stays in force where it was made.
	`ALTER TABLE {schema}.bk_once_keys ADD COLUMN namespace text COLLATE "C";
	UPDATE {schema}.bk_once_keys k SET namespace = COALESCE((SELECT r.namespace FROM {schema}.bk_records r
		WHERE r.id = k.record_id), 'default');
	ALTER TABLE {schema}.bk_once_keys ALTER COLUMN namespace SET NOT NULL;
	ALTER TABLE {schema}.bk_once_keys DROP CONSTRAINT bk_once_keys_pkey;
	ALTER TABLE {schema}.bk_once_keys ADD CONSTRAINT bk_once_keys_pkey PRIMARY KEY (namespace, key);`,
	// Version 4: each trace's change counter and decision state (see
	// store.StateStore), on the trace's counter row, which every batch
	// that touches the trace already locks: Apply keeps them in the batch's
	// transaction, and ReadState reads them with one primary-key lookup.
	//   version        one more for every batch that appends to the trace
	//                  or changes the status of one of its records
	//   state_version  the version the batch that stored state left (0:
	//                  none stored)
	//   state          the decision state's encoding, NULL when none
	//                  (TOASTed when large, so a batch that only counts
	//                  does not copy it)
	// Counters of earlier versions start at their record count (any value
	// above 0 would do: they hold no state, so the kernel reads the trace
	// whole once).
	`ALTER TABLE {schema}.bk_traces ADD COLUMN version bigint NOT NULL DEFAULT 0,
		ADD COLUMN state_version bigint NOT NULL DEFAULT 0,
		ADD COLUMN state bytea;
	UPDATE {schema}.bk_traces SET version = n;`,
	// Version 5: the change counter of each namespace's persistent
	// constraints (see store.StateStore), one row per namespace whose
	// persistent constraints have changed. Apply adds one to it, in the
	// batch's pipeline, for a batch that appends a persistent constraint of
	// the namespace or changes the status of one; the row lock orders such
	// batches of one namespace. ReadState reads it with the trace's row,
	// so that the kernel knows, without listing them, whether the
	// namespace's constraints changed since it last listed them.
	//   shared  one more for every such batch
	// A namespace without a row is at 0, as every namespace of an earlier
	// version starts (the kernel only compares the counter with what it
	// read before).
	`CREATE TABLE {schema}.bk_namespaces (
		namespace text COLLATE "C" PRIMARY KEY,
		shared    bigint NOT NULL
	);`,
	// Version 6: traces per namespace. A trace is named by its namespace
	// and its id, so one trace id in two namespaces is two traces: the
	// counters' primary key becomes (namespace, trace_id), and a trace's
	// positions, and the FindActive index, are per namespace and id. A
	// trace of an earlier version holds the records of one namespace
	// (Apply refused any other), the one its counter names, so every
	// trace, its counters and its state carry over as they are. A counter
	// without a namespace was made by a batch's condition alone, for a
	// trace that holds no record: it counts nothing and goes.
	`DELETE FROM {schema}.bk_traces WHERE namespace IS NULL AND n = 0;
	ALTER TABLE {schema}.bk_traces ALTER COLUMN namespace SET NOT NULL;
	ALTER TABLE {schema}.bk_traces DROP CONSTRAINT bk_traces_pkey;
	ALTER TABLE {schema}.bk_traces ADD CONSTRAINT bk_traces_pkey PRIMARY KEY (namespace, trace_id);
	ALTER TABLE {schema}.bk_records DROP CONSTRAINT bk_records_trace;
	ALTER TABLE {schema}.bk_records ADD CONSTRAINT bk_records_trace UNIQUE (trace_id, namespace, pos);
	DROP INDEX {schema}.bk_records_kind;
	CREATE INDEX bk_records_kind ON {schema}.bk_records (trace_id, namespace, slot, kind, pos);`,
	// Version 7: each trace's hash chain (package chain, store.Chainer).
	// A record's row holds its append event and, once its status changed
	// (at most once: only an ACTIVE record changes), that event too:
	//   link_seq, link  the append event's position in the trace's chain
	//                   and its link
	//   born_reason     the reason the record was appended with, once a
	//                   status change replaced it (its status then was
	//                   ACTIVE); NULL while it has not changed
	//   end_seq, end_link
	//                   the status change's position and link; NULL while
	//                   it has not changed
	// The trace's counter row holds where its chain stands, under the row
	// lock that orders the trace's writers:
	//   events    how many events the chain holds (the next position)
	//   head      the last event's link; NULL for none, read as 32 zero
	//             bytes, as is any value that is not 32 bytes long
	//   migrated  how many events this migration chained
	// None of them is indexed: Chain reads a trace through bk_records_trace,
	// and a status change stays a heap-only update. The records an
	// earlier version holds are chained after this statement, in Go (see
	// chainExisting): per trace, in position order, as append events of
	// the records as they are now.
	`ALTER TABLE {schema}.bk_records ADD COLUMN link bytea, ADD COLUMN link_seq bigint,
		ADD COLUMN born_reason text, ADD COLUMN end_seq bigint, ADD COLUMN end_link bytea;
	ALTER TABLE {schema}.bk_traces ADD COLUMN events bigint NOT NULL DEFAULT 0,
		ADD COLUMN head bytea, ADD COLUMN migrated bigint NOT NULL DEFAULT 0;`,
}

// migrationCode[v], when set, runs in the migration's transaction right
// after the SQL of migrations[v-1], the one that takes the schema to
// version v: work SQL cannot do alone.
var migrationCode = map[int]func(ctx context.Context, tx pgx.Tx, q *strings.Replacer) error{
	7: chainExisting,
}

// schemaVersion is the schema version this package creates and reads: the
// number of its migrations.
const schemaVersion = 7

func init() {
	if len(migrations) != schemaVersion {
		panic("pgstore: schemaVersion does not match the migrations")
	}
}

// versionTable holds the schema version in a single row.
const versionTable = `CREATE TABLE IF NOT EXISTS {schema}.bk_schema (
	only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
	version  integer NOT NULL
)`

// lockClass is the first key of the advisory lock that migrations take; the
// second is a hash of the schema name, so that stores in different schemas
// do not wait for each other.
const lockClass = 0x626b // "bk"

// migrate brings the schema up to date. A schema already at this version
// is only read: no lock, no DDL, so a role without DDL rights can use a
// schema an administrator migrated. Otherwise one transaction takes a
// transaction-level advisory lock and, holding it, reads the version again
// and runs the missing migrations: processes opening one database at once
// migrate it once between them, and a crash mid-migration rolls back
// whole.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string, createSchema bool) error {
	q := strings.NewReplacer("{schema}", pgx.Identifier{schema}.Sanitize())
	v, err := readVersion(ctx, pool, schema)
	if err != nil {
		return err
	}
	if v == len(migrations) {
		return nil
	}
	if v > len(migrations) {
		return tooNew(v)
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, hashtext($2))", int32(lockClass), schema); err != nil {
			return wrap("migrate: advisory lock", err, false)
		}
		if createSchema {
			var exists bool
			if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists); err != nil {
				return wrap("migrate", err, false)
			}
			if !exists {
				if _, err := tx.Exec(ctx, q.Replace("CREATE SCHEMA {schema}")); err != nil {
					return wrap("migrate: create schema", err, false)
				}
			}
		}
		if _, err := tx.Exec(ctx, q.Replace(versionTable)); err != nil {
			return wrap("migrate: version table", err, false)
		}
		v, err := readVersion(ctx, tx, schema)
		if err != nil {
			return err
		}
		if v > len(migrations) {
			return tooNew(v)
		}
		for ; v < len(migrations); v++ {
			if _, err := tx.Exec(ctx, q.Replace(migrations[v])); err != nil {
				return wrap(fmt.Sprintf("migration to version %d", v+1), err, false)
			}
			if code := migrationCode[v+1]; code != nil {
				if err := code(ctx, tx, q); err != nil {
					return wrap(fmt.Sprintf("migration to version %d", v+1), err, false)
				}
			}
		}
		_, err = tx.Exec(ctx, q.Replace(`INSERT INTO {schema}.bk_schema (version) VALUES ($1)
			ON CONFLICT (only_row) DO UPDATE SET version = excluded.version`), len(migrations))
		return wrap("migrate: schema version", err, false)
	})
}

func tooNew(v int) error {
	return fmt.Errorf("%w: version %d, this package knows up to %d", ErrSchemaTooNew, v, len(migrations))
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// readVersion returns the schema version: 0 when the schema or its version
// table does not exist yet.
func readVersion(ctx context.Context, q querier, schema string) (int, error) {
	table := pgx.Identifier{schema, "bk_schema"}.Sanitize()
	var exists bool
	if err := q.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", table).Scan(&exists); err != nil {
		return 0, wrap("schema version", err, false)
	}
	if !exists {
		return 0, nil
	}
	var v int32
	err := q.QueryRow(ctx, "SELECT version FROM "+table).Scan(&v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, wrap("schema version", err, false)
	}
	return int(v), nil
}

package sqlitestore_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

// schemaV1 is the schema version 1 of the package created, written out here
// rather than taken from the package so that the test keeps describing the
// files that version wrote, whatever later versions do.
const schemaV1 = `CREATE TABLE records (
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
CREATE INDEX records_persistent ON records (slot, status) WHERE scope = 'persistent';
PRAGMA user_version = 1;`

// writeV1 creates a version-1 database at path holding a persistent
// constraint and a percept, as version 1 stored them.
func writeV1(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), schemaV1); err != nil {
		t.Fatalf("creating a version-1 database: %v", err)
	}
	const insert = `INSERT INTO records (id, trace_id, slot, mode, kind, payload, role, writer, ts_ms,
		input_refs, confidence, ttl_ms, evidence_refs, status, reason, scope) VALUES
		('constraints:old:1', 'old', 'constraints', 'commit', 'speed_limit',
		 '{"blocks_field":"too_fast","enabled":true,"name":"speed_limit"}', 'symbolic_validator', 'rules', 5,
		 NULL, NULL, 0, NULL, 'ACTIVE', 'COMMITTED', 'persistent'),
		('percepts:old:2', 'old', 'percepts', 'commit', 'door', '{"open":true}', 'tool', 'sensor', 6,
		 '["constraints:old:1"]', 0.9, 1000, '[]', 'ACTIVE', 'COMMITTED', 'episode')`
	if _, err := db.ExecContext(t.Context(), insert); err != nil {
		t.Fatalf("writing version-1 records: %v", err)
	}
}

// downToV7 takes a current database back to version 7, for tests that
// write an earlier version as a current file without what came later: it
// drops what version 8 added (the chain).
const downToV7 = `DROP INDEX records_ended;
	ALTER TABLE records DROP COLUMN link;
	ALTER TABLE records DROP COLUMN link_seq;
	ALTER TABLE records DROP COLUMN born_reason;
	ALTER TABLE records DROP COLUMN end_seq;
	ALTER TABLE records DROP COLUMN end_link;
	ALTER TABLE traces DROP COLUMN events;
	ALTER TABLE traces DROP COLUMN head;
	ALTER TABLE traces DROP COLUMN migrated;
	PRAGMA user_version = 7;
`

// userVersion reads the schema version of the database at path.
func userVersion(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int
	if err := db.QueryRowContext(t.Context(), "PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestStoreMigrateV1 opens a database version 1 wrote: it is migrated, its
// records read back in the default namespace, and once-keys and namespaced
// listings work on it.
func TestStoreMigrateV1(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "v1.db")
	writeV1(t, path)

	// Stores opening the old file at once migrate it once between them.
	stores := make([]*sqlitestore.Store, 3)
	errs := make([]error, len(stores))
	var wg sync.WaitGroup
	for i := range stores {
		wg.Go(func() { stores[i], errs[i] = sqlitestore.Open(ctx, path) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d of a version-1 database: %v", i, err)
		}
		t.Cleanup(func() { _ = stores[i].Close() })
	}
	s := stores[0]

	constraint := blackboard.Record{
		ID: "constraints:old:1", Slot: blackboard.Constraints, Mode: blackboard.ModeCommit, Kind: "speed_limit",
		Payload:    blackboard.Payload{"blocks_field": "too_fast", "enabled": true, "name": "speed_limit"},
		Provenance: blackboard.Provenance{Role: blackboard.RoleSymbolic, Writer: "rules", TraceID: "old", TimestampMS: 5},
		Status:     blackboard.StatusActive, Reason: reason.Committed, Scope: blackboard.ScopePersistent,
		Namespace: blackboard.DefaultNamespace,
	}
	percept := blackboard.Record{
		ID: "percepts:old:2", Slot: blackboard.Percepts, Mode: blackboard.ModeCommit, Kind: "door",
		Payload: blackboard.Payload{"open": true},
		Provenance: blackboard.Provenance{Role: blackboard.RoleTool, Writer: "sensor", TraceID: "old", TimestampMS: 6,
			InputRefs: []string{constraint.ID}, Confidence: new(0.9), TTLMS: 1000},
		EvidenceRefs: []string{},
		Status:       blackboard.StatusActive, Reason: reason.Committed, Scope: blackboard.ScopeEpisode,
		Namespace: blackboard.DefaultNamespace,
	}
	for _, st := range stores {
		if got := trace(t, st, "old"); !reflect.DeepEqual(got, []blackboard.Record{constraint, percept}) {
			t.Fatalf("version-1 records after migration:\n got  %+v\n want %+v (namespace %q)", got, []blackboard.Record{constraint, percept}, blackboard.DefaultNamespace)
		}
	}
	persistent := func(ns string) []blackboard.Record {
		return records(t, s.ListSlot(ctx, blackboard.Constraints, store.Filter{Status: blackboard.StatusActive, Scope: blackboard.ScopePersistent, Namespace: ns}))
	}
	if got := persistent(blackboard.DefaultNamespace); !reflect.DeepEqual(got, []blackboard.Record{constraint}) {
		t.Errorf("a version-1 persistent constraint is not listed in the default namespace: %+v", got)
	}
	if got := persistent("tenant"); len(got) != 0 {
		t.Errorf("a version-1 persistent constraint is listed in another namespace: %+v", got)
	}

	// Version 5 counts the traces of earlier versions from their records.
	if st, err := s.ReadState(ctx, "", "old"); err != nil || !reflect.DeepEqual(st, store.TraceState{Len: 2, Namespace: blackboard.DefaultNamespace, Version: 2}) {
		t.Errorf("ReadState of a version-1 trace after migration = %+v, %v; want Len 2, the default namespace, Version 2 and no state", st, err)
	}
	next := record("old", 3)
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{next}, Trace: "old", TraceLen: 2, State: state("s"), Version: 2}); err != nil {
		t.Fatalf("a conditional batch with a state on a migrated trace: %v", err)
	}
	if st, err := s.ReadState(ctx, "", "old"); err != nil || st.Len != 3 || st.Version != 3 || st.StateVersion != 3 || string(st.Data) != "s" {
		t.Errorf("ReadState after a batch on a migrated trace = %+v, %v; want Len, Version and StateVersion 3 and the state", st, err)
	}

	// The migrated file takes namespaced records and once-keys.
	fresh := record("new", 1)
	fresh.Slot, fresh.ID, fresh.Scope, fresh.Namespace = blackboard.Constraints, "constraints:new:1", blackboard.ScopePersistent, "tenant"
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{fresh}, Claims: []store.Claim{{Key: "k", RecordID: fresh.ID}}}); err != nil {
		t.Fatalf("Apply with a claim on a migrated database: %v", err)
	}
	if got := persistent("tenant"); !reflect.DeepEqual(got, []blackboard.Record{fresh}) {
		t.Errorf("a namespaced record on a migrated database: %+v", got)
	}
	// Version 6 counts the namespaces' constraint changes from 0.
	if st, err := s.ReadState(ctx, "tenant", "new"); err != nil || st.Shared != 1 {
		t.Errorf("ReadState(tenant).Shared after a persistent constraint on a migrated database = %d, %v; want 1", st.Shared, err)
	}
	if st, err := s.ReadState(ctx, "", "old"); err != nil || st.Shared != 0 {
		t.Errorf("ReadState(default).Shared of a migrated database whose constraints no batch changed = %d, %v; want 0", st.Shared, err)
	}
	if id, err := stores[1].ClaimedBy(ctx, "", "k"); err != nil || id != fresh.ID {
		t.Errorf("ClaimedBy on a migrated database: %q, %v; want %q", id, err, fresh.ID)
	}
	for _, st := range stores {
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if v := userVersion(t, path); v != schemaVersion {
		t.Errorf("user_version after migrating a version-1 database: %d, want %d", v, schemaVersion)
	}

	// Opening the migrated file again changes nothing.
	s = mustOpen(t, path)
	if got, want := len(all(t, s)), 4; got != want {
		t.Errorf("a migrated database reopened holds %d records, want %d", got, want)
	}
	if v := userVersion(t, path); v != schemaVersion {
		t.Errorf("user_version after reopening: %d, want %d", v, schemaVersion)
	}
}

// TestStoreMigrateOnceKeysV3 opens a database whose once-keys are of
// version 3, one key space for every namespace: each claim is kept, in the
// namespace of the record that claimed it (the default one when that
// record is gone), and is in force there.
func TestStoreMigrateOnceKeysV3(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v3.db")
	writeV1(t, path)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	// Versions 2 and 3 as they were released.
	const upToV3 = `ALTER TABLE records ADD COLUMN namespace TEXT NOT NULL DEFAULT 'default';
	CREATE INDEX records_persistent_ns ON records (slot, status, namespace) WHERE scope = 'persistent';
	CREATE TABLE once_keys (key TEXT NOT NULL PRIMARY KEY, record_id TEXT NOT NULL) STRICT, WITHOUT ROWID;
	ALTER TABLE records ADD COLUMN span TEXT NOT NULL DEFAULT '';
	UPDATE records SET namespace = 'acme' WHERE id = 'percepts:old:2';
	INSERT INTO once_keys (key, record_id) VALUES ('k-acme', 'percepts:old:2'), ('k-gone', 'actions:gone:1');
	PRAGMA user_version = 3;`
	if _, err := db.ExecContext(t.Context(), upToV3); err != nil {
		t.Fatalf("creating a version-3 database: %v", err)
	}
	db.Close()
	s, err := sqlitestore.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open of a version-3 database: %v", err)
	}
	defer s.Close()
	ctx := t.Context()
	if id, err := s.ClaimedBy(ctx, "acme", "k-acme"); err != nil || id != "percepts:old:2" {
		t.Errorf("a version-3 claim after migration: ClaimedBy(acme) = %q, %v; want it in its record's namespace", id, err)
	}
	if _, err := s.ClaimedBy(ctx, "", "k-acme"); err == nil {
		t.Error("a version-3 claim of namespace acme answers for the default namespace")
	}
	if id, err := s.ClaimedBy(ctx, "", "k-gone"); err != nil || id != "actions:gone:1" {
		t.Errorf("a version-3 claim whose record is gone: ClaimedBy(default) = %q, %v; want it kept in the default namespace", id, err)
	}
	r := blackboard.Record{ID: "actions:new:1", Slot: blackboard.Actions, Mode: blackboard.ModeCommit, Kind: "refund", Payload: blackboard.Payload{},
		Provenance: blackboard.Provenance{Role: blackboard.RoleKernel, Writer: "kernel", TraceID: "new"}, Status: blackboard.StatusActive,
		Reason: reason.Committed, Scope: blackboard.ScopeEpisode, Namespace: "acme"}
	err = s.Apply(ctx, store.Batch{Appends: []blackboard.Record{r}, Claims: []store.Claim{{Key: "k-acme", RecordID: r.ID, Namespace: "acme"}}})
	if !errors.Is(err, blackboard.ErrDuplicateKey) {
		t.Errorf("claiming a migrated key again in its namespace: %v, want ErrDuplicateKey", err)
	}
	if v := userVersion(t, path); v != schemaVersion {
		t.Errorf("user_version after migrating a version-3 database: %d, want %d", v, schemaVersion)
	}
}

// TestStoreMigrateSharedV5 opens a database of version 5, which keeps no
// change counter of a namespace's persistent constraints: every namespace
// starts at 0, the persistent constraints it already holds included, and
// the batches that follow count from there, a status change of a
// constraint of version 5 among them. Version 6 only adds the table
// namespaces, so a version-5 file is written here as a current one without
// that table.
func TestStoreMigrateSharedV5(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "v5.db")
	old := record("old", 1)
	old.ID, old.Slot, old.Scope, old.Namespace = "constraints:old:1", blackboard.Constraints, blackboard.ScopePersistent, "acme"
	s := mustOpen(t, path)
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{old}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, downToV7+"DROP TABLE namespaces; PRAGMA user_version = 5;"); err != nil {
		t.Fatalf("writing a version-5 database: %v", err)
	}
	db.Close()

	s = mustOpen(t, path)
	if v := userVersion(t, path); v != schemaVersion {
		t.Errorf("user_version after migrating a version-5 database: %d, want %d", v, schemaVersion)
	}
	shared := func(ns, trace string) uint64 {
		t.Helper()
		st, err := s.ReadState(ctx, ns, trace)
		if err != nil {
			t.Fatal(err)
		}
		return st.Shared
	}
	if st, err := s.ReadState(ctx, "acme", "old"); err != nil || !reflect.DeepEqual(st, store.TraceState{Len: 1, Namespace: "acme", Version: 1}) {
		t.Errorf("ReadState of a version-5 trace after migration = %+v, %v; want Len 1, namespace acme, Version 1, Shared 0 and no state", st, err)
	}
	if err := s.Apply(ctx, store.Batch{Invalidations: []store.Invalidation{{ID: old.ID, Status: blackboard.StatusInvalidated, Reason: reason.StaleEvidence}}}); err != nil {
		t.Fatal(err)
	}
	if got := shared("acme", "unknown"); got != 1 {
		t.Errorf("Shared after a status change of a version-5 constraint = %d, want 1", got)
	}
	fresh := old
	fresh.ID, fresh.Provenance.TraceID = "constraints:new:1", "new"
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{fresh}}); err != nil {
		t.Fatal(err)
	}
	if got := shared("acme", "old"); got != 2 {
		t.Errorf("Shared after an append of a persistent constraint = %d, want 2", got)
	}
	if got := shared("", "old"); got != 0 {
		t.Errorf("Shared of the default namespace, whose constraints no batch changed = %d, want 0", got)
	}
}

// A version-6 file keeps its traces when version 7 names each trace by its
// namespace and id: a trace's counters, state and records carry over, and
// afterwards the same id in another namespace is a trace of its own. The
// version-6 file is written here as a current one whose traces table is
// rebuilt with the trace id alone as its primary key.
func TestStoreMigrateTracesV6(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "v6.db")
	old := record("old", 1)
	old.ID, old.Namespace = "percepts:old:1", "acme"
	s := mustOpen(t, path)
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{old}, Trace: "old", TraceNamespace: "acme", State: state("kept"), Version: 0}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, downToV7+`CREATE TABLE traces_v6 (
		trace_id      TEXT    NOT NULL PRIMARY KEY,
		namespace     TEXT    NOT NULL,
		n             INTEGER NOT NULL,
		version       INTEGER NOT NULL,
		state_version INTEGER NOT NULL DEFAULT 0,
		state         BLOB
	) STRICT;
	INSERT INTO traces_v6 SELECT trace_id, namespace, n, version, state_version, state FROM traces;
	DROP TABLE traces;
	ALTER TABLE traces_v6 RENAME TO traces;
	PRAGMA user_version = 6;`); err != nil {
		t.Fatalf("writing a version-6 database: %v", err)
	}
	db.Close()

	s = mustOpen(t, path)
	if v := userVersion(t, path); v != schemaVersion {
		t.Errorf("user_version after migrating a version-6 database: %d, want %d", v, schemaVersion)
	}
	st, err := s.ReadState(ctx, "acme", "old")
	if err != nil || st.Len != 1 || st.Namespace != "acme" || st.Version != 1 || st.StateVersion != 1 || string(st.Data) != "kept" {
		t.Errorf("ReadState of a version-6 trace after migration = %+v, %v; want Len 1, namespace acme, Version 1 and its state", st, err)
	}
	// The same id in the default namespace is a trace of its own.
	other := record("old", 1)
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{other}, Trace: "old", TraceLen: 0}); !errors.Is(err, store.ErrDuplicateID) {
		t.Errorf("an id the store holds: %v, want ErrDuplicateID", err)
	}
	other.ID = store.RecordID(blackboard.Percepts, "", "old", 1) + "-default"
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{other}, Trace: "old", TraceLen: 0}); err != nil {
		t.Errorf("the default namespace's trace old, after migration: %v", err)
	}
	for _, c := range []struct {
		ns   string
		want string
	}{{"acme", old.ID}, {"", other.ID}} {
		recs := records(t, s.ListTrace(ctx, c.ns, "old"))
		if len(recs) != 1 || recs[0].ID != c.want {
			t.Errorf("ListTrace(%q, old) after migration = %v, want %s alone", c.ns, recs, c.want)
		}
	}
	if n, err := countTrace(ctx, s, "acme", "old"); err != nil || n != 1 {
		t.Errorf("ReadState(acme, old).Len = %d, %v; want 1", n, err)
	}
}

// A file of an earlier version is chained when a writer opens it: each
// trace's records, in append order, as append events with the status
// they have then, and Head says how many events the migration chained.
// Every trace verifies, and the batches that follow extend the chains.
func TestStoreMigrateChains(t *testing.T) {
	ctx := t.Context()

	// A version-1 file: trace old, two records.
	v1 := filepath.Join(t.TempDir(), "v1.db")
	writeV1(t, v1)
	s := mustOpen(t, v1)
	if h, err := store.VerifyTrace(ctx, s, "", "old", -1); err != nil || h.Len != 2 || h.Migrated != 2 {
		t.Errorf("VerifyTrace of a version-1 trace after migration = %+v, %v; want 2 events, 2 migrated", h, err)
	}

	// A version-7 file, written as a current one without version 8:
	// traces in two namespaces, records whose status changed, a trace of
	// more than a page.
	path := filepath.Join(t.TempDir(), "v7.db")
	s = mustOpen(t, path)
	var b store.Batch
	for n := 1; n <= 300; n++ {
		b.Appends = append(b.Appends, record("long", n))
	}
	a1, a2 := record("a", 1), record("a", 2)
	x1 := record("a", 1)
	x1.ID, x1.Namespace = store.RecordID(blackboard.Percepts, "acme", "a", 1), "acme"
	b.Appends = append(b.Appends, a1, x1, a2)
	mustApply(t, s, b)
	mustApply(t, s, store.Batch{Invalidations: []store.Invalidation{
		{ID: a1.ID, Status: blackboard.StatusInvalidated, Reason: reason.SupersededByCommit},
		{ID: record("long", 7).ID, Status: blackboard.StatusExpired, Reason: "TTL"},
	}})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, downToV7); err != nil {
		t.Fatalf("writing a version-7 database: %v", err)
	}
	db.Close()

	s = mustOpen(t, path)
	if v := userVersion(t, path); v != schemaVersion {
		t.Errorf("user_version after migrating a version-7 database: %d, want %d", v, schemaVersion)
	}
	for _, c := range []struct {
		ns, trace string
		len       uint64
	}{{"", "long", 300}, {"", "a", 2}, {"acme", "a", 1}} {
		h, err := store.VerifyTrace(ctx, s, c.ns, c.trace, -1)
		if err != nil || h.Len != c.len || h.Migrated != c.len {
			t.Errorf("VerifyTrace(%q, %q) after migration = %+v, %v; want %d events, all migrated", c.ns, c.trace, h, err, c.len)
		}
	}
	// The migrated records are appends with the status they had.
	for e, err := range s.Chain(ctx, "", "a") {
		if err != nil {
			t.Fatal(err)
		}
		if e.Op != chain.OpAppend || e.Record.ID == a1.ID && e.Record.Status != blackboard.StatusInvalidated {
			t.Errorf("a migrated event: %d %s %s %s, want appends with their status", e.Seq, e.Op, e.Record.ID, e.Record.Status)
		}
	}

	// Batches after the migration extend the chains: a status change of a
	// migrated record, an append.
	mustApply(t, s, store.Batch{
		Invalidations: []store.Invalidation{{ID: a2.ID, Status: blackboard.StatusInvalidated, Reason: reason.SupersededByCommit}},
		Appends:       []blackboard.Record{record("a", 3)},
	})
	if h, err := store.VerifyTrace(ctx, s, "", "a", -1); err != nil || h.Len != 4 || h.Migrated != 2 {
		t.Errorf("VerifyTrace of a migrated trace after a batch = %+v, %v; want 4 events, 2 migrated", h, err)
	}
	// A status change of a record the migration chained as changed is
	// refused, as before.
	if err := s.Apply(ctx, store.Batch{Invalidations: []store.Invalidation{{ID: a1.ID, Status: blackboard.StatusExpired, Reason: "TTL"}}}); !errors.Is(err, store.ErrNotActive) {
		t.Errorf("a status change of a migrated INVALIDATED record: %v, want ErrNotActive", err)
	}
	// And an edit of a migrated record is caught.
	db, err = sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `UPDATE records SET payload = '{"n":99}' WHERE id = ?`, record("long", 100).ID); err != nil {
		t.Fatal(err)
	}
	_, err = store.VerifyTrace(ctx, s, "", "long", -1)
	if brk := (*chain.Break)(nil); !errors.As(err, &brk) || brk.Fault != chain.FaultContent || brk.Seq != 99 {
		t.Errorf("an edited migrated record: VerifyTrace = %v, want a content break at event 99", err)
	}
}

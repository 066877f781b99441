package pgstore

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/internal/pgtest"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// TestMigrateOnceKeysV2 opens a schema whose once-keys are of version 2,
// one key space for every namespace: each claim is kept, in the namespace
// of the record that claimed it (the default one when that record is
// gone), and is in force there.
func TestMigrateOnceKeysV2(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t)
	q := strings.NewReplacer("{schema}", pgx.Identifier{schema}.Sanitize())
	setup := []string{"CREATE SCHEMA {schema}", migrations[0], migrations[1], versionTable,
		"INSERT INTO {schema}.bk_schema (version) VALUES (2)",
		`INSERT INTO {schema}.bk_records (id, trace_id, pos, slot, mode, kind, payload, role, writer, ts_ms, ttl_ms, status, reason, scope, namespace)
			VALUES ('actions:old:1', 'old', 1, 'actions', 'commit', 'refund', '{}', 'kernel', 'kernel', 1, 0, 'ACTIVE', 'COMMITTED', 'episode', 'acme')`,
		`INSERT INTO {schema}.bk_once_keys (key, record_id) VALUES ('k-acme', 'actions:old:1'), ('k-gone', 'actions:gone:1')`,
	}
	for _, stmt := range setup {
		if _, err := pool.Exec(ctx, q.Replace(stmt)); err != nil {
			t.Fatalf("creating a version-2 schema: %v", err)
		}
	}
	s, err := New(ctx, pool, WithSchema(schema))
	if err != nil {
		t.Fatalf("New on a version-2 schema: %v", err)
	}
	defer s.Close()
	if id, err := s.ClaimedBy(ctx, "acme", "k-acme"); err != nil || id != "actions:old:1" {
		t.Errorf("a version-2 claim after migration: ClaimedBy(acme) = %q, %v; want it in its record's namespace", id, err)
	}
	if _, err := s.ClaimedBy(ctx, "", "k-acme"); !errors.Is(err, blackboard.ErrNotFound) {
		t.Errorf("a version-2 claim of namespace acme, asked in the default namespace: %v, want ErrNotFound", err)
	}
	if id, err := s.ClaimedBy(ctx, "", "k-gone"); err != nil || id != "actions:gone:1" {
		t.Errorf("a version-2 claim whose record is gone: ClaimedBy(default) = %q, %v", id, err)
	}
	err = s.Apply(ctx, store.Batch{Claims: []store.Claim{{Key: "k-acme", RecordID: "actions:old:1", Namespace: "acme"}}})
	if !errors.Is(err, blackboard.ErrDuplicateKey) {
		t.Errorf("claiming a migrated key again in its namespace: %v, want ErrDuplicateKey", err)
	}
	if err := s.Apply(ctx, store.Batch{Claims: []store.Claim{{Key: "k-acme", RecordID: "actions:old:1", Namespace: "globex"}}}); err != nil {
		t.Errorf("claiming the key in another namespace: %v", err)
	}
}

// state is a decision state whose encoding is its text.
type state string

func (s state) MarshalBinary() ([]byte, error) { return []byte(s), nil }

// TestMigrateStateV3 opens a schema of version 3, whose trace counters
// hold no change counter or state: each trace starts with its record count
// as its version and no state, and the batches that follow count from
// there.
func TestMigrateStateV3(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t)
	q := strings.NewReplacer("{schema}", pgx.Identifier{schema}.Sanitize())
	setup := []string{"CREATE SCHEMA {schema}", migrations[0], migrations[1], migrations[2], versionTable,
		"INSERT INTO {schema}.bk_schema (version) VALUES (3)",
		`INSERT INTO {schema}.bk_records (id, trace_id, pos, slot, mode, kind, payload, role, writer, ts_ms, ttl_ms, status, reason, scope, namespace)
			VALUES ('percepts:old:1', 'old', 1, 'percepts', 'commit', 'door', '{}', 'tool', 'sensor', 1, 0, 'ACTIVE', 'COMMITTED', 'episode', 'acme'),
			       ('percepts:old:2', 'old', 2, 'percepts', 'commit', 'door', '{}', 'tool', 'sensor', 2, 0, 'ACTIVE', 'COMMITTED', 'episode', 'acme')`,
		`INSERT INTO {schema}.bk_traces (trace_id, n, namespace) VALUES ('old', 2, 'acme')`,
	}
	for _, stmt := range setup {
		if _, err := pool.Exec(ctx, q.Replace(stmt)); err != nil {
			t.Fatalf("creating a version-3 schema: %v", err)
		}
	}
	s, err := New(ctx, pool, WithSchema(schema))
	if err != nil {
		t.Fatalf("New on a version-3 schema: %v", err)
	}
	defer s.Close()
	if st, err := s.ReadState(ctx, "acme", "old"); err != nil || !reflect.DeepEqual(st, store.TraceState{Len: 2, Namespace: "acme", Version: 2}) {
		t.Errorf("ReadState of a version-3 trace after migration = %+v, %v; want Len 2, namespace acme, Version 2 and no state", st, err)
	}
	r := blackboard.Record{ID: "percepts:old:3", Slot: blackboard.Percepts, Mode: blackboard.ModeCommit, Kind: "door", Payload: blackboard.Payload{},
		Provenance: blackboard.Provenance{Role: blackboard.RoleTool, Writer: "sensor", TraceID: "old"}, Status: blackboard.StatusActive,
		Reason: reason.Committed, Scope: blackboard.ScopeEpisode, Namespace: "acme"}
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{r}, Trace: "old", TraceNamespace: "acme", TraceLen: 2, State: state("s"), Version: 2}); err != nil {
		t.Fatalf("a conditional batch with a state on a migrated trace: %v", err)
	}
	if st, err := s.ReadState(ctx, "acme", "old"); err != nil || st.Len != 3 || st.Version != 3 || st.StateVersion != 3 || string(st.Data) != "s" {
		t.Errorf("ReadState after a batch on a migrated trace = %+v, %v; want Len, Version and StateVersion 3 and the state", st, err)
	}
}

// TestMigrateSharedV4 opens a schema of version 4, which keeps no change
// counter of a namespace's persistent constraints: every namespace starts
// at 0, the persistent constraints it already holds included, and the
// batches that follow count from there, a status change of a constraint
// of version 4 among them.
func TestMigrateSharedV4(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t)
	q := strings.NewReplacer("{schema}", pgx.Identifier{schema}.Sanitize())
	setup := []string{"CREATE SCHEMA {schema}", migrations[0], migrations[1], migrations[2], migrations[3], versionTable,
		"INSERT INTO {schema}.bk_schema (version) VALUES (4)",
		`INSERT INTO {schema}.bk_records (id, trace_id, pos, slot, mode, kind, payload, role, writer, ts_ms, ttl_ms, status, reason, scope, namespace)
			VALUES ('constraints:old:1', 'old', 1, 'constraints', 'commit', 'max_refund', '{}', 'symbolic_validator', 'rules', 1, 0, 'ACTIVE', 'COMMITTED', 'persistent', 'acme')`,
		`INSERT INTO {schema}.bk_traces (trace_id, n, namespace, version) VALUES ('old', 1, 'acme', 1)`,
	}
	for _, stmt := range setup {
		if _, err := pool.Exec(ctx, q.Replace(stmt)); err != nil {
			t.Fatalf("creating a version-4 schema: %v", err)
		}
	}
	s, err := New(ctx, pool, WithSchema(schema))
	if err != nil {
		t.Fatalf("New on a version-4 schema: %v", err)
	}
	defer s.Close()
	if v, err := readVersion(ctx, pool, schema); err != nil || v != SchemaVersion {
		t.Fatalf("schema version after New = %d, %v; want %d", v, err, SchemaVersion)
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
		t.Errorf("ReadState of a version-4 trace after migration = %+v, %v; want Len 1, namespace acme, Version 1, Shared 0 and no state", st, err)
	}
	if err := s.Apply(ctx, store.Batch{Invalidations: []store.Invalidation{{ID: "constraints:old:1", Status: blackboard.StatusInvalidated, Reason: reason.StaleEvidence}}}); err != nil {
		t.Fatal(err)
	}
	if got := shared("acme", "unknown"); got != 1 {
		t.Errorf("Shared after a status change of a version-4 constraint = %d, want 1", got)
	}
	r := blackboard.Record{ID: "constraints:new:1", Slot: blackboard.Constraints, Mode: blackboard.ModeCommit, Kind: "max_refund", Payload: blackboard.Payload{},
		Provenance: blackboard.Provenance{Role: blackboard.RoleSymbolic, Writer: "rules", TraceID: "new"}, Status: blackboard.StatusActive,
		Reason: reason.Committed, Scope: blackboard.ScopePersistent, Namespace: "acme"}
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{r}}); err != nil {
		t.Fatal(err)
	}
	if got := shared("acme", "old"); got != 2 {
		t.Errorf("Shared after an append of a persistent constraint = %d, want 2", got)
	}
	if got := shared("", "old"); got != 0 {
		t.Errorf("Shared of the default namespace, whose constraints no batch changed = %d, want 0", got)
	}
}

// TestMigrateTracesV5 opens a schema whose traces are of version 5, named
// by their id alone: a trace's counters, state and records carry over into
// its namespace, a counter a condition alone made (no namespace, no
// records) goes, and afterwards the same id in another namespace is a
// trace of its own.
func TestMigrateTracesV5(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t)
	q := strings.NewReplacer("{schema}", pgx.Identifier{schema}.Sanitize())
	setup := []string{"CREATE SCHEMA {schema}"}
	setup = append(setup, migrations[:5]...)
	setup = append(setup, versionTable, "INSERT INTO {schema}.bk_schema (version) VALUES (5)",
		`INSERT INTO {schema}.bk_records (id, trace_id, pos, slot, mode, kind, payload, role, writer, ts_ms, ttl_ms, status, reason, scope, namespace)
			VALUES ('percepts:old:1', 'old', 1, 'percepts', 'commit', 'order', '{}', 'tool', 'w', 1, 0, 'ACTIVE', 'COMMITTED', 'episode', 'acme')`,
		`INSERT INTO {schema}.bk_traces (trace_id, n, namespace, version, state_version, state) VALUES ('old', 1, 'acme', 1, 1, 'kept')`,
		`INSERT INTO {schema}.bk_traces (trace_id, n, namespace, version) VALUES ('empty', 0, NULL, 0)`,
	)
	for _, stmt := range setup {
		if _, err := pool.Exec(ctx, q.Replace(stmt)); err != nil {
			t.Fatalf("creating a version-5 schema: %v", err)
		}
	}
	s, err := New(ctx, pool, WithSchema(schema))
	if err != nil {
		t.Fatalf("New on a version-5 schema: %v", err)
	}
	defer s.Close()
	if v, err := readVersion(ctx, pool, schema); err != nil || v != SchemaVersion {
		t.Fatalf("schema version after New = %d, %v; want %d", v, err, SchemaVersion)
	}
	st, err := s.ReadState(ctx, "acme", "old")
	if err != nil || st.Len != 1 || st.Namespace != "acme" || st.Version != 1 || st.StateVersion != 1 || string(st.Data) != "kept" {
		t.Errorf("ReadState of a version-5 trace after migration = %+v, %v; want Len 1, namespace acme, Version 1 and its state", st, err)
	}
	next := blackboard.Record{ID: "percepts:old:2", Slot: blackboard.Percepts, Mode: blackboard.ModeCommit, Kind: "order", Payload: blackboard.Payload{},
		Provenance: blackboard.Provenance{Role: blackboard.RoleTool, Writer: "w", TraceID: "old"}, Status: blackboard.StatusActive,
		Reason: reason.Committed, Scope: blackboard.ScopeEpisode, Namespace: "acme"}
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{next}, Trace: "old", TraceNamespace: "acme", TraceLen: 1}); err != nil {
		t.Errorf("appending to a version-5 trace after migration: %v", err)
	}
	other := next
	other.ID, other.Namespace = store.RecordID(blackboard.Percepts, "", "old", 1)+"-default", ""
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{other}, Trace: "old", TraceLen: 0}); err != nil {
		t.Errorf("the default namespace's trace old, after migration: %v", err)
	}
	for ns, want := range map[string]int{"acme": 2, "": 1} {
		n := 0
		for r, err := range s.ListTrace(ctx, ns, "old") {
			if err != nil || cmp.Or(r.Namespace, blackboard.DefaultNamespace) != cmp.Or(ns, blackboard.DefaultNamespace) {
				t.Errorf("ListTrace(%q, old) lists %s of namespace %q (%v)", ns, r.ID, r.Namespace, err)
			}
			n++
		}
		if n != want {
			t.Errorf("ListTrace(%q, old) after migration: %d records, want %d", ns, n, want)
		}
	}
}

// TestMigrateChainsV6 opens a schema of version 6, which keeps no chains:
// every trace's records are chained as they are, in position order (a
// trace longer than one batch of the migration among them), each trace's
// head says how many events that was, and the batches that follow extend
// the chains from there.
func TestMigrateChainsV6(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t)
	q := strings.NewReplacer("{schema}", pgx.Identifier{schema}.Sanitize())
	const big = migrateBatch + 100
	setup := []string{"CREATE SCHEMA {schema}"}
	setup = append(setup, migrations[:6]...)
	setup = append(setup, versionTable, "INSERT INTO {schema}.bk_schema (version) VALUES (6)",
		`INSERT INTO {schema}.bk_records (id, trace_id, pos, slot, mode, kind, payload, role, writer, ts_ms, ttl_ms, input_refs, confidence, status, reason, scope, namespace, span)
			VALUES ('percepts@acme:old:1', 'old', 1, 'percepts', 'commit', 'order', '{"n": 1, "l": [1, "a", null]}', 'tool', 'w', 1, 0, '{x,y}', 0.5, 'ACTIVE', 'COMMITTED', 'episode', 'acme', ''),
			       ('percepts@acme:old:2', 'old', 2, 'percepts', 'commit', 'order', '{}', 'tool', 'w', 2, 0, NULL, NULL, 'INVALIDATED', 'STALE_EVIDENCE', 'episode', 'acme', ''),
			       ('actions@acme:old:3', 'old', 3, 'actions', 'commit', 'refund', '{"amount": 4.5}', 'kernel', 'kernel', 3, 0, NULL, NULL, 'EXPIRED', 'TTL_EXPIRED', 'episode', 'acme', 's')`,
		`INSERT INTO {schema}.bk_records (id, trace_id, pos, slot, mode, kind, payload, role, writer, ts_ms, ttl_ms, status, reason, scope, namespace)
			SELECT 'percepts:big:' || g, 'big', g, 'percepts', 'commit', 'door', jsonb_build_object('n', g), 'tool', 'w', g, 0, 'ACTIVE', 'COMMITTED', 'episode', 'default'
			FROM generate_series(1, `+fmt.Sprint(big)+`) AS g`,
		`INSERT INTO {schema}.bk_traces (trace_id, n, namespace, version) VALUES ('old', 3, 'acme', 3), ('big', `+fmt.Sprint(big)+`, 'default', 1), ('cond', 0, 'default', 0)`,
	)
	for _, stmt := range setup {
		if _, err := pool.Exec(ctx, q.Replace(stmt)); err != nil {
			t.Fatalf("creating a version-6 schema: %v", err)
		}
	}
	s, err := New(ctx, pool, WithSchema(schema))
	if err != nil {
		t.Fatalf("New on a version-6 schema: %v", err)
	}
	defer s.Close()
	if v, err := readVersion(ctx, pool, schema); err != nil || v != SchemaVersion {
		t.Fatalf("schema version after New = %d, %v; want %d", v, err, SchemaVersion)
	}
	for _, tc := range []struct {
		ns, trace string
		n         uint64
	}{{"acme", "old", 3}, {"", "big", big}, {"", "cond", 0}} {
		h, err := store.VerifyTrace(ctx, s, tc.ns, tc.trace, -1)
		if err != nil || h.Len != tc.n || h.Migrated != tc.n {
			t.Errorf("VerifyTrace(%q, %q) after migration = %+v, %v; want %d events, all migrated", tc.ns, tc.trace, h, err, tc.n)
		}
	}
	// The migrated events are the records as they were found, statuses
	// included.
	var got []blackboard.Status
	for e, err := range s.Chain(ctx, "acme", "old") {
		if err != nil || e.Op != chain.OpAppend {
			t.Fatalf("Chain(acme, old): %+v, %v", e, err)
		}
		got = append(got, e.Record.Status)
	}
	if want := []blackboard.Status{blackboard.StatusActive, blackboard.StatusInvalidated, blackboard.StatusExpired}; !slices.Equal(got, want) {
		t.Errorf("the migrated events' statuses = %v, want %v", got, want)
	}
	next := blackboard.Record{ID: "percepts@acme:old:4", Slot: blackboard.Percepts, Mode: blackboard.ModeCommit, Kind: "order", Payload: blackboard.Payload{},
		Provenance: blackboard.Provenance{Role: blackboard.RoleTool, Writer: "w", TraceID: "old"}, Status: blackboard.StatusActive,
		Reason: reason.Committed, Scope: blackboard.ScopeEpisode, Namespace: "acme"}
	err = s.Apply(ctx, store.Batch{Appends: []blackboard.Record{next}, Trace: "old", TraceNamespace: "acme", TraceLen: 3,
		Invalidations: []store.Invalidation{{ID: "percepts@acme:old:1", Status: blackboard.StatusInvalidated, Reason: reason.SupersededEvidence}}})
	if err != nil {
		t.Fatal(err)
	}
	if h, err := store.VerifyTrace(ctx, s, "acme", "old", -1); err != nil || h.Len != 5 || h.Migrated != 3 {
		t.Errorf("VerifyTrace(acme, old) after a batch = %+v, %v; want 5 events, 3 of them migrated", h, err)
	}
	// An edit of a migrated record breaks its chain like any other.
	if _, err := pool.Exec(ctx, q.Replace(`UPDATE {schema}.bk_records SET payload = '{"n": 7}' WHERE id = 'percepts:big:1000'`)); err != nil {
		t.Fatal(err)
	}
	var brk *chain.Break
	if _, err := store.VerifyTrace(ctx, s, "", "big", -1); !errors.As(err, &brk) || brk.Fault != chain.FaultContent || brk.Seq != 999 {
		t.Errorf("VerifyTrace(big) after an edit of a migrated record: %v; want FaultContent at event 999", err)
	}
}

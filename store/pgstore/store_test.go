package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/pgtest"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/pgstore"
)

// dsnWith returns the test DSN with extra query parameters (the test DSN is
// a URL: .ci/with-postgres writes one).
func dsnWith(t *testing.T, params map[string]string) string {
	t.Helper()
	u, err := url.Parse(pgtest.DSN(t))
	if err != nil || u.Scheme == "" {
		t.Skipf("%s is not a URL; this test adds parameters to it", pgtest.EnvDSN)
	}
	q := u.Query()
	for k, v := range params {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// TestOpen opens a store that owns its pool, closes it, and opens the same
// schema again: the records are still there.
func TestOpen(t *testing.T) {
	ctx := t.Context()
	schema := pgtest.Schema(t)
	s, err := pgstore.Open(ctx, pgtest.DSN(t), pgstore.WithSchema(schema))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if s.Schema() != schema {
		t.Errorf("Schema() = %q, want %q", s.Schema(), schema)
	}
	r := record("open", 1)
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{r}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := s.Get(ctx, r.ID); !errors.Is(err, blackboard.ErrClosed) {
		t.Errorf("Get after Close: %v, want ErrClosed", err)
	}
	if err := s.Close(); !errors.Is(err, blackboard.ErrClosed) {
		t.Errorf("a second Close: %v, want ErrClosed", err)
	}

	s, err = pgstore.Open(ctx, pgtest.DSN(t), pgstore.WithSchema(schema))
	if err != nil {
		t.Fatalf("Open again: %v", err)
	}
	defer s.Close()
	if got, err := s.Get(ctx, r.ID); err != nil || !reflect.DeepEqual(got, r) {
		t.Errorf("after reopening: %+v, %v; want %+v", got, err, r)
	}
}

// TestOpenDefaultSchema opens a store without WithSchema: its tables go to
// the connection's current schema, here one named by search_path.
func TestOpenDefaultSchema(t *testing.T) {
	ctx := t.Context()
	schema := pgtest.Schema(t)
	if _, err := pgtest.Pool(t).Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	s, err := pgstore.Open(ctx, dsnWith(t, map[string]string{"search_path": schema}))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	if s.Schema() != schema {
		t.Errorf("Schema() = %q, want the search_path's %q", s.Schema(), schema)
	}
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{record("default-schema", 1)}}); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pgtest.Pool(t).QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "bk_records"}.Sanitize()).Scan(&n); err != nil || n != 1 {
		t.Errorf("records in %s: %d, %v; want 1", schema, n, err)
	}

	_, err = pgstore.Open(ctx, dsnWith(t, map[string]string{"search_path": "bk_no_such_schema"}))
	if !errors.Is(err, blackboard.ErrInvalidInput) {
		t.Errorf("Open with a search_path naming no schema: %v, want ErrInvalidInput", err)
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := t.Context()
	pgtest.DSN(t)
	for _, c := range []struct {
		name string
		open func() (*pgstore.Store, error)
		want error
	}{
		{"a DSN that does not parse", func() (*pgstore.Store, error) { return pgstore.Open(ctx, "postgres://%zz") }, blackboard.ErrInvalidInput},
		{"a negative retry count", func() (*pgstore.Store, error) {
			return pgstore.Open(ctx, pgtest.DSN(t), pgstore.WithRetries(-1))
		}, blackboard.ErrInvalidInput},
		{"a schema name PostgreSQL would cut", func() (*pgstore.Store, error) {
			return pgstore.Open(ctx, pgtest.DSN(t), pgstore.WithSchema(strings.Repeat("s", 64)))
		}, blackboard.ErrInvalidInput},
		{"a schema name with NUL", func() (*pgstore.Store, error) {
			return pgstore.Open(ctx, pgtest.DSN(t), pgstore.WithSchema("a\x00b"))
		}, blackboard.ErrInvalidInput},
		{"a nil option", func() (*pgstore.Store, error) { return pgstore.Open(ctx, pgtest.DSN(t), nil) }, blackboard.ErrInvalidInput},
		{"New of a nil pool", func() (*pgstore.Store, error) { return pgstore.New(ctx, nil) }, blackboard.ErrInvalidInput},
		{"a server that does not answer", func() (*pgstore.Store, error) {
			return pgstore.Open(ctx, "postgres://bk@127.0.0.1:1/bk?sslmode=disable&connect_timeout=5")
		}, pgstore.ErrUnreachable},
		{"a cancelled context", func() (*pgstore.Store, error) {
			ctx, cancel := context.WithCancel(ctx)
			cancel()
			return pgstore.Open(ctx, pgtest.DSN(t))
		}, context.Canceled},
	} {
		s, err := c.open()
		if !errors.Is(err, c.want) {
			t.Errorf("Open with %s: %v, want %v", c.name, err, c.want)
		}
		if s != nil {
			t.Errorf("Open with %s returned a store with its error", c.name)
			_ = s.Close()
		}
	}
}

// schemaVersion reads the version row of a store's schema.
func schemaVersion(t *testing.T, pool *pgxpool.Pool, schema string) int {
	t.Helper()
	var v int
	if err := pool.QueryRow(t.Context(), "SELECT version FROM "+pgx.Identifier{schema, "bk_schema"}.Sanitize()).Scan(&v); err != nil {
		t.Fatalf("reading the schema version: %v", err)
	}
	return v
}

func TestSchemaVersion(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t)
	s := storeIn(t, pool, schema)
	if v := schemaVersion(t, pool, schema); v != pgstore.SchemaVersion {
		t.Errorf("schema version after New: %d, want %d", v, pgstore.SchemaVersion)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Opening an up-to-date schema again changes nothing.
	storeIn(t, pool, schema)
	if v := schemaVersion(t, pool, schema); v != pgstore.SchemaVersion {
		t.Errorf("schema version after a second New: %d, want %d", v, pgstore.SchemaVersion)
	}

	newer := pgstore.SchemaVersion + 1
	if _, err := pool.Exec(ctx, "UPDATE "+pgx.Identifier{schema, "bk_schema"}.Sanitize()+" SET version = $1", newer); err != nil {
		t.Fatal(err)
	}
	_, err := pgstore.New(ctx, pool, pgstore.WithSchema(schema))
	if want := fmt.Sprintf("version %d", newer); !errors.Is(err, pgstore.ErrSchemaTooNew) || !strings.Contains(err.Error(), want) {
		t.Errorf("New on a schema from a newer version: %v, want ErrSchemaTooNew naming %s", err, want)
	}
	if _, err := pgstore.Open(ctx, pgtest.DSN(t), pgstore.WithSchema(schema)); !errors.Is(err, pgstore.ErrSchemaTooNew) {
		t.Errorf("Open on a schema from a newer version: %v, want ErrSchemaTooNew", err)
	}
	if v := schemaVersion(t, pool, schema); v != newer {
		t.Errorf("a refused open changed the schema version to %d", v)
	}
}

// TestMigrateConcurrently opens stores on one new schema at once, each on a
// connection of its own: the advisory lock lets one of them create the
// schema and the others find it done.
func TestMigrateConcurrently(t *testing.T) {
	ctx := t.Context()
	schema := pgtest.Schema(t)
	const n = 8
	pools := make([]*pgxpool.Pool, n)
	for i := range pools {
		pools[i] = pgtest.PoolWith(t, func(c *pgxpool.Config) { c.MaxConns = 1 })
	}
	stores := make([]*pgstore.Store, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range stores {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = pgstore.New(ctx, pools[i], pgstore.WithSchema(schema))
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("New %d of %d at once on a new schema: %v", i, n, err)
		}
		defer stores[i].Close()
	}
	if v := schemaVersion(t, pgtest.Pool(t), schema); v != pgstore.SchemaVersion {
		t.Errorf("schema version: %d, want %d", v, pgstore.SchemaVersion)
	}
	r := record("migrated", 1)
	if err := stores[0].Apply(ctx, store.Batch{Appends: []blackboard.Record{r}}); err != nil {
		t.Fatal(err)
	}
	for i, s := range stores {
		if got, err := s.Get(ctx, r.ID); err != nil || !reflect.DeepEqual(got, r) {
			t.Errorf("store %d reads %+v, %v; want the record store 0 appended", i, got, err)
		}
	}
}

func TestNewLeavesPoolOpen(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.PoolWith(t, func(*pgxpool.Config) {})
	schema := pgtest.Schema(t)
	s, err := pgstore.New(ctx, pool, pgstore.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	r := record("new", 1)
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{r}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("the caller's pool after Close: %v", err)
	}
	s, err = pgstore.New(ctx, pool, pgstore.WithSchema(schema))
	if err != nil {
		t.Fatalf("New on an existing schema: %v", err)
	}
	defer s.Close()
	if got, err := s.Get(ctx, r.ID); err != nil || !reflect.DeepEqual(got, r) {
		t.Errorf("a second store on the same pool reads %+v, %v", got, err)
	}
}

// TestStoreRefusesUnstorable checks that what PostgreSQL cannot hold
// unchanged is refused rather than altered, and that a lookup by a string
// no record can hold finds nothing.
func TestStoreRefusesUnstorable(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	const nul = "a\x00b"
	for _, c := range []struct {
		name   string
		mutate func(*blackboard.Record)
		want   error
	}{
		{"NUL in the id", func(r *blackboard.Record) { r.ID = "percepts:unstorable:" + nul }, blackboard.ErrInvalidInput},
		{"NUL in the kind", func(r *blackboard.Record) { r.Kind = nul }, blackboard.ErrInvalidInput},
		{"NUL in the trace id", func(r *blackboard.Record) { r.Provenance.TraceID = nul }, blackboard.ErrInvalidInput},
		{"NUL in the writer", func(r *blackboard.Record) { r.Provenance.Writer = nul }, blackboard.ErrInvalidInput},
		{"NUL in the reason", func(r *blackboard.Record) { r.Reason = nul }, blackboard.ErrInvalidInput},
		{"NUL in the namespace", func(r *blackboard.Record) { r.Namespace = nul }, blackboard.ErrInvalidInput},
		{"NUL in an input ref", func(r *blackboard.Record) { r.Provenance.InputRefs = []string{"x", nul} }, blackboard.ErrInvalidInput},
		{"NUL in an evidence ref", func(r *blackboard.Record) { r.EvidenceRefs = []string{nul} }, blackboard.ErrInvalidInput},
		{"NUL in a payload string", func(r *blackboard.Record) { r.Payload["s"] = nul }, blackboard.ErrInvalidPayload},
		{"NUL in a payload key", func(r *blackboard.Record) { r.Payload[nul] = 1.0 }, blackboard.ErrInvalidPayload},
		{"NUL deep in a payload", func(r *blackboard.Record) { r.Payload["l"] = []any{map[string]any{"k": []any{"ok", nul}}} }, blackboard.ErrInvalidPayload},
		{"a NaN confidence", func(r *blackboard.Record) { r.Provenance.Confidence = new(math.NaN()) }, blackboard.ErrInvalidInput},
		{"NaN in a payload", func(r *blackboard.Record) { r.Payload["x"] = math.NaN() }, blackboard.ErrInvalidPayload},
	} {
		good := record("unstorable", 1)
		r := record("unstorable", 2)
		c.mutate(&r)
		if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{r}}); !errors.Is(err, c.want) {
			t.Errorf("Apply of a record with %s: %v, want %v", c.name, err, c.want)
		}
		if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{good, r}}); !errors.Is(err, c.want) {
			t.Errorf("Apply of a batch with %s: %v, want %v", c.name, err, c.want)
		}
		if got := all(t, s); len(got) != 0 {
			t.Fatalf("a refused record with %s left %d records", c.name, len(got))
		}
	}
	claimed := record("unstorable", 1)
	err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{claimed}, Claims: []store.Claim{{Key: nul, RecordID: claimed.ID}}})
	if !errors.Is(err, blackboard.ErrInvalidInput) {
		t.Errorf("Apply with a once-key holding NUL: %v, want ErrInvalidInput", err)
	}

	// What looks like a NUL but is not one is stored exactly, as are the
	// edges PostgreSQL can hold.
	r := record("storable", 1)
	r.Payload = blackboard.Payload{"escaped": `back\u0000slash`, `key\u0000`: `\\u0000`, "unicode": "\u2028\U0001F600\u0001"}
	r.Provenance.Confidence = new(math.Inf(-1))
	r.Provenance.InputRefs = []string{}
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{r}}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, r.ID); err != nil || !reflect.DeepEqual(got, r) {
		t.Errorf("Get of a record with escapes, an infinite confidence and an empty ref list: %+v, %v; want %+v", got, err, r)
	}

	// Lookups by strings no record can hold.
	for _, bad := range []string{nul, "caf\xe9"} {
		if _, err := s.Get(ctx, bad); !errors.Is(err, blackboard.ErrNotFound) {
			t.Errorf("Get(%q): %v, want ErrNotFound", bad, err)
		}
		if _, err := s.FindActive(ctx, "", bad, blackboard.Percepts, "door"); !errors.Is(err, blackboard.ErrNotFound) {
			t.Errorf("FindActive in trace %q: %v, want ErrNotFound", bad, err)
		}
		if _, err := s.FindActive(ctx, "", "storable", blackboard.Percepts, bad); !errors.Is(err, blackboard.ErrNotFound) {
			t.Errorf("FindActive of kind %q: %v, want ErrNotFound", bad, err)
		}
		if got := records(t, s.ListTrace(ctx, "", bad)); len(got) != 0 {
			t.Errorf("ListTrace(%q) = %v, want nothing", bad, got)
		}
		if got := records(t, s.ListSlot(ctx, blackboard.Percepts, store.Filter{Namespace: bad})); len(got) != 0 {
			t.Errorf("ListSlot in namespace %q = %v, want nothing", bad, got)
		}
		if n, err := countTrace(ctx, s, "", bad); n != 0 || err != nil {
			t.Errorf("ReadState(%q).Len = %d, %v; want 0", bad, n, err)
		}
		if _, err := s.ClaimedBy(ctx, "", bad); !errors.Is(err, blackboard.ErrNotFound) {
			t.Errorf("ClaimedBy(%q): %v, want ErrNotFound", bad, err)
		}
		if err := s.Apply(ctx, store.Batch{Invalidations: []store.Invalidation{{ID: bad, Status: blackboard.StatusInvalidated, Reason: reason.StaleEvidence}}}); !errors.Is(err, blackboard.ErrNotFound) {
			t.Errorf("status change of %q: %v, want ErrNotFound", bad, err)
		}
		if err := s.Apply(ctx, store.Batch{Trace: bad, TraceLen: 1}); !errors.Is(err, blackboard.ErrConflict) {
			t.Errorf("a batch conditional on trace %q holding 1 record: %v, want ErrConflict", bad, err)
		}
		if err := s.Apply(ctx, store.Batch{Trace: bad, TraceLen: 0}); err != nil {
			t.Errorf("a batch conditional on trace %q holding no record: %v", bad, err)
		}
	}
}

// TestPayloadNumbers stores thousands of float64 values of every shape and
// reads them back bit for bit: JSONB keeps numbers as exact decimals, and
// encoding/json writes the shortest decimal that reads back as the same
// float64. The one exception is the sign of zero, which JSONB drops: -0
// reads back as 0 (equal under ==).
func TestPayloadNumbers(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	rng := rand.New(rand.NewPCG(1, 2))
	var values []any
	for i := 0; len(values) < 4000; i++ {
		var f float64
		switch i % 5 {
		case 0:
			f = math.Float64frombits(rng.Uint64()) // any bit pattern
		case 1:
			f = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20))
		case 2:
			f = float64(rng.Int64N(1<<53)) * float64(1-2*rng.IntN(2)) // integers up to 2^53
		case 3:
			f = math.Float64frombits(rng.Uint64N(1 << 52)) // subnormals
		case 4:
			f = []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e21, 1e-7, 5e-324, math.MaxFloat64, -math.MaxFloat64,
				math.SmallestNonzeroFloat64, 1 << 53, 1<<53 + 2, 123456789.123456789}[i/5%14]
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		values = append(values, f)
	}
	r := record("numbers", 1)
	r.Payload = blackboard.Payload{"values": values, "nested": map[string]any{"max": math.MaxFloat64, "tiny": 5e-324}}
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{r}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	back, _ := got.Payload["values"].([]any)
	if len(back) != len(values) {
		t.Fatalf("read back %d values, want %d", len(back), len(values))
	}
	for i, v := range values {
		want, f := v.(float64), back[i].(float64)
		if math.Float64bits(f) != math.Float64bits(want) && !(f == 0 && want == 0) {
			t.Errorf("value %d: stored %v (%#x), read back %v (%#x)", i, want, math.Float64bits(want), f, math.Float64bits(f))
		}
	}
	if !reflect.DeepEqual(got.Payload["nested"], r.Payload["nested"]) {
		t.Errorf("nested numbers: %v, want %v", got.Payload["nested"], r.Payload["nested"])
	}
}

// waitForLockWait waits until a connection of the test server waits for a
// lock in a query that names schema.
func waitForLockWait(t *testing.T, schema string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		var n int
		err := pgtest.Pool(t).QueryRow(t.Context(),
			"SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND strpos(query, $1) > 0", schema).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no writer ever waited for the lock")
}

// TestTraceLock holds a trace's counter row in a transaction of its own, as
// a writer in another process would mid-batch: a batch on that trace waits
// for it, up to its context's deadline, after which the server cancels it
// and it never lands; and once the other writer commits an append, a
// batch conditional on the length it read before is refused with
// ErrConflict.
func TestTraceLock(t *testing.T) {
	ctx := t.Context()
	schema := pgtest.Schema(t)
	s, err := pgstore.Open(ctx, pgtest.DSN(t), pgstore.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first := record("locked", 1)
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{first}}); err != nil {
		t.Fatal(err)
	}
	traces, recordsTable := pgx.Identifier{schema, "bk_traces"}.Sanitize(), pgx.Identifier{schema, "bk_records"}.Sanitize()
	other, err := pgtest.Pool(t).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback(context.Background())
	if _, err := other.Exec(ctx, "SELECT n FROM "+traces+" WHERE trace_id = 'locked' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}

	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	abandoned := record("locked", 2)
	abandoned.ID, abandoned.Kind = "percepts:locked:abandoned", "window"
	if err := s.Apply(short, store.Batch{Appends: []blackboard.Record{abandoned}}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a batch waiting for a locked trace past its deadline: %v, want context.DeadlineExceeded", err)
	}

	// The other writer appends the trace's second record, the way Apply
	// does, while a batch conditional on one record waits for it.
	if _, err := other.Exec(ctx, "UPDATE "+traces+" SET n = n + 1 WHERE trace_id = 'locked'"); err != nil {
		t.Fatal(err)
	}
	theirs := record("locked", 2)
	if _, err := other.Exec(ctx, "INSERT INTO "+recordsTable+` (id, trace_id, pos, slot, mode, kind, payload, role, writer, ts_ms,
		ttl_ms, status, reason, scope, namespace) VALUES ($1, 'locked', 2, 'percepts', 'commit', 'door', '{"n": 2}', 'tool', 'test', 1,
		0, 'ACTIVE', 'COMMITTED', 'episode', 'default')`, theirs.ID); err != nil {
		t.Fatal(err)
	}
	mine := record("locked", 2)
	mine.ID, mine.Kind = "percepts:locked:2b", "window"
	done := make(chan error, 1)
	go func() {
		done <- s.Apply(ctx, store.Batch{Appends: []blackboard.Record{mine}, Trace: "locked", TraceLen: 1})
	}()
	waitForLockWait(t, schema)
	if err := other.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, blackboard.ErrConflict) {
		t.Errorf("a batch conditional on the length before another writer's append: %v, want ErrConflict", err)
	}
	time.Sleep(100 * time.Millisecond) // time for an abandoned batch to land, were it still running
	got := records(t, s.ListTrace(ctx, "", "locked"))
	if want := []blackboard.Record{first, theirs}; !reflect.DeepEqual(got, want) {
		t.Errorf("the trace after the refused and abandoned batches:\n got  %+v\n want %+v", got, want)
	}
	if n, err := countTrace(ctx, s, "", "locked"); n != 2 || err != nil {
		t.Errorf("ReadState.Len = %d, %v; want 2", n, err)
	}
}

// TestSerializationFailure makes the server abort a batch with a
// serialization failure: under REPEATABLE READ, a batch whose trace counter
// another transaction updates while the batch waits for it cannot commit.
// The store runs it again and it lands; with retries off the error is
// ErrSerialization, which wraps blackboard.ErrConflict, and nothing lands.
func TestSerializationFailure(t *testing.T) {
	for _, retries := range []int{8, 0} {
		t.Run(fmt.Sprintf("retries=%d", retries), func(t *testing.T) {
			ctx := t.Context()
			schema := pgtest.Schema(t)
			rr := pgtest.PoolWith(t, func(c *pgxpool.Config) {
				c.ConnConfig.RuntimeParams["default_transaction_isolation"] = "repeatable read"
			})
			s := storeIn(t, rr, schema, pgstore.WithRetries(retries))
			if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{record("ser", 1)}}); err != nil {
				t.Fatal(err)
			}
			other, err := pgtest.Pool(t).Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Rollback(context.Background())
			if _, err := other.Exec(ctx, "UPDATE "+pgx.Identifier{schema, "bk_traces"}.Sanitize()+" SET n = n WHERE trace_id = 'ser'"); err != nil {
				t.Fatal(err)
			}
			r := record("ser", 2)
			done := make(chan error, 1)
			go func() {
				done <- s.Apply(ctx, store.Batch{Appends: []blackboard.Record{r}, Trace: "ser", TraceLen: 1})
			}()
			waitForLockWait(t, schema)
			if err := other.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			err = <-done
			if retries > 0 {
				if err != nil {
					t.Fatalf("a batch aborted by a serialization failure and run again: %v", err)
				}
				if got, err := s.Get(ctx, r.ID); err != nil || !reflect.DeepEqual(got, r) {
					t.Errorf("the batch run again landed %+v, %v", got, err)
				}
				return
			}
			if !errors.Is(err, pgstore.ErrSerialization) || !errors.Is(err, blackboard.ErrConflict) {
				t.Fatalf("a serialization failure with retries off: %v, want ErrSerialization wrapping blackboard.ErrConflict", err)
			}
			if n, err := countTrace(ctx, s, "", "ser"); n != 1 || err != nil {
				t.Errorf("after the refused batch the trace holds %d records (%v), want 1", n, err)
			}
		})
	}
}

// TestConnectionLost terminates the server processes behind a store's idle
// connections: the next read and the next batch, which find their
// connection gone before anything could commit, run again on a new
// connection and succeed.
func TestConnectionLost(t *testing.T) {
	ctx := t.Context()
	app := "bk_lost_" + strings.TrimPrefix(pgtest.Schema(t), "bk_test_")
	s, err := pgstore.Open(ctx, dsnWith(t, map[string]string{"application_name": app}), pgstore.WithSchema(pgtest.Schema(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	terminate := func() {
		t.Helper()
		var n int
		if err := pgtest.Pool(t).QueryRow(ctx,
			"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Fatal("no connection of the store to terminate")
		}
		time.Sleep(50 * time.Millisecond) // let the server close them
	}
	r := record("lost", 1)
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{r}}); err != nil {
		t.Fatal(err)
	}
	terminate()
	if got, err := s.Get(ctx, r.ID); err != nil || !reflect.DeepEqual(got, r) {
		t.Errorf("Get after the connection was lost: %+v, %v", got, err)
	}
	terminate()
	r2 := record("lost", 2)
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{r2}, Trace: "lost", TraceLen: 1}); err != nil {
		t.Errorf("Apply after the connection was lost: %v", err)
	}
	if got := records(t, s.ListTrace(ctx, "", "lost")); !reflect.DeepEqual(got, []blackboard.Record{r, r2}) {
		t.Errorf("the trace after the lost connections: %+v", got)
	}
}

// countTrace is how many records trace traceID of namespace holds, as
// ReadState reads it from the trace's counter.
func countTrace(ctx context.Context, s *pgstore.Store, namespace, traceID string) (int, error) {
	st, err := s.ReadState(ctx, namespace, traceID)
	return st.Len, err
}

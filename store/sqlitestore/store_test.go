package sqlitestore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/sqlitestore"
	"github.com/blackboardkernel/bk/store/storetest"
)

func mustOpen(t *testing.T, path string) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() }) // tests that close the store themselves get ErrClosed here
	return s
}

func mustKernel(t *testing.T, s store.Store, now func() time.Time) *kernel.Kernel {
	t.Helper()
	k, err := kernel.New(kernel.Config{Store: s, Clock: now})
	if err != nil {
		t.Fatalf("kernel.New: %v", err)
	}
	return k
}

// fixedClock is a clock tests move by hand.
type fixedClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fixedClock { return &fixedClock{t: time.UnixMilli(1_736_000_000_000)} }

func (c *fixedClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fixedClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// all returns every record of the store, slot by slot.
func all(t *testing.T, s store.Store) []blackboard.Record {
	t.Helper()
	var out []blackboard.Record
	for _, slot := range blackboard.AllSlots() {
		out = append(out, records(t, s.ListSlot(t.Context(), slot, store.Filter{}))...)
	}
	return out
}

func trace(t *testing.T, s store.Store, id string) []blackboard.Record {
	t.Helper()
	return records(t, s.ListTrace(t.Context(), "", id))
}

func records(t *testing.T, seq iter.Seq2[blackboard.Record, error]) []blackboard.Record {
	t.Helper()
	var out []blackboard.Record
	for r, err := range seq {
		if err != nil {
			t.Fatalf("listing: %v", err)
		}
		out = append(out, r)
	}
	return out
}

func belief(kind string, deps ...string) kernel.Entry {
	d := make([]any, len(deps))
	for i, dep := range deps {
		d[i] = dep
	}
	return kernel.Entry{Slot: blackboard.Beliefs, Kind: kind, Payload: blackboard.Payload{"value": true, "depends_on": d}}
}

func in(traceID string, e kernel.Entry) kernel.Entry {
	e.TraceID = traceID
	return e
}

func TestStoreReopen(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "bk.db")
	s := mustOpen(t, path)
	clk := newClock()
	k := mustKernel(t, s, clk.now)
	tool, planner, sym := k.Handle(blackboard.RoleTool, "sensor"), k.Proposer(blackboard.RolePlanner, "planner"), k.Symbolic("rules")
	for _, e := range []kernel.Entry{
		{Slot: blackboard.Percepts, Kind: "door", Payload: blackboard.Payload{"open": true}, Confidence: new(0.9)},
		{Slot: blackboard.Percepts, Kind: "battery", Payload: blackboard.Payload{"level": 0.8}, TTL: time.Second},
		{Slot: blackboard.Percepts, Kind: "camera", Payload: blackboard.Payload{"stale": true}},
	} {
		if _, err := tool.Write(ctx, in("ep", e)); err != nil {
			t.Fatal(err)
		}
	}
	committed, err := planner.Submit(ctx, in("ep", belief("door_open", "door")))
	if err != nil || !committed.Committed() {
		t.Fatalf("belief: %v %s", err, committed.Code)
	}
	rejected, err := planner.Submit(ctx, in("ep", belief("camera_ok", "camera")))
	if err != nil || rejected.Code != reason.StaleEvidence {
		t.Fatalf("stale belief: %v %s", err, rejected.Code)
	}
	constraint, err := sym.CommitConstraint(ctx, "ep", kernel.Constraint{Name: "speed_limit", Enabled: true, BlocksField: "too_fast"}, blackboard.ScopePersistent)
	if err != nil {
		t.Fatal(err)
	}
	clk.advance(2 * time.Second)
	if n, err := k.Expire(ctx, "ep"); err != nil || n != 1 {
		t.Fatalf("Expire: %d, %v; want 1 record expired", n, err)
	}
	before := all(t, s)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s = mustOpen(t, path)
	if got := all(t, s); !reflect.DeepEqual(got, before) {
		t.Fatalf("records after reopening differ:\n got  %v\n want %v", got, before)
	}
	for id, want := range map[string][2]string{
		"percepts:ep:2":       {"EXPIRED", "TTL_EXPIRED"},
		rejected.ProposalID:   {"INVALIDATED", "STALE_EVIDENCE"},
		committed.CommittedID: {"ACTIVE", "COMMITTED"},
	} {
		r, err := s.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got := [2]string{string(r.Status), string(r.Reason)}; got != want {
			t.Errorf("after reopening %s is %v, want %v", id, got, want)
		}
	}

	// The persistent constraint still binds a new trace of a new kernel.
	k = mustKernel(t, s, clk.now)
	tool, planner = k.Handle(blackboard.RoleTool, "sensor"), k.Proposer(blackboard.RolePlanner, "planner")
	if _, err := tool.Write(ctx, in("ep2", kernel.Entry{Slot: blackboard.Percepts, Kind: "door", Payload: blackboard.Payload{"open": true}})); err != nil {
		t.Fatal(err)
	}
	if d, err := planner.Submit(ctx, in("ep2", belief("door_open", "door"))); err != nil || !d.Committed() {
		t.Fatalf("belief in ep2: %v %s", err, d.Code)
	}
	d, err := planner.Submit(ctx, kernel.Entry{TraceID: "ep2", Slot: blackboard.Actions, Kind: "move",
		Payload: blackboard.Payload{"requires_beliefs": []any{"door_open"}, "too_fast": true}})
	if err != nil || d.Code != reason.Blocked("speed_limit") {
		t.Errorf("action against the persistent constraint after reopening: %v, code %s, want %s", err, d.Code, reason.Blocked("speed_limit"))
	}
	v, err := k.Reader().View(ctx, "ep3", true)
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.Get(ctx, constraint)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := v.Committed[blackboard.Constraints]["speed_limit"]; !reflect.DeepEqual(got, want.Payload) {
		t.Errorf("a new trace's view after reopening shows constraint %v, want %v", got, want.Payload)
	}
}

// TestStoreTwoKernelsShareFile runs two kernels, each on its own Store of
// one file, writing one trace at once: the kernel retries on a conflict past the ids
// the other took, and every write lands.
func TestStoreTwoKernelsShareFile(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "bk.db")
	stores := []*sqlitestore.Store{mustOpen(t, path), mustOpen(t, path)}
	clk := newClock()
	kernels := []*kernel.Kernel{mustKernel(t, stores[0], clk.now), mustKernel(t, stores[1], clk.now)}
	const writers, percepts, every = 4, 12, 3 // a belief after every third percept

	written := make([][]string, writers)
	decided := make([][]kernel.Decision, writers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range writers {
		k := kernels[g%2]
		tool, planner := k.Handle(blackboard.RoleTool, fmt.Sprintf("tool-%d", g)), k.Proposer(blackboard.RolePlanner, fmt.Sprintf("planner-%d", g))
		wg.Go(func() {
			<-start
			for i := range percepts {
				kind := fmt.Sprintf("sensor-%d-%d", g, i)
				r, err := tool.Write(ctx, kernel.Entry{TraceID: "shared", Slot: blackboard.Percepts, Kind: kind,
					Payload: blackboard.Payload{"g": float64(g), "i": float64(i)}, Confidence: new(0.9)})
				if err != nil {
					t.Errorf("writer %d: percept %d: %v", g, i, err)
					return
				}
				written[g] = append(written[g], r)
				if i%every == every-1 {
					d, err := planner.Submit(ctx, in("shared", belief("belief-"+kind, kind)))
					if err != nil || !d.Committed() {
						t.Errorf("writer %d: belief on %s: %v, code %s", g, kind, err, d.Code)
						return
					}
					decided[g] = append(decided[g], d)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}

	recs := trace(t, stores[0], "shared")
	if other := trace(t, stores[1], "shared"); !reflect.DeepEqual(recs, other) {
		t.Fatalf("the two stores list the shared trace differently")
	}
	beliefs := writers * percepts / every
	// Every percept, plus per belief: proposal, evidence, committed belief.
	if want := writers*percepts + 3*beliefs; len(recs) != want {
		t.Errorf("the shared trace holds %d records, want %d", len(recs), want)
	}
	byID := map[string]blackboard.Record{}
	for _, r := range recs {
		byID[r.ID] = r
	}
	for g := range writers {
		for i, id := range written[g] {
			if got, ok := byID[id]; !ok || got.Provenance.Writer != fmt.Sprintf("tool-%d", g) || got.Kind != fmt.Sprintf("sensor-%d-%d", g, i) {
				t.Errorf("percept %s as written is not what the store holds: %+v", id, got)
			}
		}
		for _, d := range decided[g] {
			if got, ok := byID[d.CommittedID]; !ok || got.Slot != blackboard.Beliefs || got.Status != blackboard.StatusActive || got.Reason != d.Code {
				t.Errorf("committed record %s is not what the store holds: %+v", d.CommittedID, got)
			}
			for _, id := range []string{d.EvidenceID, d.ProposalID} {
				if _, ok := byID[id]; !ok {
					t.Errorf("decision names %s, which the store does not hold", id)
				}
			}
		}
	}
}

// TestStoreKernelRestart continues a trace with a new kernel and store on
// an existing file.
func TestStoreKernelRestart(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "bk.db")
	clk := newClock()
	episode := func(s *sqlitestore.Store, round int) {
		t.Helper()
		k := mustKernel(t, s, clk.now)
		kind := fmt.Sprintf("door-%d", round)
		if _, err := k.Handle(blackboard.RoleTool, "sensor").Write(ctx, kernel.Entry{TraceID: "ep", Slot: blackboard.Percepts, Kind: kind, Payload: blackboard.Payload{"open": true}}); err != nil {
			t.Fatalf("round %d: percept: %v", round, err)
		}
		d, err := k.Proposer(blackboard.RolePlanner, "planner").Submit(ctx, in("ep", belief("open-"+kind, kind)))
		if err != nil || !d.Committed() {
			t.Fatalf("round %d: belief: %v, code %s", round, err, d.Code)
		}
	}
	s := mustOpen(t, path)
	episode(s, 1)
	first := trace(t, s, "ep")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, path)
	episode(s, 2)
	recs := trace(t, s, "ep")
	if !reflect.DeepEqual(recs[:len(first)], first) {
		t.Errorf("a restarted kernel changed the records of the first run")
	}
	if got, want := recs[len(first)].ID, fmt.Sprintf("percepts:ep:%d", len(first)+1); got != want {
		t.Errorf("a restarted kernel continues the trace with id %s, want %s", got, want)
	}
	if len(recs) != 2*len(first) {
		t.Errorf("after two rounds the trace holds %d records, want %d", len(recs), 2*len(first))
	}
}

// schemaVersion is the number of migrations the package holds: the
// user_version of a database it has opened.
const schemaVersion = 8

func TestStoreSchemaVersion(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "bk.db")
	s := mustOpen(t, path)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var version int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version != schemaVersion {
		t.Errorf("user_version = %d after Open, want %d", version, schemaVersion)
	}
	if _, err := db.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion+1)); err != nil {
		t.Fatal(err)
	}
	_, err = sqlitestore.Open(ctx, path)
	if want := fmt.Sprintf("version %d", schemaVersion+1); !errors.Is(err, sqlitestore.ErrSchemaTooNew) || !strings.Contains(err.Error(), want) {
		t.Errorf("Open of a database from a newer version: %v, want ErrSchemaTooNew naming %s", err, want)
	}
	if _, err := sqlitestore.New(ctx, db); !errors.Is(err, sqlitestore.ErrSchemaTooNew) {
		t.Errorf("New on a database from a newer version: %v, want ErrSchemaTooNew", err)
	}
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil || version != schemaVersion+1 {
		t.Errorf("a refused open changed user_version to %d (%v)", version, err)
	}
}

// openDB opens a database for New the way a caller would, with settings in
// the DSN and without immediate transactions.
func openDB(t *testing.T) *sql.DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bk.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func TestStoreConformanceNew(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := sqlitestore.New(context.Background(), openDB(t))
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		return s
	})
}

func TestStoreNewLeavesDBOpen(t *testing.T) {
	ctx := t.Context()
	db := openDB(t)
	s, err := sqlitestore.New(ctx, db)
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
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM records").Scan(&n); err != nil || n != 1 {
		t.Errorf("the caller's database after Close: %d records, %v; want it open with 1 record", n, err)
	}
	s, err = sqlitestore.New(ctx, db)
	if err != nil {
		t.Fatalf("New on an existing schema: %v", err)
	}
	defer s.Close()
	if got, err := s.Get(ctx, r.ID); err != nil || !reflect.DeepEqual(got, r) {
		t.Errorf("a second store on the same *sql.DB reads %+v, %v", got, err)
	}
}

func TestStoreBadOptions(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		open func() (*sqlitestore.Store, error)
	}{
		{"Open of an empty path", func() (*sqlitestore.Store, error) { return sqlitestore.Open(context.Background(), "") }},
		{"Open with a negative busy timeout", func() (*sqlitestore.Store, error) {
			return sqlitestore.Open(context.Background(), filepath.Join(dir, "a.db"), sqlitestore.WithBusyTimeout(-time.Second))
		}},
		{"New of a nil db", func() (*sqlitestore.Store, error) { return sqlitestore.New(context.Background(), nil) }},
		{"New with WithBusyTimeout", func() (*sqlitestore.Store, error) {
			return sqlitestore.New(context.Background(), openDB(t), sqlitestore.WithBusyTimeout(time.Second))
		}},
	} {
		s, err := c.open()
		if !errors.Is(err, blackboard.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", c.name, err)
		}
		if s != nil {
			t.Errorf("%s returned a store with its error", c.name)
		}
	}
	if _, err := sqlitestore.Open(context.Background(), filepath.Join(dir, "missing", "bk.db")); err == nil {
		t.Error("Open in a directory that does not exist succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "a.db")); !os.IsNotExist(err) {
		t.Errorf("a refused Open created its file: %v", err)
	}
}

// TestStoreOddPath opens a file whose name holds characters that mean
// something in a URI.
func TestStoreOddPath(t *testing.T) {
	name := "a?b#c%d e&f=g.db"
	path := filepath.Join(t.TempDir(), name)
	s := mustOpen(t, path)
	if err := s.Apply(t.Context(), store.Batch{Appends: []blackboard.Record{record("odd", 1)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("Open(%q) did not create that file: %v", name, err)
	}
}

// TestStoreSettings checks the pragmas Open sets on its connections.
func TestStoreSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bk.db")
	mustOpen(t, path)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	if err := db.QueryRowContext(t.Context(), "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode of a file Open created: %q (%v), want wal", mode, err)
	}
}

// record returns a well-formed ACTIVE record, in the namespace it reads
// back in.
func record(traceID string, n int) blackboard.Record {
	return blackboard.Record{
		ID: fmt.Sprintf("percepts:%s:%d", traceID, n), Slot: blackboard.Percepts, Mode: blackboard.ModeCommit, Kind: "door",
		Payload:    blackboard.Payload{"n": float64(n)},
		Provenance: blackboard.Provenance{Role: blackboard.RoleTool, Writer: "test", TraceID: traceID, TimestampMS: 1},
		Status:     blackboard.StatusActive, Reason: reason.Committed, Scope: blackboard.ScopeEpisode,
		Namespace: blackboard.DefaultNamespace,
	}
}

// state is a decision state whose encoding is its text.
type state string

func (s state) MarshalBinary() ([]byte, error) { return []byte(s), nil }

// TestStoreRefusesUnstorable checks that a record JSON or SQLite could not
// hold unchanged is refused rather than altered.
func TestStoreRefusesUnstorable(t *testing.T) {
	ctx := t.Context()
	s := mustOpen(t, ":memory:")
	bad := "caf\xe9"
	for _, c := range []struct {
		name   string
		mutate func(*blackboard.Record)
		want   error
	}{
		{"zero role", func(r *blackboard.Record) { r.Provenance.Role = "" }, blackboard.ErrInvalidInput},
		{"unknown role", func(r *blackboard.Record) { r.Provenance.Role = "Kernel" }, blackboard.ErrInvalidInput},
		{"NaN confidence", func(r *blackboard.Record) { r.Provenance.Confidence = new(math.NaN()) }, blackboard.ErrInvalidInput},
		{"invalid UTF-8 in a payload string", func(r *blackboard.Record) { r.Payload["s"] = bad }, blackboard.ErrInvalidPayload},
		{"invalid UTF-8 in a payload key", func(r *blackboard.Record) { r.Payload[bad] = 1.0 }, blackboard.ErrInvalidPayload},
		{"invalid UTF-8 deep in a payload", func(r *blackboard.Record) {
			r.Payload["l"] = []any{map[string]any{"k": []any{bad}}}
		}, blackboard.ErrInvalidPayload},
		{"invalid UTF-8 in an input ref", func(r *blackboard.Record) { r.Provenance.InputRefs = []string{bad} }, blackboard.ErrInvalidInput},
		{"invalid UTF-8 in an evidence ref", func(r *blackboard.Record) { r.EvidenceRefs = []string{bad} }, blackboard.ErrInvalidInput},
		{"NaN in a payload", func(r *blackboard.Record) { r.Payload["x"] = math.NaN() }, blackboard.ErrInvalidPayload},
		{"a channel in a payload", func(r *blackboard.Record) { r.Payload["c"] = make(chan int) }, blackboard.ErrInvalidPayload},
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
	// The edges that can be stored exactly are.
	r := record("storable", 1)
	r.Provenance.Confidence = new(math.Inf(1))
	r.Provenance.InputRefs = []string{}
	r.Payload = blackboard.Payload{"unicode": "\u2028\U0001F600", "": ""}
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{r}}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, r.ID); err != nil || !reflect.DeepEqual(got, r) {
		t.Errorf("Get of a record with an infinite confidence and an empty ref list: %+v, %v; want %+v", got, err, r)
	}
}

// TestCountTrace checks the record count ReadState reads against what ListTrace yields, for
// traces of one and of several records and for an unknown trace.
func TestCountTrace(t *testing.T) {
	ctx := t.Context()
	s := mustOpen(t, filepath.Join(t.TempDir(), "bk.db"))
	k := mustKernel(t, s, newClock().now)
	tool := k.Handle(blackboard.RoleTool, "sensor")
	for i, tr := range []string{"counted", "counted", "other", "counted"} {
		if _, err := tool.Write(ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Percepts, Kind: "door", Payload: blackboard.Payload{"n": float64(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tr := range []string{"counted", "other", "never"} {
		n, err := countTrace(ctx, s, "", tr)
		if want := len(trace(t, s, tr)); err != nil || n != want {
			t.Errorf("ReadState(%q).Len = %d, %v; want %d (what ListTrace yields)", tr, n, err, want)
		}
	}
}

// countTrace is how many records trace traceID of namespace holds, as
// ReadState reads it from the trace's counter.
func countTrace(ctx context.Context, s *sqlitestore.Store, namespace, traceID string) (int, error) {
	st, err := s.ReadState(ctx, namespace, traceID)
	return st.Len, err
}

package kernel_test

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/pgtest"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/store/pgstore"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

// The kernel's store flows: scenarios that drive a kernel on each store of
// the module (the memory store, a SQLite file and PostgreSQL, which skips
// without BK_PG_DSN), where the conformance suite of store/storetest
// drives the stores alone.

// flowStore is a kind of store the flows run on.
type flowStore struct {
	name string
	// open returns a new, empty store, closed when tb ends.
	open func(tb testing.TB) store.Store
}

// flowStores returns the module's stores.
func flowStores() []flowStore {
	return []flowStore{
		{"memory", func(tb testing.TB) store.Store {
			s := memstore.New()
			tb.Cleanup(func() { _ = s.Close() })
			return s
		}},
		{"sqlite", openSQLite},
		{"postgres", func(tb testing.TB) store.Store {
			tb.Helper()
			s, err := pgstore.New(context.Background(), pgtest.Pool(tb), pgstore.WithSchema(pgtest.Schema(tb)))
			if err != nil {
				tb.Fatalf("pgstore.New: %v", err)
			}
			tb.Cleanup(func() { _ = s.Close() })
			return s
		}},
	}
}

// openSQLite returns a store on a new SQLite file, closed when tb ends.
func openSQLite(tb testing.TB) store.Store {
	tb.Helper()
	s, err := sqlitestore.Open(context.Background(), filepath.Join(tb.TempDir(), "bk.db"))
	if err != nil {
		tb.Fatalf("sqlitestore.Open: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// TestStoreFlowAtomicCommit runs runKernel on every store.
func TestStoreFlowAtomicCommit(t *testing.T) {
	for _, fs := range flowStores() {
		t.Run(fs.name, func(t *testing.T) {
			runKernel(t, func(t *testing.T) store.Store { return fs.open(t) })
		})
	}
}

// TestStoreFlowWrapperDecisions runs testWrapperDecisions on every store.
func TestStoreFlowWrapperDecisions(t *testing.T) {
	for _, fs := range flowStores() {
		t.Run(fs.name, func(t *testing.T) {
			testWrapperDecisions(t, func(t *testing.T) store.Store { return fs.open(t) })
		})
	}
}

// TestStoreEquivalence runs the scripted scenario of equivalence, which
// reaches every decision the kernel makes, on the memory store and on
// each other store, and requires the same decisions, codes, ids, views
// and records from each.
func TestStoreEquivalence(t *testing.T) {
	for _, fs := range flowStores()[1:] {
		t.Run(fs.name, func(t *testing.T) { equivalence(t, map[string]store.Store{fs.name: fs.open(t)}) })
	}
}

// BenchmarkEpisodeStores is the governed episode on a SQLite file (WAL,
// synchronous=NORMAL) and on PostgreSQL, each already holding 10^3 to
// 10^5 records of other traces (BenchmarkEpisodeMemory measures the
// memory store).
func BenchmarkEpisodeStores(b *testing.B) {
	for _, fs := range flowStores()[1:] {
		for _, n := range []int{1_000, 10_000, 100_000} {
			b.Run(fs.name+"/history="+strconv.Itoa(n), func(b *testing.B) { benchEpisode(b, fs.open(b), n, kernel.Config{}) })
		}
	}
}

// BenchmarkEpisodeConcurrent runs episodes on distinct traces from 1, 4
// and 16 goroutines of one kernel on each store, and from two processes
// with a kernel each on one SQLite file and on one PostgreSQL schema.
func BenchmarkEpisodeConcurrent(b *testing.B) {
	for _, fs := range flowStores() {
		for _, g := range []int{1, 4, 16} {
			b.Run(fs.name+"/goroutines="+strconv.Itoa(g), func(b *testing.B) { benchEpisodeParallel(b, fs.open(b), g) })
		}
	}
	b.Run("sqlite/processes=2", func(b *testing.B) {
		var path string
		if !isBenchHelper() {
			path = filepath.Join(b.TempDir(), "bk.db")
			s, err := sqlitestore.Open(context.Background(), path) // the schema exists before the helpers start
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
		}
		benchEpisodeProcesses(b, 2, path, func(path string) (store.Store, error) { return sqlitestore.Open(context.Background(), path) })
	})
	b.Run("postgres/processes=2", func(b *testing.B) {
		dsn := pgtest.DSN(b)
		var schema string
		if !isBenchHelper() {
			s, err := pgstore.New(context.Background(), pgtest.Pool(b), pgstore.WithSchema(pgtest.Schema(b))) // created before the helpers start
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			schema = s.Schema()
		}
		benchEpisodeProcesses(b, 2, schema, func(schema string) (store.Store, error) {
			return pgstore.Open(context.Background(), dsn, pgstore.WithSchema(schema))
		})
	})
}

// batchRecorder is a memory store that keeps a copy of every batch applied to
// it.
type batchRecorder struct {
	*memstore.Store
	batches []store.Batch
}

func (r *batchRecorder) Apply(ctx context.Context, b store.Batch) error {
	c := b
	c.Appends, c.Invalidations, c.Claims = slices.Clone(b.Appends), slices.Clone(b.Invalidations), slices.Clone(b.Claims)
	r.batches = append(r.batches, c)
	return r.Store.Apply(ctx, b)
}

// BenchmarkEpisodeStore is what a governed episode on a kernel of its own
// costs its own memory store, as in the study's run: New, the batches
// the kernel applied in a runEpisode (recorded once), a read of the
// trace, Close.
func BenchmarkEpisodeStore(b *testing.B) {
	ctx := context.Background()
	rec := &batchRecorder{Store: memstore.New()}
	k, err := kernel.New(kernel.Config{Store: rec})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := runEpisode(ctx, k, "ep-1", false); err != nil {
		b.Fatal(err)
	}
	var buf []blackboard.Record
	b.ReportAllocs()
	for b.Loop() {
		s := memstore.New()
		for _, batch := range rec.batches {
			if err := s.Apply(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		if buf, err = s.AppendTrace(ctx, buf[:0], "", "ep-1"); err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
	b.ReportMetric(float64(len(rec.batches)), "batches")
	b.ReportMetric(float64(len(buf)), "records")
}

// TestNewStoreAfterClose: a store closed after holding records with every
// rare field set leaves nothing of them to the stores made after it (a
// closed store's first block serves the next store), and the records read

// maxRoundTripsEpisode is the round-trip ceiling of a governed episode on
// PostgreSQL: what main costs today, counted by TestPostgresRoundTrips
// with a warmed connection (12 before issue 25). A change that adds a
// round trip fails the test; issue 25's target is at most 5.
const maxRoundTripsEpisode = 5

// TestPostgresRoundTrips counts the store's round trips to PostgreSQL for
// one governed refund episode (runEpisode), in a new trace, with a pgx
// tracer on a pool of one connection. A first episode on another trace
// warms the connection and its statement cache, so the count is that of a
// running service. It skips without BK_PG_DSN.
func TestPostgresRoundTrips(t *testing.T) {
	counter := &pgtest.RoundTrips{}
	s, err := pgstore.New(context.Background(), pgtest.CountingPool(t, counter), pgstore.WithSchema(pgtest.Schema(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	k, err := kernel.New(kernel.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	pgtest.CountRoundTrips(t, counter, "governed episode", maxRoundTripsEpisode, 5, func(trace string) error {
		code, err := runEpisode(context.Background(), k, trace, false)
		if err == nil && !code.OK() {
			t.Fatalf("episode ended in %s, want the refund committed", code)
		}
		return err
	})
}

package pgstore_test

import (
	"context"
	"github.com/blackboardkernel/bk/kernel"
	"strconv"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/blackboard/storetest"
	"github.com/blackboardkernel/bk/internal/pgtest"
	"github.com/blackboardkernel/bk/store/pgstore"
)

// BenchmarkStore is the shared store benchmarks (storetest.Bench).
func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) blackboard.Store { return newStore(b) })
}

// BenchmarkEpisodePostgres is the governed episode on PostgreSQL already
// holding 10^3 to 10^5 records of other traces.
func BenchmarkEpisodePostgres(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run("history="+strconv.Itoa(n), func(b *testing.B) { storetest.BenchEpisode(b, newStore(b), n, kernel.Config{}) })
	}
}

// BenchmarkEpisodeConcurrent runs episodes on distinct traces from 1, 4
// and 16 goroutines of one kernel, and from two processes with a kernel
// each, on one PostgreSQL schema.
func BenchmarkEpisodeConcurrent(b *testing.B) {
	dsn := pgtest.DSN(b)
	for _, g := range []int{1, 4, 16} {
		b.Run("goroutines="+strconv.Itoa(g), func(b *testing.B) { storetest.BenchEpisodeParallel(b, newStore(b), g) })
	}
	b.Run("processes=2", func(b *testing.B) {
		var schema string
		if !storetest.IsBenchHelper() {
			schema = newStore(b).Schema() // created before the helpers start
		}
		storetest.BenchEpisodeProcesses(b, 2, schema, func(schema string) (blackboard.Store, error) {
			return pgstore.Open(context.Background(), dsn, pgstore.WithSchema(schema))
		})
	})
}

// BenchmarkSession is the cost of call n of one session on PostgreSQL
// (storetest.BenchSession); BK_SESSION_SIZES sets the lengths. It skips
// without BK_PG_DSN.
func BenchmarkSession(b *testing.B) {
	b.Run("postgres", func(b *testing.B) {
		storetest.BenchSession(b, func(tb testing.TB) blackboard.Store { return newStore(tb) })
	})
}

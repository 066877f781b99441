package sqlitestore_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/sqlitestore"
	"github.com/blackboardkernel/bk/store/storetest"
)

// BenchmarkEpisodeConcurrent runs episodes on distinct traces from 1, 4
// and 16 goroutines of one kernel, and from two processes with a kernel
// each, on one SQLite file.
func BenchmarkEpisodeConcurrent(b *testing.B) {
	for _, g := range []int{1, 4, 16} {
		b.Run("goroutines="+strconv.Itoa(g), func(b *testing.B) { storetest.BenchEpisodeParallel(b, openFile(b), g) })
	}
	b.Run("processes=2", func(b *testing.B) {
		var path string
		if !storetest.IsBenchHelper() {
			path = filepath.Join(b.TempDir(), "bk.db")
			s, err := sqlitestore.Open(context.Background(), path) // the schema exists before the helpers start
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
		}
		storetest.BenchEpisodeProcesses(b, 2, path, func(path string) (store.Store, error) { return sqlitestore.Open(context.Background(), path) })
	})
}

// BenchmarkSession is the cost of call n of one session on a SQLite file
// (storetest.BenchSession); BK_SESSION_SIZES sets the lengths.
func BenchmarkSession(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		storetest.BenchSession(b, func(tb testing.TB) store.Store {
			s := openFile(tb)
			tb.Cleanup(func() { _ = s.Close() })
			return s
		})
	})
}

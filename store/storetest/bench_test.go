package storetest_test

import (
	"strconv"
	"testing"

	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/store/storetest"
)

// BenchmarkEpisodeConcurrent runs episodes on distinct traces from 1, 4
// and 16 goroutines of one kernel on the memory store, the reference for
// the persistent stores' figures (a memory store cannot be shared by
// processes).
func BenchmarkEpisodeConcurrent(b *testing.B) {
	for _, g := range []int{1, 4, 16} {
		b.Run("goroutines="+strconv.Itoa(g), func(b *testing.B) { storetest.BenchEpisodeParallel(b, memstore.New(), g) })
	}
}

// BenchmarkSession is the cost of call n of one session on the memory
// store (storetest.BenchSession); BK_SESSION_SIZES sets the lengths.
func BenchmarkSession(b *testing.B) {
	b.Run("memory", func(b *testing.B) {
		storetest.BenchSession(b, func(testing.TB) store.Store { return memstore.New() })
	})
}

package storetest_test

import (
	"strconv"
	"testing"

	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store/storetest"
)

// BenchmarkEpisodeConcurrent runs episodes on distinct traces from 1, 4
// and 16 goroutines of one kernel on the memory store, the reference for
// the persistent stores' figures (a memory store cannot be shared by
// processes).
func BenchmarkEpisodeConcurrent(b *testing.B) {
	for _, g := range []int{1, 4, 16} {
		b.Run("goroutines="+strconv.Itoa(g), func(b *testing.B) { storetest.BenchEpisodeParallel(b, kernel.NewMemStore(), g) })
	}
}

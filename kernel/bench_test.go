package kernel_test

import (
	"strconv"
	"testing"

	"github.com/blackboardkernel/bk/blackboard/storetest"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store/memstore"
)

// BenchmarkEpisodeMemory is the governed episode on the memory store, with
// 0 to 10^6 records of other traces already held (flat-history target).
func BenchmarkEpisodeMemory(b *testing.B) {
	for _, n := range []int{0, 1_000, 10_000, 100_000, 1_000_000} {
		b.Run("history="+strconv.Itoa(n), func(b *testing.B) { storetest.BenchEpisode(b, memstore.New(), n) })
	}
}

// BenchmarkEpisodeTracing compares the default (the global OpenTelemetry
// provider, a no-op) with instrumentation switched off.
func BenchmarkEpisodeTracing(b *testing.B) {
	b.Run("global-noop", func(b *testing.B) { storetest.BenchEpisode(b, memstore.New(), 0) })
	b.Run("off", func(b *testing.B) {
		storetest.BenchEpisode(b, memstore.New(), 0, kernel.WithTracerProvider(nil))
	})
}

// BenchmarkEpisodeParallel runs episodes on distinct traces from 1 to 8
// goroutines on one kernel.
func BenchmarkEpisodeParallel(b *testing.B) {
	for _, g := range []int{1, 2, 4, 8} {
		b.Run("goroutines="+strconv.Itoa(g), func(b *testing.B) { storetest.BenchEpisodeParallel(b, memstore.New(), g) })
	}
}

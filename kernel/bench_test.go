package kernel_test

import (
	"strconv"
	"testing"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store/memstore"
)

// BenchmarkEpisodeMemory is the governed episode on the memory store, with
// 0 to 10^6 records of other traces already held (flat-history target).
func BenchmarkEpisodeMemory(b *testing.B) {
	for _, n := range []int{0, 1_000, 10_000, 100_000, 1_000_000} {
		b.Run("history="+strconv.Itoa(n), func(b *testing.B) { benchEpisode(b, memstore.New(), n, kernel.Config{}) })
	}
}

// BenchmarkEpisodeTracing compares the default (the global OpenTelemetry
// provider, a no-op) with instrumentation switched off.
func BenchmarkEpisodeTracing(b *testing.B) {
	b.Run("global-noop", func(b *testing.B) { benchEpisode(b, memstore.New(), 0, kernel.Config{}) })
	b.Run("off", func(b *testing.B) {
		benchEpisode(b, memstore.New(), 0, kernel.Config{TracerProvider: noop.NewTracerProvider()})
	})
}

// BenchmarkEpisodeParallel runs episodes on distinct traces from 1 to 8
// goroutines on one kernel.
func BenchmarkEpisodeParallel(b *testing.B) {
	for _, g := range []int{1, 2, 4, 8} {
		b.Run("goroutines="+strconv.Itoa(g), func(b *testing.B) { benchEpisodeParallel(b, memstore.New(), g) })
	}
}

// BenchmarkViewSession is a view of one trace that holds n observations of
// one kind on the memory store: read from the trace's decision state, it
// costs the same at every n (it read every record before).
func BenchmarkViewSession(b *testing.B) {
	for _, n := range []int{1, 1_000, 10_000} {
		b.Run("records="+strconv.Itoa(n), func(b *testing.B) {
			ctx := b.Context()
			k, err := kernel.New(kernel.Config{Store: memstore.New()})
			if err != nil {
				b.Fatal(err)
			}
			defer k.Close()
			tool := k.Handle(blackboard.RoleTool, "tool")
			for i := range n {
				if _, err := tool.Write(ctx, kernel.Entry{TraceID: "session", Slot: blackboard.Percepts, Kind: "charge", Payload: blackboard.Payload{"n": float64(i)}}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := k.Reader().View(ctx, "session", false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

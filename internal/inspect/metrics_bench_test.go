package inspect_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/blackboardkernel/bk/internal/inspect"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/toolgate"
)

// BenchmarkStats measures `bk stats` with its metrics on stores of 512
// executed calls cut into traces of 8, 64 and 512 calls, and on a store
// twice as large: the cost per record stays flat as the traces grow
// (the store is read once, never trace by trace), and doubles with the
// store. ns/record is the figure to compare.
func BenchmarkStats(b *testing.B) {
	for _, c := range []struct{ calls, perTrace int }{{512, 8}, {512, 64}, {512, 512}, {1024, 64}} {
		b.Run(fmt.Sprintf("calls=%d/trace=%d", c.calls, c.perTrace), func(b *testing.B) {
			s, n := statsStore(b, c.calls, c.perTrace)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := inspect.Stats(ctx, s, ""); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/record")
		})
	}
}

// statsStore fills a store with calls executed lookups, perTrace to a
// trace, and returns it with its number of records.
func statsStore(b *testing.B, calls, perTrace int) (store.Store, int) {
	b.Helper()
	ctx := context.Background()
	s := memstore.New()
	g, err := toolgate.New(ctx, toolgate.Config{
		Kernel:    kernel.Config{Store: s},
		Tools:     []toolgate.Tool{deskTools()[0]},
		Contracts: map[string][]string{"support": {"lookup_order"}},
	})
	if err != nil {
		b.Fatal(err)
	}
	for i := range calls {
		args, _ := json.Marshal(map[string]string{"order_id": fmt.Sprint("A", i)})
		if _, err := g.Call(ctx, toolgate.Call{Tool: "lookup_order", Args: args, Caller: "support",
			TraceID: fmt.Sprint("t", i/perTrace)}); err != nil {
			b.Fatal(err)
		}
	}
	rep, err := inspect.Stats(ctx, s, "")
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, c := range rep.Records {
		n += c.Total
	}
	return s, n
}

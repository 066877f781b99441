package replay_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/blackboardkernel/bk/replay"
)

// BenchmarkTrace replays traces of 10, 100 and 1,000 gate calls (a
// lookup that derives a belief, then a charge resting on it: about 12
// records a pair): a replay reads the trace twice and decides each call
// again, so its cost per decision should not grow with the trace.
func BenchmarkTrace(b *testing.B) {
	for _, pairs := range []int{5, 50, 500} {
		b.Run(fmt.Sprintf("calls=%d", 2*pairs), func(b *testing.B) {
			sh := newShop(b)
			for i := range pairs {
				acc := fmt.Sprintf(`"acc-%d"`, i)
				if _, err := sh.g.Call(context.Background(), callOf("lookup", `{"account":`+acc+`}`)); err != nil {
					b.Fatal(err)
				}
				if _, err := sh.g.Call(context.Background(), callOf("charge", `{"account":`+acc+`,"card":"4111111111111111","amount":50}`)); err != nil {
					b.Fatal(err)
				}
			}
			var decisions int
			b.ResetTimer()
			for b.Loop() {
				rep, err := replay.Trace(context.Background(), sh.s, "shop", "bench")
				if err != nil || rep.First >= 0 {
					b.Fatal(err, rep.Counts)
				}
				decisions = len(rep.Decisions)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(decisions), "ns/decision")
		})
	}
}

package rules

import (
	"context"
	"fmt"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
)

// BenchmarkRuleOverList: one evaluation of a rule over a list the proposal
// carries, at several sizes (past MaxElements too: the evaluation itself,
// without the bound in front of it): the time per element must stay flat.
// With cel-go's runtime cost tracker it grew with the list (2.3 µs an
// element at 1,000, 12 µs at 4,000, 23 µs at 16,000).
func BenchmarkRuleOverList(b *testing.B) {
	rs, err := New(OnAction("small_items", "tag", `action.items.all(i, i <= 10)`))
	if err != nil {
		b.Fatal(err)
	}
	rl := rs.actions["tag"][0]
	for _, n := range []int{1000, 4000, 16000} {
		items := make([]any, n)
		for i := range items {
			items[i] = 1.0
		}
		in := &input{action: blackboard.Payload{"items": items}}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				out, _, err := rl.prg.ContextEval(context.Background(), in)
				if err != nil || out.Value() != true {
					b.Fatal(out, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/elem")
		})
	}
}

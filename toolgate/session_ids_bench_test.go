package toolgate

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/store/memstore"
)

// BenchmarkSessionCallN measures call n of one session on a memory store: n-1
// executed read-only lookups go into one trace first, outside the timer,
// and the timed calls are the next ones of the same trace (calls n,
// n+1, ...). The trace grows by one call per iteration, so run it with a
// small fixed count (-benchtime=20x) to keep the timed calls near n; the
// setup of the larger n takes a while, more so where a call's cost grows
// with the trace.
func BenchmarkSessionCallN(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			d := newDesk(b, memstore.New())
			i := 0
			call := func() {
				i++
				args := json.RawMessage(`{"order_id":"A` + strconv.Itoa(i) + `"}`)
				res, err := d.g.Call(d.ctx, Call{Tool: "lookup_order", Args: args, Caller: "support", TraceID: "session"})
				if err != nil || res.Outcome != audit.OutcomeExecuted || res.DecisionID == "" {
					b.Fatalf("call %d: %+v %v", i, res, err)
				}
			}
			for range n - 1 {
				call()
			}
			b.ReportAllocs()
			for b.Loop() {
				call()
			}
		})
	}
}

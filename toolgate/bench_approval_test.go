package toolgate

import (
	"strconv"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/store/memstore"
)

// BenchmarkExecuteApproved measures the approved path on a memory store: a
// refund that waits for approval, its approval, and the Execute that
// decides its evidence again and runs it. Each iteration uses a fresh
// trace.
func BenchmarkExecuteApproved(b *testing.B) {
	d := newDesk(b, memstore.New())
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		trace := "t" + strconv.Itoa(i)
		d.ground(trace, "A1")
		wait := d.refund(trace, "A1", 700)
		d.approve(trace, wait.ActionID, "human:alice", time.Hour)
		if res := d.execute(wait.ActionID); res.Outcome != audit.OutcomeExecuted {
			b.Fatal(res)
		}
	}
}

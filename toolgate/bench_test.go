package toolgate

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/store/memstore"
)

// BenchmarkCall measures one governed call on a memory store: a read-only
// lookup (checks, kernel decision, attempt, result) and a call the caller
// contract refuses (one decision record). Each iteration uses a fresh
// trace, so the cost does not grow with the trace.
func BenchmarkCall(b *testing.B) {
	for _, bc := range []struct {
		name, caller, tool string
	}{
		{"executed", "support", "lookup_order"},
		{"refused", "researcher", "lookup_order"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			d := newDesk(b, memstore.New())
			args := json.RawMessage(`{"order_id":"A1"}`)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				res, err := d.g.Call(d.ctx, Call{Tool: bc.tool, Args: args, Caller: bc.caller, TraceID: "t" + strconv.Itoa(i)})
				if err != nil || res.Outcome == "" {
					b.Fatal(res, err)
				}
			}
		})
	}
}

// BenchmarkBoundRefund measures a refund resting on a belief, whose
// arguments the gate checks against the order percept under it: each
// iteration looks the order up, commits the belief and refunds, in a
// fresh trace.
func BenchmarkBoundRefund(b *testing.B) {
	d := newDesk(b, memstore.New())
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		trace := "t" + strconv.Itoa(i)
		d.ground(trace, "A1")
		if res := d.refund(trace, "A1", 100); res.Outcome != audit.OutcomeExecuted {
			b.Fatal(res)
		}
	}
}

// BenchmarkCallTraceLength measures the same calls as [BenchmarkCall] in
// a trace that already holds n earlier lookups (five records each): the
// gate's own lookups (run controls, retry keys, a call's compiled
// context) are by key or id, so the cost must not grow with n. Run it
// with a fixed -benchtime (say 500x) so that every length grows alike.
func BenchmarkCallTraceLength(b *testing.B) {
	for _, n := range []int{0, 300, 3000} {
		for _, bc := range []struct {
			name, caller string
		}{{"executed", "support"}, {"refused", "researcher"}} {
			b.Run(bc.name+"/calls="+strconv.Itoa(n), func(b *testing.B) {
				d := newDesk(b, memstore.New())
				args := json.RawMessage(`{"order_id":"A1"}`)
				for range n {
					if _, err := d.g.Call(d.ctx, Call{Tool: "lookup_order", Args: args, Caller: "support", TraceID: "t"}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				for b.Loop() {
					res, err := d.g.Call(d.ctx, Call{Tool: "lookup_order", Args: args, Caller: bc.caller, TraceID: "t"})
					if err != nil || res.Outcome == "" {
						b.Fatal(res, err)
					}
				}
			})
		}
	}
}

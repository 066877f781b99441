package pack_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/pack"
	"github.com/blackboardkernel/bk/toolgate"
)

// benchTrace is a trace of n records: eight observations with a committed
// belief on each, written first, then observations of other kinds up to
// n records, so the beliefs lie deep in a long trace.
func benchTrace(b *testing.B, n int) *kernel.Kernel {
	b.Helper()
	ctx := context.Background()
	clk := &clock{t0}
	k, err := kernel.New(kernel.Config{Clock: clk.now})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { k.Close() })
	tool, planner := k.Handle(blackboard.RoleTool, "crm"), k.Proposer(blackboard.RolePlanner, "planner")
	written := 0
	for i := range 8 {
		kind := fmt.Sprintf("fact_%d", i)
		if _, err := tool.Write(ctx, kernel.Entry{TraceID: "t1", Slot: blackboard.Percepts, Kind: kind,
			Payload: blackboard.Payload{"order_id": fmt.Sprintf("A-%d", i), "amount": 40 + i, "note": "delivered on time, no complaint on file"}, TTL: 24 * time.Hour}); err != nil {
			b.Fatal(err)
		}
		d, err := planner.Submit(ctx, kernel.Entry{TraceID: "t1", Slot: blackboard.Beliefs, Kind: "holds_" + kind,
			Payload: blackboard.Payload{"value": true, "depends_on": []string{kind}}})
		if err != nil || !d.Committed() {
			b.Fatal(d.Code, err)
		}
		written += 4 // percept, proposal, artifact, belief
	}
	for i := written; i < n; i++ {
		if _, err := tool.Write(ctx, kernel.Entry{TraceID: "t1", Slot: blackboard.Percepts, Kind: fmt.Sprintf("log_%d", i%50),
			Payload: blackboard.Payload{"line": i}}); err != nil {
			b.Fatal(err)
		}
	}
	return k
}

func benchInput() pack.Input {
	in := input()
	in.LastResult = strings.Repeat("Order A-17 was delivered on 2026-11-20; the customer reports a damaged item. ", 120)
	for i := 3; i <= 40; i++ {
		in.Progress = append(in.Progress, pack.Step{Turn: i, Tool: "search_tickets", OK: true, Note: fmt.Sprintf("ticket page %d: no earlier refund", i)})
	}
	for i := range 40 {
		in.Tools = append(in.Tools, toolgate.Spec{Name: fmt.Sprintf("lookup_%d", i), Description: "Looks up one kind of record in the CRM.",
			Parameters: []byte(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)})
	}
	return in
}

// BenchmarkCompile compiles one turn's context (16k window) on traces of
// 10, 1,000 and 10,000 records, each turn with a new task line: the
// compiler has counted the run's other units on earlier turns.
func BenchmarkCompile(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			k := benchTrace(b, n)
			clk := &clock{t0.Add(time.Hour)}
			c := compiler(b, clk, pack.WithWindow(16384))
			in := benchInput()
			ctx := context.Background()
			var tokens int
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				in.Task = fmt.Sprintf("Turn %d: decide whether to refund order A-17.", i)
				p, err := c.Compile(ctx, k.Reader(), run(), in)
				if err != nil {
					b.Fatal(err)
				}
				tokens = p.Tokens
			}
			b.ReportMetric(float64(tokens), "tokens")
		})
	}
}

// BenchmarkCompileCold is the first turn of a run: every unit is counted.
func BenchmarkCompileCold(b *testing.B) {
	k := benchTrace(b, 1000)
	clk := &clock{t0.Add(time.Hour)}
	in := benchInput()
	ctx := context.Background()
	var tokens int
	for b.Loop() {
		b.StopTimer()
		c := compiler(b, clk, pack.WithWindow(16384))
		b.StartTimer()
		p, err := c.Compile(ctx, k.Reader(), run(), in)
		if err != nil {
			b.Fatal(err)
		}
		tokens = p.Tokens
	}
	b.ReportMetric(float64(tokens), "tokens")
}

package llm_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/pack"
	"github.com/blackboardkernel/bk/toolgate"
)

// BenchmarkTurnContext is what an agent with a compiler adds to a round
// before the model call: the tool surface, the governance read from the
// gate (pack.Govern), the compile and the record, on traces of 10, 1,000
// and 10,000 records (an order looked up, its belief derived, then
// observations of 50 other kinds). Each turn's record adds one to the
// trace.
func BenchmarkTurnContext(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			ctx := context.Background()
			g := orderGate(b, "")
			if _, err := g.Call(ctx, toolgate.Call{Tool: "lookup_order", Args: []byte(`{"order_id": "A1"}`), Caller: "support", TraceID: "t1"}); err != nil {
				b.Fatal(err)
			}
			tool := g.Kernel().Handle(blackboard.RoleTool, "crm")
			for i := 12; i < n; i++ {
				if _, err := tool.Write(ctx, kernel.Entry{TraceID: "t1", Slot: blackboard.Percepts, Kind: fmt.Sprintf("log_%d", i%50),
					Payload: blackboard.Payload{"line": i}}); err != nil {
					b.Fatal(err)
				}
			}
			c := compiler(b, pack.WithWindow(16384))
			var tokens int
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				tools, err := g.Surface(ctx, "support", "t1", "")
				if err != nil {
					b.Fatal(err)
				}
				run := pack.Run{TraceID: "t1", Role: "support"}
				in := pack.Input{Mission: mission, Task: fmt.Sprintf("Turn %d: refund order A1.", i), Tools: tools,
					LastResult: `- c1 lookup_order: {"outcome":"executed","code":"EFFECT_SUCCEEDED","output":{"amount":40,"order_id":"A1"}}`,
					Progress:   []pack.Step{{Turn: 1, Tool: "lookup_order", OK: true, Note: "executed EFFECT_SUCCEEDED"}}}
				if err := pack.Govern(ctx, g, &run, &in); err != nil {
					b.Fatal(err)
				}
				p, err := c.Compile(ctx, g.Kernel().Reader(), run, in)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := p.Record(ctx, g.Kernel().Governor()); err != nil {
					b.Fatal(err)
				}
				tokens = p.Tokens
			}
			b.ReportMetric(float64(tokens), "tokens")
		})
	}
}

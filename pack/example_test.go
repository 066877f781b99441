package pack_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/pack"
	"github.com/blackboardkernel/bk/toolgate"
)

// Token counts are the model's own: "hello world" is two tokens in both
// encodings, "supercalifragilistic" seven in cl100k_base and six in
// o200k_base.
func ExampleCompiler_Count() {
	for _, enc := range []string{pack.EncodingCL100K, pack.EncodingO200K} {
		c, err := pack.New(pack.WithEncoding(enc))
		if err != nil {
			log.Fatal(err)
		}
		for _, s := range []string{"hello world", "supercalifragilistic"} {
			n, err := c.Count(s)
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("%s %q: %d\n", enc, s, n)
		}
	}
	// Output:
	// cl100k_base "hello world": 2
	// cl100k_base "supercalifragilistic": 7
	// o200k_base "hello world": 2
	// o200k_base "supercalifragilistic": 6
}

// A compiled context for one turn of a refund: the observation the belief
// rests on has outlived its TTL, so it is shown as stale, never as a
// current fact; the prohibited tool is not shown, and the manifest says so (its record
// lists the cut).
func ExampleCompiler_Compile() {
	ctx := context.Background()
	now := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	k, err := kernel.New(kernel.Config{Clock: clock})
	if err != nil {
		log.Fatal(err)
	}
	defer k.Close()
	if _, err := k.Handle(blackboard.RoleTool, "orders").Write(ctx, kernel.Entry{TraceID: "t1", Slot: blackboard.Percepts, Kind: "order",
		Payload: blackboard.Payload{"order_id": "A-17", "amount": 40}, TTL: time.Hour}); err != nil {
		log.Fatal(err)
	}
	if _, err := k.Proposer(blackboard.RolePlanner, "planner").Submit(ctx, kernel.Entry{TraceID: "t1", Slot: blackboard.Beliefs, Kind: "refund_eligible",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}}); err != nil {
		log.Fatal(err)
	}
	now = now.Add(3 * time.Hour)

	c, err := pack.New(pack.WithWindow(4096), pack.WithClock(clock))
	if err != nil {
		log.Fatal(err)
	}
	p, err := c.Compile(ctx, k.Reader(), pack.Run{TraceID: "t1", ReadOnly: true, Intent: "refund"}, pack.Input{
		Mission:     "Resolve the refund request for order A-17.",
		Constraints: []string{"Never refund more than the order amount."},
		Progress:    []pack.Step{{Turn: 1, Tool: "lookup_order", OK: true, Note: "order A-17 found"}},
		Task:        "Decide whether order A-17 can be refunded.",
		Tools:       []toolgate.Spec{{Name: "lookup_order", Description: "Look up an order."}, {Name: "refund"}},
		Policy:      pack.PolicySummary{Prohibited: []string{"refund"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(p.Prompt)
	fmt.Println(p.Tokens, "tokens")
	fmt.Println("tools shown:", p.Manifest.Tools)
	// Output:
	// ## Mission
	// Resolve the refund request for order A-17.
	// ## Constraints
	// - Never refund more than the order amount.
	// ## Policy
	// - prohibited (refused if called): refund
	// ## Progress
	// - turn 1: lookup_order ok: order A-17 found
	// ## Evidence
	// - STALE: belief refund_eligible = {"depends_on":["order"],"value":true} (beliefs:t1:4; 3 h old): not a current fact
	//   - STALE: percept order = {"amount":40,"order_id":"A-17"} (percepts:t1:1; observed 3 h ago): not a current fact
	// ## Current task
	// Decide whether order A-17 can be refunded.
	// ## Tools
	// - lookup_order: Look up an order.
	// ## Run controls
	// - safety mode: read_only (tools with effects are neither shown nor run)
	// - trace t1, intent refund
	// 191 tokens
	// tools shown: [lookup_order]
}

package inspect_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/inspect"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

// The paper's stale-evidence episode, written to a SQLite file, then read
// back with `bk timeline` and `bk stats`.
func ExampleMain() {
	dir, _ := os.MkdirTemp("", "bk-example-")
	defer os.RemoveAll(dir)
	db := filepath.Join(dir, "bk.db")

	s, _ := sqlitestore.Open(context.Background(), db)
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	k, _ := kernel.New(kernel.Config{Store: s, Clock: func() time.Time { return start }})
	ctx := context.Background()
	_, _ = k.Handle(blackboard.RoleTool, "payment_tool").Write(ctx, kernel.Entry{TraceID: "stale", Slot: blackboard.Percepts, Kind: "charge",
		Payload: blackboard.Payload{"stale": true}})
	planner := k.Proposer(blackboard.RolePlanner, "planner")
	_, _ = planner.Submit(ctx, kernel.Entry{TraceID: "stale", Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"charge"}}})
	_, _ = planner.Submit(ctx, kernel.Entry{TraceID: "stale", Slot: blackboard.Actions, Kind: kernel.FallbackQueueForReview,
		Payload: blackboard.Payload{"reason": "STALE_EVIDENCE"}})
	s.Close()

	code := inspect.Main(ctx, []string{"--db", db, "timeline", "stale"}, os.Stdout, os.Stderr)
	fmt.Println("exit", code)
	inspect.Main(ctx, []string{"--db", db, "traces"}, os.Stdout, os.Stderr)
	// Output:
	// trace "stale" (namespace default): 4 records, 2 decisions, 1 refused; outcome: queue_for_review committed
	//   percept.charge committed (stale=true)                          percepts:stale:1
	//   belief.refund_due proposed                                     beliefs:stale:2
	//   evidence validation: STALE_EVIDENCE -- belief rejected         beliefs:stale:2
	//   action.queue_for_review proposed                               actions:stale:3
	//   action.queue_for_review committed (reason=STALE_EVIDENCE)      actions:stale:4
	// exit 0
	// TRACE  NAMESPACE  RECORDS  DECISIONS  REFUSED  LAST                 OUTCOME
	// stale  default    4        2          1        2025-01-01 00:00:00  queue_for_review committed
}

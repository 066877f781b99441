package storetest

import (
	"context"
	"strconv"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// Prefill puts n records of other traces (ten percepts to a trace) into s,
// in batches, so that an episode can be measured against a store that
// already holds history.
func Prefill(tb testing.TB, s store.Store, n int) {
	tb.Helper()
	const batchSize = 1000
	batch := store.Batch{Appends: make([]blackboard.Record, 0, batchSize)}
	for i := range n {
		trace := "history-" + strconv.Itoa(i/10)
		batch.Appends = append(batch.Appends, blackboard.Record{
			ID: "percepts:" + trace + ":" + strconv.Itoa(i%10+1), Slot: blackboard.Percepts, Mode: blackboard.ModeCommit, Kind: "charge",
			Payload:    blackboard.Payload{"charge_id": "ch_" + strconv.Itoa(i), "amount": 42.0, "currency": "usd", "stale": false, "conflict": false},
			Provenance: blackboard.Provenance{Role: blackboard.RoleTool, Writer: "stripe", TraceID: trace, TimestampMS: int64(i)},
			Status:     blackboard.StatusActive, Reason: reason.Committed, Scope: blackboard.ScopeEpisode,
		})
		if len(batch.Appends) == batchSize || i == n-1 {
			if err := s.Apply(context.Background(), batch); err != nil {
				tb.Fatalf("prefill: %v", err)
			}
			batch.Appends = batch.Appends[:0]
		}
	}
}

package ledger_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/ledger"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

// verifySizes are the store sizes BenchmarkVerify reads: records, in
// traces of 100. BK_VERIFY_SIZES overrides them (comma-separated), e.g.
// BK_VERIFY_SIZES=1000000 for the target of 10^6 records.
func verifySizes(b *testing.B) []int {
	sizes := []int{10_000, 100_000}
	if v := os.Getenv("BK_VERIFY_SIZES"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 100 {
				b.Fatalf("BK_VERIFY_SIZES: %q", f)
			}
			sizes = append(sizes, n)
		}
	}
	return sizes
}

// BenchmarkVerify is `bk verify`'s walk (ledger.Verify) over a SQLite
// store of n records, in traces of 100 records of which every tenth was
// invalidated: its time per store, and the peak heap it used (sampled),
// which must not grow with n past what the list of traces takes.
func BenchmarkVerify(b *testing.B) {
	for _, n := range verifySizes(b) {
		b.Run("records="+strconv.Itoa(n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "bk.db")
			st, err := sqlitestore.Open(b.Context(), path)
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			fill(b, st, n)
			b.ResetTimer()
			var peak atomic.Uint64
			for b.Loop() {
				runtime.GC()
				var base runtime.MemStats
				runtime.ReadMemStats(&base)
				done := make(chan struct{})
				go sample(&peak, base.HeapInuse, done)
				rep, err := ledger.Verify(b.Context(), st, nil)
				close(done)
				if err != nil || !rep.OK() || len(rep.Traces) != n/100 {
					b.Fatalf("Verify: %v, ok %v, %d traces", err, rep.OK(), len(rep.Traces))
				}
			}
			b.ReportMetric(float64(peak.Load())/(1<<20), "peak-MiB")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/record")
		})
	}
}

// sample records the largest heap in use above base until done closes.
func sample(peak *atomic.Uint64, base uint64, done chan struct{}) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		if m.HeapInuse > base && m.HeapInuse-base > peak.Load() {
			peak.Store(m.HeapInuse - base)
		}
		select {
		case <-done:
			return
		case <-t.C:
		}
	}
}

// fill writes n records in traces of 100 through the store's contract,
// one batch per trace, then invalidates every tenth record of each.
func fill(b *testing.B, st store.Store, n int) {
	ctx := b.Context()
	for t := range n / 100 {
		trace := fmt.Sprintf("t%06d", t)
		batch := store.Batch{Appends: make([]blackboard.Record, 100)}
		for i := range batch.Appends {
			batch.Appends[i] = blackboard.Record{ID: store.RecordID(blackboard.Percepts, "", trace, i+1), Slot: blackboard.Percepts, Mode: blackboard.ModeCommit,
				Kind: "order", Payload: blackboard.Payload{"order_id": "A-" + strconv.Itoa(i), "amount": float64(i) * 1.5},
				Provenance: blackboard.Provenance{Role: blackboard.RoleTool, Writer: "crm", TraceID: trace, TimestampMS: 1_767_225_600_000 + int64(i)},
				Status:     blackboard.StatusActive, Reason: reason.Committed, Scope: blackboard.ScopeEpisode}
		}
		if err := st.Apply(ctx, batch); err != nil {
			b.Fatal(err)
		}
		var inv store.Batch
		for i := 0; i < 100; i += 10 {
			inv.Invalidations = append(inv.Invalidations, store.Invalidation{ID: batch.Appends[i].ID, Status: blackboard.StatusInvalidated, Reason: reason.StaleEvidence})
		}
		if err := st.Apply(ctx, inv); err != nil {
			b.Fatal(err)
		}
	}
}

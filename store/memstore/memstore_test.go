package memstore_test

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/blackboard/storetest"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store/memstore"
)

func TestMemStoreConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) blackboard.Store { return memstore.New() })
}

func BenchmarkMemStore(b *testing.B) {
	storetest.Bench(b, func(*testing.B) blackboard.Store { return memstore.New() })
}

// BenchmarkBytesPerRecord reports the heap a store of 10^6 records costs
// per record: the heap in use after a collection, less what was in use
// before the store was made, over the records. The records are committed
// percepts of ten to a trace, with a payload of five keys, as a tool's
// observations through a kernel are (storetest.Prefill); the payloads the
// caller built are counted, since the store keeps them or what it packs
// them into.
func BenchmarkBytesPerRecord(b *testing.B) {
	const n = 1_000_000
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := memstore.New()
		storetest.Prefill(b, s, n)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "bytes/record")
		runtime.KeepAlive(s)
	}
}

// TestAppendTrace: AppendTrace gives what ListTrace gives, after what dst
// already holds, and refuses a cancelled context and a closed store.
func TestAppendTrace(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	k, err := kernel.New(kernel.WithStore(st))
	if err != nil {
		t.Fatal(err)
	}
	tool := k.Tool("t")
	for i, trace := range []string{"a", "b", "a"} {
		if _, err := tool.Write(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: "charge", Payload: blackboard.Payload{"n": float64(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	var want []blackboard.Record
	for r, err := range st.ListTrace(ctx, "a") {
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, r)
	}
	prefix := blackboard.Record{ID: "kept"}
	got, err := st.AppendTrace(ctx, []blackboard.Record{prefix}, "a")
	if err != nil || len(got) != 3 || got[0].ID != "kept" || !reflect.DeepEqual(got[1:], want) {
		t.Fatalf("AppendTrace = %d records, %v; want kept + %d", len(got), err, len(want))
	}
	if none, err := st.AppendTrace(ctx, nil, "nobody"); err != nil || len(none) != 0 {
		t.Errorf("unknown trace: %v, %v", none, err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := st.AppendTrace(cancelled, nil, "a"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	st.Close()
	if _, err := st.AppendTrace(ctx, nil, "a"); !errors.Is(err, blackboard.ErrClosed) {
		t.Errorf("closed: %v", err)
	}
}

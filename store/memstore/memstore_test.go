package memstore_test

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"strconv"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/store/storetest"
)

func TestMemStoreConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return memstore.New() })
}

// TestPackedConformance runs the conformance suite on a store that packs
// every payload as it is appended, which a store otherwise does only to
// records thousands of appends old.
func TestPackedConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return memstore.NewPacking() })
}

func BenchmarkMemStore(b *testing.B) {
	storetest.Bench(b, func(*testing.B) store.Store { return memstore.New() })
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
	k, err := kernel.New(kernel.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	tool := k.Handle(blackboard.RoleTool, "t")
	for i, trace := range []string{"a", "b", "a"} {
		if _, err := tool.Write(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: "charge", Payload: blackboard.Payload{"n": float64(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	var want []blackboard.Record
	for r, err := range st.ListTrace(ctx, "", "a") {
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, r)
	}
	prefix := blackboard.Record{ID: "kept"}
	got, err := st.AppendTrace(ctx, []blackboard.Record{prefix}, "", "a")
	if err != nil || len(got) != 3 || got[0].ID != "kept" || !reflect.DeepEqual(got[1:], want) {
		t.Fatalf("AppendTrace = %d records, %v; want kept + %d", len(got), err, len(want))
	}
	if none, err := st.AppendTrace(ctx, nil, "", "nobody"); err != nil || len(none) != 0 {
		t.Errorf("unknown trace: %v, %v", none, err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := st.AppendTrace(cancelled, nil, "", "a"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	st.Close()
	if _, err := st.AppendTrace(ctx, nil, "", "a"); !errors.Is(err, blackboard.ErrClosed) {
		t.Errorf("closed: %v", err)
	}
}

// TestPackedRecords: records whose payloads the store has packed (those
// with more than 4,096 newer records of their slot) read back as they
// were appended, through every read, with a nil payload still nil, an
// empty one still empty, nested values and the rarely set fields kept, and
// a payload of more keys than a packing array holds whole; a status change
// reaches them, and a read hands back a new map each time, so a caller's
// copy is its own.
func TestPackedRecords(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	conf := 0.25
	big := blackboard.Payload{}
	for i := range 70_000 {
		big["k"+strconv.Itoa(i)] = float64(i)
	}
	want := map[string]blackboard.Record{}
	var order []string
	const n = 9_000
	for i := range n {
		trace := "t" + strconv.Itoa(i/7)
		r := blackboard.Record{
			ID: store.RecordID(blackboard.Percepts, "ns", trace, i%7+1), Slot: blackboard.Percepts, Mode: blackboard.ModeCommit, Kind: "k" + strconv.Itoa(i%3),
			Payload:    blackboard.Payload{"n": float64(i), "s": "v" + strconv.Itoa(i), "list": []any{"a", 1.0}, "obj": map[string]any{"x": true}},
			Provenance: blackboard.Provenance{Role: blackboard.RoleTool, Writer: "w" + strconv.Itoa(i%2), TraceID: trace, TimestampMS: int64(i)},
			Status:     blackboard.StatusActive, Reason: reason.Committed, Scope: blackboard.ScopeEpisode,
			Namespace: "ns",
		}
		switch i % 5 {
		case 1:
			r.Payload = nil
		case 2:
			r.Payload = blackboard.Payload{}
		case 3:
			r.Provenance.InputRefs, r.EvidenceRefs = []string{"x"}, []string{}
			r.Provenance.Confidence, r.Provenance.TTLMS, r.Provenance.Span = &conf, 5, "00-span"
			r.Scope = blackboard.ScopePersistent
		}
		if i == 10 {
			r.Payload = big
		}
		if i == 11 {
			r.ID = "custom-" + strconv.Itoa(i) // found through the map of other ids
		}
		if err := st.Apply(ctx, store.Batch{Appends: []blackboard.Record{r}}); err != nil {
			t.Fatal(err)
		}
		want[r.ID] = r
		order = append(order, r.ID)
	}
	// Records 0..n-4097 are packed; invalidate one packed and one not.
	for _, id := range []string{order[12], order[n-1]} {
		if err := st.Apply(ctx, store.Batch{Invalidations: []store.Invalidation{{ID: id, Status: blackboard.StatusInvalidated, Reason: reason.SupersededByCommit}}}); err != nil {
			t.Fatal(err)
		}
		r := want[id]
		r.Status, r.Reason = blackboard.StatusInvalidated, reason.SupersededByCommit
		want[id] = r
	}
	check := func(how string, got blackboard.Record) {
		t.Helper()
		w, ok := want[got.ID]
		if !ok || !reflect.DeepEqual(got, w) {
			t.Fatalf("%s %s:\n got %+v\nwant %+v", how, got.ID, got, w)
		}
		if (got.Payload == nil) != (w.Payload == nil) {
			t.Fatalf("%s %s: payload nil %v, want %v", how, got.ID, got.Payload == nil, w.Payload == nil)
		}
	}
	for _, id := range []string{order[0], order[1], order[2], order[3], order[10], order[11], order[12], order[n-1]} {
		got, err := st.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		check("Get", got)
	}
	seen := 0
	for r, err := range st.ListSlot(ctx, blackboard.Percepts, store.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		check("ListSlot", r)
		seen++
	}
	if seen != n {
		t.Fatalf("ListSlot gave %d records, want %d", seen, n)
	}
	for r, err := range st.ListSlot(ctx, blackboard.Percepts, store.Filter{Scope: blackboard.ScopePersistent, Status: blackboard.StatusActive}) {
		if err != nil {
			t.Fatal(err)
		}
		if r.Scope != blackboard.ScopePersistent || r.Status != blackboard.StatusActive {
			t.Fatalf("filtered ListSlot gave %+v", r)
		}
		check("ListSlot persistent", r)
	}
	for r, err := range st.ListTrace(ctx, "ns", "t0") {
		if err != nil {
			t.Fatal(err)
		}
		check("ListTrace", r)
	}
	found, err := st.FindActive(ctx, "ns", "t0", blackboard.Percepts, "k0")
	if err != nil {
		t.Fatal(err)
	}
	check("FindActive", found)
	// Each read of a packed record builds its own map.
	a, _ := st.Get(ctx, order[0])
	a.Payload["n"] = "changed"
	if b, _ := st.Get(ctx, order[0]); b.Payload["n"] != float64(0) {
		t.Fatalf("a caller's change to a packed payload reached the store: %v", b.Payload["n"])
	}
	var traces int
	for ts, err := range st.ListTraces(ctx, "ns") {
		if err != nil {
			t.Fatal(err)
		}
		if ts.Namespace != "ns" || ts.Records == 0 || ts.FirstMS > ts.LastMS {
			t.Fatalf("trace summary %+v", ts)
		}
		traces++
	}
	if want := (n + 6) / 7; traces != want {
		t.Fatalf("ListTraces gave %d traces, want %d", traces, want)
	}
}

// BenchmarkLarge measures a store of 10^5 percepts (storetest.Prefill),
// past the window of records that keep their payload maps: Append, which
// then packs an older payload each time, and Get of an old record, whose
// map it builds again, and of the last one appended, which keeps its map.
func BenchmarkLarge(b *testing.B) {
	ctx := context.Background()
	s := memstore.New()
	storetest.Prefill(b, s, 100_000)
	last := "percepts:history-9999:10"
	runs := 0 // each run of Append (-count) writes traces of its own
	b.Run("Append", func(b *testing.B) {
		runs++
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			trace := "large-" + strconv.Itoa(runs) + "-" + strconv.Itoa(i/10)
			last = "percepts:" + trace + ":" + strconv.Itoa(i%10+1)
			err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{{
				ID: last, Slot: blackboard.Percepts, Mode: blackboard.ModeCommit, Kind: "charge",
				Payload:    blackboard.Payload{"charge_id": "ch_" + strconv.Itoa(i), "amount": 42.0, "currency": "usd", "stale": false, "conflict": false},
				Provenance: blackboard.Provenance{Role: blackboard.RoleTool, Writer: "stripe", TraceID: trace, TimestampMS: int64(i)},
				Status:     blackboard.StatusActive, Reason: reason.Committed, Scope: blackboard.ScopeEpisode,
			}}})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, c := range []struct{ name, id string }{{"GetOld", "percepts:history-0:1"}, {"GetNew", ""}} {
		b.Run(c.name, func(b *testing.B) {
			id := c.id
			if id == "" {
				id = last
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Get(ctx, id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestEmptyListingAllocatesNothing: a listing of an empty slot is found
// empty when it is asked for and costs no allocation (a kernel made for one
// episode lists the persistent constraints of a store that has none), and
// one that cannot be answered still reports its error when ranged over.
func TestEmptyListingAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	f := store.Filter{Status: blackboard.StatusActive, Scope: blackboard.ScopePersistent, Namespace: blackboard.DefaultNamespace}
	bs := opaque(st)
	got := 0
	yield := func(blackboard.Record, error) bool { got++; return true }
	if n := testing.AllocsPerRun(100, func() {
		// Through the interface and called directly, as the kernel does:
		// a range loop's body would be an allocation of the test's own.
		bs.ListSlot(ctx, blackboard.Constraints, f)(yield)
	}); n != 0 || got != 0 {
		t.Errorf("an empty listing costs %v allocations and yields %d results, want 0 and 0", n, got)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, err := range st.ListSlot(cancelled, blackboard.Constraints, f) {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled: %v", err)
		}
	}
	st.Close()
	n := 0
	for _, err := range st.ListSlot(ctx, blackboard.Constraints, f) {
		n++
		if !errors.Is(err, blackboard.ErrClosed) {
			t.Errorf("closed: %v", err)
		}
	}
	if n != 1 {
		t.Errorf("closed store: %d results, want its error", n)
	}
}

// opaque hides a store's type from the compiler, as the kernel's field does.
//
//go:noinline
func opaque(s store.Store) store.Store { return s }

// splitIDs are ids around the edges of the store's own reading of kernel ids.
var splitIDs = []string{"", ":", "::", "1", ":1", "a:1", "a::1", "a:b:1", "beliefs:t-1:12", "a:b:0", "a:b:01",
	"a:b:+1", "a:b:-1", "a:b:", "a:b:1x", "a:b:c:7", "a:b:99999999999999999", "a:b:999999999999999999",
	"a:b:9999999999999999999", "a:b:99999999999999999999", "plans:x:y:3", "é:ü:4", "a:b\xff:2",
	"percepts@desk:T1:3", "percepts@a%3Ab:c:d:4", "percepts@default:T1:3", "percepts@:T1:3", "a@x%25:T:1", "a@x%3a:T:1", "a@x%:1",
	"a@x%2:T:1", "a:b@c:2", "@d:t:1", "beliefs@é@ü:t:12"}

// TestSplitIDMatchesSplitRecordID holds the store's id reader to the
// general one: an id read differently would be looked up in the wrong place.
func TestSplitIDMatchesSplitRecordID(t *testing.T) {
	for _, id := range splitIDs {
		checkSplitID(t, id)
	}
}

func FuzzSplitID(f *testing.F) {
	for _, id := range splitIDs {
		f.Add(id)
	}
	f.Fuzz(checkSplitID)
}

func checkSplitID(t *testing.T, id string) {
	ns, tr, n, ok := memstore.SplitID(id)
	wns, wtr, wn, wok := store.SplitRecordID(id)
	if ns != wns || tr != wtr || n != wn || ok != wok {
		t.Errorf("splitID(%q) = %q, %q, %d, %v; want %q, %q, %d, %v", id, ns, tr, n, ok, wns, wtr, wn, wok)
	}
}

// TestListingsAcrossIndexing: a store of one short trace keeps no slot
// index and lists by reading its trace; its listings give what a listing
// through the indexes gives, before and after it outgrows that form (its
// trace longer than a first block, or a second trace), whatever the slot,
// status and scope asked for.
func TestListingsAcrossIndexing(t *testing.T) {
	ctx := context.Background()
	for _, second := range []int{3, 11, 30} { // when a second trace starts
		st := memstore.New()
		var all []blackboard.Record
		for i := range 40 {
			trace := "a"
			if i >= second && i%2 == 1 {
				trace = "b"
			}
			n := 1
			for _, r := range all {
				if r.Provenance.TraceID == trace {
					n++
				}
			}
			slot := blackboard.AllSlots()[i%3*2] // percepts, constraints, evidence
			r := blackboard.Record{
				ID: store.RecordID(slot, "", trace, n), Slot: slot, Mode: blackboard.ModeCommit, Kind: "k",
				Payload:    blackboard.Payload{"i": float64(i)},
				Provenance: blackboard.Provenance{Role: blackboard.RoleSymbolic, Writer: "w", TraceID: trace, TimestampMS: int64(i)},
				Status:     blackboard.StatusActive, Reason: reason.Committed, Scope: []blackboard.Scope{blackboard.ScopeEpisode, blackboard.ScopePersistent}[i/2%2],
			}
			b := store.Batch{Appends: []blackboard.Record{r}}
			if i%4 == 3 { // invalidate an earlier record of the trace
				for j := range all {
					if all[j].Provenance.TraceID == trace && all[j].Status == blackboard.StatusActive {
						b.Invalidations = []store.Invalidation{{ID: all[j].ID, Status: blackboard.StatusInvalidated, Reason: reason.SupersededByCommit}}
						all[j].Status, all[j].Reason = blackboard.StatusInvalidated, reason.SupersededByCommit
						break
					}
				}
			}
			if err := st.Apply(ctx, b); err != nil {
				t.Fatal(err)
			}
			r.Namespace = blackboard.DefaultNamespace
			all = append(all, r)
			for _, slot := range blackboard.AllSlots() {
				for _, f := range []store.Filter{{}, {Scope: blackboard.ScopePersistent}, {Scope: blackboard.ScopeEpisode, Status: blackboard.StatusActive}, {Status: blackboard.StatusInvalidated}} {
					var want, got []blackboard.Record
					for j := range all {
						if all[j].Slot == slot && memstore.Match(f, &all[j]) {
							want = append(want, all[j])
						}
					}
					for r, err := range st.ListSlot(ctx, slot, f) {
						if err != nil {
							t.Fatal(err)
						}
						got = append(got, r)
					}
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("second trace at %d, after %d records: ListSlot(%s, %+v) =\n%+v\nwant\n%+v", second, i+1, slot, f, got, want)
					}
				}
			}
		}
	}
}

// from it stay as they were read.
func TestNewStoreAfterClose(t *testing.T) {
	ctx := context.Background()
	conf := 0.5
	var kept []blackboard.Record
	for round := range 4 {
		st := memstore.New()
		trace := "t" + strconv.Itoa(round)
		var b store.Batch
		for i := range 12 - round*3 {
			r := blackboard.Record{
				ID: store.RecordID(blackboard.Beliefs, "", trace, i+1), Slot: blackboard.Beliefs, Mode: blackboard.ModeCommit, Kind: "k",
				Provenance: blackboard.Provenance{Role: blackboard.RolePlanner, Writer: "w", TraceID: trace, TimestampMS: int64(i)},
				Status:     blackboard.StatusActive, Reason: reason.Committed, Scope: blackboard.ScopeEpisode, Namespace: blackboard.DefaultNamespace,
			}
			if round%2 == 0 { // rounds 0 and 2 set every rare field and a payload; 1 and 3 none
				r.Payload = blackboard.Payload{"i": float64(i)}
				r.Provenance.InputRefs, r.EvidenceRefs = []string{"x"}, []string{"y"}
				r.Provenance.Confidence, r.Provenance.TTLMS, r.Provenance.Span, r.Scope = &conf, 5, "00-span", blackboard.ScopePersistent
			}
			b.Appends = append(b.Appends, r)
		}
		if err := st.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
		got, err := st.AppendTrace(ctx, nil, "", trace)
		if err != nil || !reflect.DeepEqual(got, b.Appends) {
			t.Fatalf("round %d: read %v\n%+v\nwant\n%+v", round, err, got, b.Appends)
		}
		var listed []blackboard.Record
		for r, err := range st.ListSlot(ctx, blackboard.Beliefs, store.Filter{}) {
			if err != nil {
				t.Fatal(err)
			}
			listed = append(listed, r)
		}
		if !reflect.DeepEqual(listed, b.Appends) {
			t.Fatalf("round %d: ListSlot gave %d records, want %d", round, len(listed), len(b.Appends))
		}
		if round > 0 && !reflect.DeepEqual(kept[0].Provenance.InputRefs, []string{"x"}) || kept != nil && kept[0].Provenance.TraceID != "t0" {
			t.Fatalf("round %d: a record read from a closed store changed: %+v", round, kept[0])
		}
		if round == 0 {
			kept = got
		}
		st.Close()
		if _, err := st.Get(ctx, b.Appends[0].ID); !errors.Is(err, blackboard.ErrClosed) {
			t.Fatalf("closed: %v", err)
		}
	}
}

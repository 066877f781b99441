package store_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// kernelBatch is shaped as a kernel's commit of a belief: the committed
// record, the proposal it supersedes is an invalidation, and an evidence
// record, on one trace, with input refs.
func kernelBatch() store.Batch {
	const trace = "ep-000123-bk-seed-42"
	prov := blackboard.Provenance{Role: blackboard.RolePlanner, Writer: "planner", TraceID: trace, TimestampMS: 1700000000000,
		InputRefs: []string{store.RecordID(blackboard.Percepts, "", trace, 1), store.RecordID(blackboard.Percepts, "", trace, 2)}}
	ev := prov
	ev.Role, ev.Writer = blackboard.RoleKernel, "kernel"
	return store.Batch{
		Appends: []blackboard.Record{
			{ID: store.RecordID(blackboard.Beliefs, "", trace, 4), Slot: blackboard.Beliefs, Mode: blackboard.ModeCommit, Kind: "refund_due",
				Payload: blackboard.Payload{"due": true, "amount": 42.0}, Provenance: prov, Status: blackboard.StatusActive,
				Reason: reason.Committed, Scope: blackboard.ScopeEpisode, Namespace: "study"},
			{ID: store.RecordID(blackboard.Evidence, "", trace, 5), Slot: blackboard.Evidence, Mode: blackboard.ModeCommit, Kind: "belief_validation",
				Payload: blackboard.Payload{"ok": true}, Provenance: ev, Status: blackboard.StatusActive,
				Reason: reason.Committed, Scope: blackboard.ScopeEpisode, Namespace: "study", EvidenceRefs: []string{store.RecordID(blackboard.Beliefs, "", trace, 3)}},
		},
		Invalidations: []store.Invalidation{{ID: store.RecordID(blackboard.Beliefs, "", trace, 3), Status: blackboard.StatusInvalidated, Reason: reason.SupersededByCommit}},
		Trace:         trace,
		TraceLen:      3,
	}
}

// BenchmarkBatchCheck is the check of a kernel's batch: by a store
// that does not hold its trace (Check("", "")) and by one that
// does (the memory store's, naming the trace it holds).
func BenchmarkBatchCheck(b *testing.B) {
	batch := kernelBatch()
	b.Run("unheld", func(b *testing.B) {
		for b.Loop() {
			if err := batch.Check("", ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("held", func(b *testing.B) {
		trace := string([]byte(batch.Trace)) // the store's copy
		for b.Loop() {
			if err := batch.Check(trace, "study"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestBatchCheckRefusesEveryBadString: the strings Check
// does not scan (those equal to the held trace and namespace, or to the
// append before) never let an invalid one through: a bad byte in any
// string of either append (an id or ref built of a bad trace id among
// them) is refused, by Check naming nothing held and by
// Check naming the batch's trace.
func TestBatchCheckRefusesEveryBadString(t *testing.T) {
	good := kernelBatch()
	const trace, bad = "ep-000123-bk-seed-42", "\xff"
	if err := good.Check(trace, "study"); err != nil {
		t.Fatal(err)
	}
	fields := map[string]func(r *blackboard.Record, v string){
		"id":        func(r *blackboard.Record, v string) { r.ID = v },
		"kind":      func(r *blackboard.Record, v string) { r.Kind = v },
		"trace":     func(r *blackboard.Record, v string) { r.Provenance.TraceID = v },
		"writer":    func(r *blackboard.Record, v string) { r.Provenance.Writer = v },
		"reason":    func(r *blackboard.Record, v string) { r.Reason = reason.Code(v) },
		"namespace": func(r *blackboard.Record, v string) { r.Namespace = v },
		"span":      func(r *blackboard.Record, v string) { r.Provenance.Span = v },
		"input ref": func(r *blackboard.Record, v string) { r.Provenance.InputRefs = []string{r.ID, v} },
		"evidence":  func(r *blackboard.Record, v string) { r.EvidenceRefs = []string{v} },
		// the id and trace both bad, the id of the kernel's form of that trace
		"id of a bad trace": func(r *blackboard.Record, v string) {
			r.Provenance.TraceID = trace + v
			r.ID = store.RecordID(r.Slot, "", r.Provenance.TraceID, 9)
		},
		"ref of a bad trace": func(r *blackboard.Record, v string) {
			r.Provenance.InputRefs = []string{store.RecordID(blackboard.Percepts, "", trace+v, 1)}
		},
		"id of a bad slot": func(r *blackboard.Record, v string) { r.ID = v + ":" + trace + ":4" },
		"id with a bad n":  func(r *blackboard.Record, v string) { r.ID = "beliefs:" + trace + ":4" + v },
	}
	for name, set := range fields {
		for i := range good.Appends {
			for _, v := range []string{bad, "ok" + bad, bad + ":" + trace + ":1"} {
				b := kernelBatch()
				set(&b.Appends[i], v)
				for how, err := range map[string]error{`Check("", "")`: b.Check("", ""), "Check(trace)": b.Check(trace, "study")} {
					if !errors.Is(err, blackboard.ErrInvalidInput) || !strings.Contains(err.Error(), "UTF-8") {
						t.Errorf("%s of append %d = %q: %s = %v, want the UTF-8 refusal", name, i, v, how, err)
					}
				}
			}
		}
	}
}

// FuzzBatchCheck holds Check to a check that scans every
// string, on two appends of one trace built from the fuzzer's strings.
func FuzzBatchCheck(f *testing.F) {
	f.Add("t", "beliefs:t:1", "k", "w", "ns", "percepts:t:1", "t", "ns")
	f.Add("t\xff", "beliefs:t\xff:1", "k", "w", "ns", "percepts:t:1", "t", "ns")
	f.Add("t", "beliefs:t:1", "k", "w\xff", "ns", "p\xff:t:1", "t", "n\xffs")
	f.Fuzz(func(t *testing.T, trace, id, kind, writer, ns, ref, heldTrace, heldNS string) {
		if !utf8.ValidString(heldTrace) || !utf8.ValidString(heldNS) {
			t.Skip() // a store holds valid strings only
		}
		b := kernelBatch()
		for i := range b.Appends {
			r := &b.Appends[i]
			r.Provenance.TraceID, r.Kind, r.Provenance.Writer, r.Namespace = trace, kind, writer, ns
			r.Provenance.InputRefs = []string{ref, id}
		}
		b.Appends[1].ID = id
		want := trace != "" && kind != "" && id != ""
		for _, s := range []string{trace, id, kind, writer, ns, ref, b.Appends[0].ID} {
			want = want && utf8.ValidString(s)
		}
		if err := b.Check(heldTrace, heldNS); (err == nil) != want {
			t.Fatalf("Check = %v, want refusal %v", err, !want)
		}
	})
}

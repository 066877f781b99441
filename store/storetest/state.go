package storetest

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// testState is a decision state for the suite: its encoding is its bytes.
// (The kernel's own state type is unexported; a store treats every state
// alike.)
type testState []byte

// MarshalBinary implements [encoding.BinaryMarshaler]: the encoding a store persists ([store.Batch].State).
func (s testState) MarshalBinary() ([]byte, error) { return bytes.Clone(s), nil }

// errBadState is what badState fails with.
var errBadState = errors.New("storetest: this state cannot be encoded")

// badState is a state whose encoding fails.
type badState struct{}

// MarshalBinary implements [encoding.BinaryMarshaler]: the encoding a store persists ([store.Batch].State).
func (badState) MarshalBinary() ([]byte, error) { return nil, errBadState }

// stateStore returns s as a store.StateStore, or skips the case.
func stateStore(t *testing.T, s store.Store) store.StateStore {
	t.Helper()
	ss, ok := s.(store.StateStore)
	if !ok {
		t.Skip("the store does not implement store.StateStore")
	}
	return ss
}

// readState returns what ReadState answers for trace, asked with the
// default namespace, failing the test on an error.
func readState(t *testing.T, ss store.StateStore, trace string) store.TraceState {
	t.Helper()
	return readStateIn(t, ss, "", trace)
}

// readStateIn returns what ReadState answers for trace, asked with
// namespace, failing the test on an error.
func readStateIn(t *testing.T, ss store.StateStore, namespace, trace string) store.TraceState {
	t.Helper()
	st, err := ss.ReadState(t.Context(), namespace, trace)
	if err != nil {
		t.Fatalf("ReadState(%q): %v", trace, err)
	}
	return st
}

// wantCounters reports unless trace of namespace ns holds n records and
// has counted version changes.
func wantCounters(t *testing.T, ss store.StateStore, trace string, n int, ns string, version uint64, contract string) {
	t.Helper()
	st := readStateIn(t, ss, ns, trace)
	if st.Len != n || st.Namespace != ns || st.Version != version {
		t.Errorf("%s: ReadState(%q) = Len %d, Namespace %q, Version %d; want %d, %q, %d",
			contract, trace, st.Len, st.Namespace, st.Version, n, ns, version)
	}
}

// wantStored reports unless trace's stored state is want (nil: none) with
// StateVersion stateVersion. A store that keeps values answers with the
// value itself (Value), one that persists bytes with want's encoding (Data);
// never both.
func wantStored(t *testing.T, ss store.StateStore, trace string, want encoding.BinaryMarshaler, stateVersion uint64, contract string) {
	t.Helper()
	st := readState(t, ss, trace)
	if st.StateVersion != stateVersion {
		t.Errorf("%s: ReadState(%q).StateVersion = %d, want %d (Version %d)", contract, trace, st.StateVersion, stateVersion, st.Version)
	}
	switch {
	case st.Value != nil && st.Data != nil:
		t.Errorf("%s: ReadState(%q) sets both Value and Data", contract, trace)
	case want == nil && (st.Value != nil || st.Data != nil):
		t.Errorf("%s: ReadState(%q) has a state (Value %v, Data %q); want none", contract, trace, st.Value, st.Data)
	case want == nil:
	case st.Value != nil:
		wantSame(t, st.Value, want, contract+": the stored state (Value)")
	default:
		enc, err := want.MarshalBinary()
		if err != nil {
			t.Fatalf("suite bug: %v", err)
		}
		if st.Data == nil || !bytes.Equal(st.Data, enc) {
			t.Errorf("%s: ReadState(%q).Data = %.60q (%d bytes); want the state's encoding %.60q (%d bytes)",
				contract, trace, st.Data, len(st.Data), enc, len(enc))
		}
	}
}

// testStateCounters checks a StateStore's counters: Version grows by
// exactly one per batch for each trace the batch appends to or changes a
// status in (a trace other than the batch's condition included), and not
// for any other trace; Len counts the records and Namespace is theirs.
func testStateCounters(t *testing.T, s store.Store) {
	ss := stateStore(t, s)
	ctx := t.Context()
	wantSame(t, readState(t, ss, "never"), store.TraceState{}, "an unknown trace is the zero TraceState")

	idle := record("idle", blackboard.Percepts, "door", 1)
	mustAppend(t, s, idle)
	wantCounters(t, ss, "idle", 1, blackboard.DefaultNamespace, 1, "a one-record batch counts one change")

	a := make([]blackboard.Record, 9)
	for i := range a {
		a[i] = record("a", blackboard.Percepts, "door", i+1)
	}
	mustAppend(t, s, a[0])
	wantCounters(t, ss, "a", 1, blackboard.DefaultNamespace, 1, "a one-record batch counts one change")
	if err := s.Apply(ctx, store.Batch{Appends: a[1:4]}); err != nil {
		t.Fatal(err)
	}
	wantCounters(t, ss, "a", 4, blackboard.DefaultNamespace, 2, "a batch of three appends to one trace counts one change")

	b1 := record("b", blackboard.Percepts, "door", 1)
	b1.Namespace = ""
	if err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{a[4], b1}}); err != nil {
		t.Fatal(err)
	}
	wantCounters(t, ss, "a", 5, blackboard.DefaultNamespace, 3, "a batch that appends to two traces counts one change in each")
	wantCounters(t, ss, "b", 1, blackboard.DefaultNamespace, 1, "a new trace appended with an empty namespace is in the default one")

	mustInvalidate(t, s, a[0].ID, blackboard.StatusInvalidated, reason.StaleEvidence)
	wantCounters(t, ss, "a", 5, blackboard.DefaultNamespace, 4, "a status change counts one change and no record")

	// A batch conditioned on trace a that changes a status in trace b.
	err := s.Apply(ctx, store.Batch{
		Appends:       []blackboard.Record{a[5]},
		Invalidations: []store.Invalidation{{ID: b1.ID, Status: blackboard.StatusExpired, Reason: reason.TTLExpired}},
		Trace:         "a", TraceLen: 5,
	})
	if err != nil {
		t.Fatal(err)
	}
	wantCounters(t, ss, "a", 6, blackboard.DefaultNamespace, 5, "a conditional batch counts one change in its trace")
	wantCounters(t, ss, "b", 1, blackboard.DefaultNamespace, 2, "a status change in a trace other than the batch's condition counts there")

	// Two status changes and an append in one trace: one change.
	err = s.Apply(ctx, store.Batch{
		Appends: []blackboard.Record{a[6]},
		Invalidations: []store.Invalidation{
			{ID: a[1].ID, Status: blackboard.StatusInvalidated, Reason: reason.StaleEvidence},
			{ID: a[2].ID, Status: blackboard.StatusExpired, Reason: reason.TTLExpired},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantCounters(t, ss, "a", 7, blackboard.DefaultNamespace, 6, "appends and status changes of one trace in one batch count one change")

	// Batches that touch no trace count nothing.
	if err := s.Apply(ctx, store.Batch{Claims: []store.Claim{{Key: "state-claim", RecordID: a[0].ID}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(ctx, store.Batch{Trace: "a", TraceLen: 7}); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(ctx, store.Batch{Trace: "empty", TraceLen: 0}); err != nil {
		t.Fatal(err)
	}
	wantCounters(t, ss, "a", 7, blackboard.DefaultNamespace, 6, "a batch of claims only, or a condition only, counts no change")
	wantSame(t, readState(t, ss, "empty"), store.TraceState{}, "a condition on a trace that holds no record leaves it the zero TraceState")
	wantCounters(t, ss, "idle", 1, blackboard.DefaultNamespace, 1, "a trace no batch touched counts no change")

	n1 := record("ns", blackboard.Percepts, "door", 1)
	n1.Namespace = "acme"
	mustAppend(t, s, n1)
	wantCounters(t, ss, "ns", 1, "acme", 1, "Namespace is the namespace of the trace's records")

	// Writers racing on one trace: every batch counts.
	const writers, each = 8, 3
	errs := make([]error, writers)
	race(writers, func(g int) {
		for i := range each {
			r := record("raced", blackboard.Percepts, "door", g*each+i+1)
			if err := appendOne(ctx, s, r); err != nil {
				errs[g] = err
				return
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	wantCounters(t, ss, "raced", writers*each, blackboard.DefaultNamespace, writers*each, "concurrent appends to one trace each count one change")
}

// testStateStored checks the state a batch stores: it reads back with
// StateVersion the Version the batch left, a later write without a state
// leaves it behind the Version, and a trace that holds no record keeps
// none.
func testStateStored(t *testing.T, s store.Store) {
	ss := stateStore(t, s)
	ctx := t.Context()
	r := make([]blackboard.Record, 5)
	for i := range r {
		r[i] = record("st", blackboard.Beliefs, "door_open", i+1)
	}
	one := testState("state one")
	if err := s.Apply(ctx, store.Batch{Appends: r[:2], Trace: "st", TraceLen: 0, State: one, Version: readState(t, ss, "st").Version}); err != nil {
		t.Fatal(err)
	}
	wantCounters(t, ss, "st", 2, blackboard.DefaultNamespace, 1, "a batch with a state counts like any other")
	wantStored(t, ss, "st", one, 1, "a batch with a state stores it with StateVersion == Version")

	mustAppend(t, s, r[2])
	wantStored(t, ss, "st", one, 1, "an append without a state leaves the stored state, behind Version")
	mustInvalidate(t, s, r[0].ID, blackboard.StatusInvalidated, reason.StaleEvidence)
	wantCounters(t, ss, "st", 3, blackboard.DefaultNamespace, 3, "writes without a state count")
	wantStored(t, ss, "st", one, 1, "a status change without a state leaves the stored state, behind Version")

	// A state with nothing else to write is stored at the current Version.
	two := testState("state two")
	if err := s.Apply(ctx, store.Batch{Trace: "st", TraceLen: 3, State: two, Version: readState(t, ss, "st").Version}); err != nil {
		t.Fatal(err)
	}
	wantCounters(t, ss, "st", 3, blackboard.DefaultNamespace, 3, "a batch of a state only counts no change")
	wantStored(t, ss, "st", two, 3, "a batch of a state only stores it at the current Version")

	// A large state with every byte value, stored with a status change of
	// another trace.
	mustAppend(t, s, record("other", blackboard.Percepts, "door", 1))
	big := make(testState, 64<<10)
	for i := range big {
		big[i] = byte(i * 7)
	}
	err := s.Apply(ctx, store.Batch{
		Appends:       []blackboard.Record{r[3]},
		Invalidations: []store.Invalidation{{ID: record("other", blackboard.Percepts, "door", 1).ID, Status: blackboard.StatusExpired, Reason: reason.TTLExpired}},
		Trace:         "st", TraceLen: 3, State: big, Version: readState(t, ss, "st").Version,
	})
	if err != nil {
		t.Fatal(err)
	}
	wantCounters(t, ss, "st", 4, blackboard.DefaultNamespace, 4, "a batch with a state and a status change elsewhere counts one change")
	wantStored(t, ss, "st", big, 4, "a 64 KiB state of every byte value round-trips")
	wantStored(t, ss, "other", nil, 0, "a trace whose state no batch stored has none")

	if err := s.Apply(ctx, store.Batch{Trace: "void", TraceLen: 0, State: one}); err != nil {
		t.Fatal(err)
	}
	wantSame(t, readState(t, ss, "void"), store.TraceState{}, "a trace that holds no record keeps no state")
}

// testStateRefused checks that a refused batch, whatever refused it,
// changes neither the counters nor the stored state of any trace.
func testStateRefused(t *testing.T, s store.Store) {
	ss := stateStore(t, s)
	ctx := t.Context()
	c := newCommitScene(t, s, "refused")
	other := record("refused-other", blackboard.Percepts, "door", 1)
	mustAppend(t, s, other)
	first := c.batch
	first.Trace, first.TraceLen, first.State = "refused", 4, testState("first")
	first.Version = readState(t, ss, "refused").Version
	first.Claims = []store.Claim{{Key: "refused-key", RecordID: c.belief.ID}}
	if err := s.Apply(ctx, first); err != nil {
		t.Fatal(err)
	}
	keepsValues := readState(t, ss, "refused").Value != nil

	next := record("refused", blackboard.Beliefs, "door_open", 7)
	base := func() store.Batch {
		return store.Batch{
			Appends: []blackboard.Record{next, record("refused-other", blackboard.Percepts, "door", 2)},
			Invalidations: []store.Invalidation{
				{ID: c.percept.ID, Status: blackboard.StatusInvalidated, Reason: reason.StaleEvidence},
				{ID: other.ID, Status: blackboard.StatusExpired, Reason: reason.TTLExpired},
			},
			Trace: "refused", TraceLen: 6, State: testState("second"), Version: readState(t, ss, "refused").Version,
		}
	}
	staleVersion := base()
	staleVersion.Version--
	conflict := base()
	conflict.TraceLen = 5
	dupID := base()
	dupID.Appends = append(dupID.Appends, c.belief)
	dupKey := base()
	dupKey.Claims = []store.Claim{{Key: "refused-key", RecordID: next.ID}}
	notActive := base()
	notActive.Invalidations = append(notActive.Invalidations, store.Invalidation{ID: c.dead.ID, Status: blackboard.StatusExpired, Reason: reason.TTLExpired})
	refused := []struct {
		name  string
		batch store.Batch
		want  error
	}{
		{"a stale trace-length condition", conflict, blackboard.ErrConflict},
		{"a state derived from an older version of the trace", staleVersion, blackboard.ErrConflict},
		{"an append of a stored id", dupID, store.ErrDuplicateID},
		{"a claim of a claimed key", dupKey, blackboard.ErrDuplicateKey},
		{"a status change of a record that is not active", notActive, store.ErrNotActive},
	}
	if !keepsValues {
		// A store that persists encodings cannot keep a state it cannot
		// encode; one that keeps values never encodes them.
		bad := base()
		bad.State = badState{}
		refused = append(refused, struct {
			name  string
			batch store.Batch
			want  error
		}{"a state whose MarshalBinary fails", bad, blackboard.ErrInvalidInput})
	}
	before := dump(t, s)
	states := map[string]store.TraceState{"refused": readState(t, ss, "refused"), "refused-other": readState(t, ss, "refused-other")}
	for _, r := range refused {
		err := s.Apply(ctx, r.batch)
		wantErr(t, err, r.want, "Apply refuses a batch with "+r.name)
		if r.want == blackboard.ErrInvalidInput && !errors.Is(err, errBadState) {
			t.Errorf("the refusal of a state that cannot be encoded wraps the encoder's error: got %v", err)
		}
		unchanged(t, s, before, "a batch refused for "+r.name+" lands nothing")
		for trace, want := range states {
			wantSame(t, readState(t, ss, trace), want, fmt.Sprintf("a batch refused for %s changes neither the counters nor the state of trace %q", r.name, trace))
		}
	}
	if err := s.Apply(ctx, base()); err != nil {
		t.Fatalf("the batch without the fault: %v", err)
	}
	wantStored(t, ss, "refused", testState("second"), states["refused"].Version+1, "the batch without the fault stores its state")
	wantCounters(t, ss, "refused-other", 2, blackboard.DefaultNamespace, states["refused-other"].Version+1, "the batch without the fault counts in the other trace")
}

package storetest

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// maxTTLMS is the longest TTL a store accepts, in milliseconds.
const maxTTLMS = int64(store.MaxTTL / time.Millisecond)

// roundTripRecords are records that between them set every field of a
// record to a range of values, in the kernel's payload normal form. Some
// have no namespace: they read back in [blackboard.DefaultNamespace].
func roundTripRecords() []blackboard.Record {
	const trace = "round-trip"
	return []blackboard.Record{{
		ID:   "beliefs:round-trip:1",
		Slot: blackboard.Beliefs,
		Mode: blackboard.ModePropose,
		Kind: "door_open",
		Payload: blackboard.Payload{
			"value":      true,
			"off":        false,
			"none":       nil,
			"zero":       0.0,
			"int":        42.0,
			"negative":   -17.25,
			"fraction":   0.1,
			"tiny":       5e-324,
			"huge":       math.MaxFloat64,
			"exact_2^53": float64(1 << 53),
			"text":       "héllo \"wörld\" <&> \\ \u2028 \n\t ✓",
			"empty":      "",
			"depends_on": []any{"percepts:round-trip:9", "door"},
			"list": []any{1.0, "two", false, nil, []any{}, map[string]any{
				"deep": []any{map[string]any{"k": "v", "n": -0.5}},
			}},
			"object": map[string]any{"empty": map[string]any{}, "list": []any{3.5}},
		},
		Provenance: blackboard.Provenance{
			Role:        blackboard.RolePlanner,
			Writer:      "planner-7",
			TraceID:     trace,
			TimestampMS: baseTS + 123,
			InputRefs:   []string{"percepts:round-trip:9", "constraints:other:3"},
			Confidence:  confidence(0.3),
			TTLMS:       1500,
		},
		EvidenceRefs: []string{"evidence:round-trip:2"},
		Status:       blackboard.StatusActive,
		Scope:        blackboard.ScopeEpisode,
	}, {
		ID:      "constraints:round-trip:2",
		Slot:    blackboard.Constraints,
		Mode:    blackboard.ModeCommit,
		Kind:    "speed_limit",
		Payload: blackboard.Payload{},
		Provenance: blackboard.Provenance{
			Role: blackboard.RoleKernel,
			// A trace belongs to one namespace: this record has its own.
			TraceID:    trace + "-tenant",
			Confidence: confidence(0),
		},
		Status:    blackboard.StatusActive,
		Reason:    reason.Committed,
		Scope:     blackboard.ScopePersistent,
		Namespace: "tenant-ä ✓",
	}, {
		ID:   "percepts:round-trip:3",
		Slot: blackboard.Percepts,
		Mode: blackboard.ModeCommit,
		Kind: "battery",
		Payload: blackboard.Payload{
			"level": 0.8,
			"stale": true,
		},
		Provenance: blackboard.Provenance{
			Role:        blackboard.RoleTool,
			Writer:      "sensor ✓",
			TraceID:     trace,
			TimestampMS: math.MaxInt64,
			TTLMS:       maxTTLMS,
		},
		Status:    blackboard.StatusExpired,
		Reason:    reason.TTLExpired,
		Scope:     blackboard.ScopeEpisode,
		Namespace: blackboard.DefaultNamespace,
	}, {
		ID:   "predictions:round-trip:4",
		Slot: blackboard.Predictions,
		Mode: blackboard.ModePropose,
		Kind: "move",
		Provenance: blackboard.Provenance{
			Role:        blackboard.RoleSimulator,
			Writer:      "sim",
			TraceID:     trace + "-colons", // its own namespace, so its own trace
			TimestampMS: -1,
			Span:        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
			Confidence:  confidence(1),
		},
		Status:    blackboard.StatusInvalidated,
		Reason:    reason.Blocked("speed limit"),
		Scope:     blackboard.ScopePersistent,
		Namespace: "ns:with:colons",
	}, {
		ID:      "evidence:round-trip:5",
		Slot:    blackboard.Evidence,
		Mode:    blackboard.ModeCommit,
		Kind:    "manual_check",
		Payload: blackboard.Payload{"passed": false},
		Provenance: blackboard.Provenance{
			Role:      blackboard.RoleEvidence,
			Writer:    "auditor",
			TraceID:   trace,
			InputRefs: []string{"percepts:round-trip:3"},
		},
		EvidenceRefs: []string{"evidence:round-trip:1", "evidence:round-trip:2"},
		Status:       blackboard.StatusActive,
		Reason:       reason.Committed,
		Scope:        blackboard.ScopeEpisode,
	}, {
		ID:      "actions:round-trip:6",
		Slot:    blackboard.Actions,
		Mode:    blackboard.ModeCommit,
		Kind:    "queue_for_review",
		Payload: blackboard.Payload{"reason": "UNGROUNDED_ACTION", "requires_beliefs": []any{}},
		Provenance: blackboard.Provenance{
			Role:        blackboard.RoleSymbolic,
			Writer:      "validator",
			TraceID:     trace,
			TimestampMS: baseTS,
		},
		Status: blackboard.StatusActive,
		Reason: reason.Committed,
		Scope:  blackboard.ScopeEpisode,
	}, {
		ID:   "plans:round-trip:7",
		Slot: blackboard.Plans,
		Mode: blackboard.ModeCommit,
		Kind: "route",
		Payload: blackboard.Payload{"steps": []any{
			map[string]any{"action": "move", "requires_beliefs": []any{"door_open"}},
		}},
		Provenance: blackboard.Provenance{
			Role:        blackboard.RoleKernel,
			Writer:      "kernel",
			TraceID:     trace,
			TimestampMS: baseTS,
			InputRefs:   []string{"plans:round-trip:0"},
		},
		Status: blackboard.StatusActive,
		Reason: reason.PlanFeasible,
		Scope:  blackboard.ScopeEpisode,
	}}
}

func testRoundTrip(t *testing.T, s store.Store) {
	ctx := t.Context()
	appended := roundTripRecords()
	mustAppend(t, s, appended...)
	recs := make([]blackboard.Record, len(appended))
	for i, r := range appended {
		recs[i] = stored(r)
	}
	for _, want := range recs {
		got := mustGet(t, s, want.ID)
		wantSame(t, got, want, "Get returns every field exactly as Apply stored it")
	}
	var inTrace []blackboard.Record
	for _, r := range recs {
		if r.Provenance.TraceID == "round-trip" {
			inTrace = append(inTrace, r)
		}
	}
	wantSame(t, collect(t, "ListTrace", s.ListTrace(ctx, "", "round-trip")), inTrace,
		"ListTrace returns every field exactly as Apply stored it, in append order")
	for _, want := range recs {
		wantSame(t, collect(t, "ListSlot", s.ListSlot(ctx, want.Slot, store.Filter{})), []blackboard.Record{want},
			"ListSlot returns every field exactly as Apply stored it")
		if want.Status != blackboard.StatusActive {
			continue
		}
		got, err := s.FindActive(ctx, want.Namespace, want.Provenance.TraceID, want.Slot, want.Kind)
		if err != nil {
			t.Fatalf("FindActive(%s): %v", want.ID, err)
		}
		wantSame(t, got, want, "FindActive returns every field exactly as Apply stored it")
	}
}

func testAppendOnly(t *testing.T, s store.Store) {
	orig := record("dup", blackboard.Percepts, "door", 1)
	mustAppend(t, s, orig)

	dupe := record("dup", blackboard.Beliefs, "window", 2)
	dupe.ID = orig.ID
	dupe.Payload = blackboard.Payload{"n": 99.0}
	wantErr(t, appendOne(t.Context(), s, dupe), store.ErrDuplicateID, "Apply refuses an id the store holds")
	wantSame(t, mustGet(t, s, orig.ID), orig, "a refused duplicate leaves the original unchanged")

	mustInvalidate(t, s, orig.ID, blackboard.StatusInvalidated, reason.StaleEvidence)
	wantErr(t, appendOne(t.Context(), s, orig), store.ErrDuplicateID,
		"Apply refuses the id of an invalidated record (a status change does not free an id)")
	wantSame(t, mustGet(t, s, orig.ID), invalidated(orig, blackboard.StatusInvalidated, reason.StaleEvidence),
		"a refused duplicate leaves the invalidated original unchanged")
	wantSame(t, ids(dump(t, s)), []string{orig.ID}, "a refused duplicate adds no record")
}

func testGetUnknown(t *testing.T, s store.Store) {
	_, err := s.Get(t.Context(), "percepts:nowhere:1")
	wantErr(t, err, blackboard.ErrNotFound, "Get of an unknown id on an empty store")
	mustAppend(t, s, record("known", blackboard.Percepts, "door", 1))
	_, err = s.Get(t.Context(), "percepts:known:2")
	wantErr(t, err, blackboard.ErrNotFound, "Get of an unknown id")
	_, err = s.Get(t.Context(), "")
	wantErr(t, err, blackboard.ErrNotFound, "Get of the empty id")
}

func testMalformed(t *testing.T, s store.Store) {
	good := record("malformed", blackboard.Percepts, "door", 1)
	bad := []struct {
		name   string
		mutate func(*blackboard.Record)
	}{
		{"empty id", func(r *blackboard.Record) { r.ID = "" }},
		{"zero slot", func(r *blackboard.Record) { r.Slot = "" }},
		{"unknown slot", func(r *blackboard.Record) { r.Slot = "Actions" }},
		{"zero mode", func(r *blackboard.Record) { r.Mode = "" }},
		{"unknown mode", func(r *blackboard.Record) { r.Mode = "proposal" }},
		{"zero status", func(r *blackboard.Record) { r.Status = "" }},
		{"unknown status", func(r *blackboard.Record) { r.Status = "active" }},
		{"zero scope", func(r *blackboard.Record) { r.Scope = "" }},
		{"unknown scope", func(r *blackboard.Record) { r.Scope = "global" }},
		{"empty kind", func(r *blackboard.Record) { r.Kind = "" }},
		{"empty trace id", func(r *blackboard.Record) { r.Provenance.TraceID = "" }},
	}
	for _, c := range bad {
		r := good
		r.ID = "percepts:malformed:2"
		c.mutate(&r)
		if (&store.Batch{Appends: []blackboard.Record{r}}).Check("", "") == nil {
			t.Fatalf("suite bug: a record with %s passes store.Batch.Check", c.name)
		}
		refuses(t, s, good, r, blackboard.ErrInvalidInput, "a record with "+c.name, "changes nothing")
	}
	mustAppend(t, s, good)
	wantSame(t, mustGet(t, s, good.ID), good, "the well-formed record the refused batches held can be appended")
}

// refuses checks that Apply refuses bad on its own and in a batch after
// good, with want, and that neither attempt changes the store.
func refuses(t *testing.T, s store.Store, good, bad blackboard.Record, want error, what, unchangedSays string) {
	t.Helper()
	before := dump(t, s)
	wantErr(t, appendOne(t.Context(), s, bad), want, "Apply refuses "+what)
	wantErr(t, s.Apply(t.Context(), store.Batch{Appends: []blackboard.Record{good, bad}}), want,
		"Apply refuses a batch holding "+what)
	unchanged(t, s, before, "a refused "+strings.TrimPrefix(what, "a ")+" "+unchangedSays)
}

func testInvalidate(t *testing.T, s store.Store) {
	a := record("inv", blackboard.Beliefs, "door_open", 1)
	a.Mode, a.Reason = blackboard.ModePropose, ""
	b := record("inv", blackboard.Percepts, "battery", 2)
	b.Provenance.TTLMS = 1000
	c := record("inv", blackboard.Actions, "move", 3)
	mustAppend(t, s, a, b, c)

	mustInvalidate(t, s, a.ID, blackboard.StatusInvalidated, reason.LowConfidence)
	mustInvalidate(t, s, b.ID, blackboard.StatusExpired, reason.TTLExpired)
	wantA := invalidated(a, blackboard.StatusInvalidated, reason.LowConfidence)
	wantB := invalidated(b, blackboard.StatusExpired, reason.TTLExpired)
	wantSame(t, mustGet(t, s, a.ID), wantA, "a status change moves ACTIVE to INVALIDATED with its reason and changes nothing else")
	wantSame(t, mustGet(t, s, b.ID), wantB, "a status change moves ACTIVE to EXPIRED (TTL_EXPIRED) and changes nothing else")
	wantSame(t, mustGet(t, s, c.ID), c, "a status change changes no other record")
	wantSame(t, collect(t, "ListTrace", s.ListTrace(t.Context(), "", "inv")), []blackboard.Record{wantA, wantB, c},
		"ListTrace shows status changes in place")
}

func testInvalidateNotActive(t *testing.T, s store.Store) {
	a := record("notactive", blackboard.Beliefs, "a", 1)
	b := record("notactive", blackboard.Percepts, "b", 2)
	born := record("notactive", blackboard.Plans, "c", 3)
	born.Status, born.Reason = blackboard.StatusInvalidated, reason.PlanMissingBelief
	mustAppend(t, s, a, b, born)
	mustInvalidate(t, s, a.ID, blackboard.StatusInvalidated, reason.StaleEvidence)
	mustInvalidate(t, s, b.ID, blackboard.StatusExpired, reason.TTLExpired)
	before := dump(t, s)
	for _, id := range []string{a.ID, b.ID, born.ID} {
		for _, st := range []blackboard.Status{blackboard.StatusInvalidated, blackboard.StatusExpired} {
			wantErr(t, setStatus(t.Context(), s, id, st, reason.SupersededByCommit), store.ErrNotActive,
				"Apply refuses a status change of a record that is not ACTIVE ("+id+" to "+string(st)+")")
		}
	}
	unchanged(t, s, before, "a refused status change keeps the first status and reason")

	wantErr(t, setStatus(t.Context(), s, "beliefs:notactive:99", blackboard.StatusInvalidated, reason.StaleEvidence),
		blackboard.ErrNotFound, "a status change of an unknown id")
	unchanged(t, s, before, "a status change of an unknown id changes nothing")
}

func testInvalidateBadInput(t *testing.T, s store.Store) {
	r := record("badinv", blackboard.Beliefs, "a", 1)
	fresh := record("badinv", blackboard.Percepts, "b", 2)
	mustAppend(t, s, r)
	bad := []struct {
		name   string
		status blackboard.Status
		reason reason.Code
	}{
		{"target status ACTIVE", blackboard.StatusActive, reason.StaleEvidence},
		{"zero target status", "", reason.StaleEvidence},
		{"unknown target status", "active", reason.StaleEvidence},
		{"empty reason", blackboard.StatusInvalidated, ""},
		{"empty reason to EXPIRED", blackboard.StatusExpired, ""},
	}
	for _, c := range bad {
		inv := store.Invalidation{ID: r.ID, Status: c.status, Reason: c.reason}
		if (&store.Batch{Invalidations: []store.Invalidation{inv}}).Check("", "") == nil {
			t.Fatalf("suite bug: an invalidation with %s passes store.Batch.Check", c.name)
		}
		wantErr(t, setStatus(t.Context(), s, r.ID, c.status, c.reason), blackboard.ErrInvalidInput,
			"Apply refuses a status change with a "+c.name)
		wantErr(t, s.Apply(t.Context(), store.Batch{Appends: []blackboard.Record{fresh}, Invalidations: []store.Invalidation{inv}}),
			blackboard.ErrInvalidInput, "Apply refuses a batch holding a status change with a "+c.name)
	}
	wantSame(t, mustGet(t, s, r.ID), r, "refused status changes leave the record ACTIVE and unchanged")
	_, err := s.Get(t.Context(), fresh.ID)
	wantErr(t, err, blackboard.ErrNotFound, "a batch refused for its status change appends nothing")
}

// confidence returns a pointer to c, as Provenance.Confidence holds it.
func confidence(c float64) *float64 { return &c }

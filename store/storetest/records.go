package storetest

import (
	"math"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/kernel"
)

// maxTTLMS is the longest TTL a store accepts, in milliseconds.
const maxTTLMS = int64(kernel.MaxTTL / time.Millisecond)

// roundTripRecords are records that between them set every field of a
// record to a range of values, in the kernel's payload normal form. Some
// have no namespace: they read back in [kernel.DefaultNamespace].
func roundTripRecords() []kernel.Record {
	const trace = "round-trip"
	return []kernel.Record{{
		ID:   "beliefs:round-trip:1",
		Slot: kernel.Beliefs,
		Mode: kernel.ModePropose,
		Kind: "door_open",
		Payload: kernel.Payload{
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
		Provenance: kernel.Provenance{
			Role:        kernel.RolePlanner,
			Writer:      "planner-7",
			TraceID:     trace,
			TimestampMS: baseTS + 123,
			InputRefs:   []string{"percepts:round-trip:9", "constraints:other:3"},
			Confidence:  kernel.Confidence(0.3),
			TTLMS:       1500,
		},
		EvidenceRefs: []string{"evidence:round-trip:2"},
		Status:       kernel.StatusActive,
		Scope:        kernel.ScopeEpisode,
	}, {
		ID:      "constraints:round-trip:2",
		Slot:    kernel.Constraints,
		Mode:    kernel.ModeCommit,
		Kind:    "speed_limit",
		Payload: kernel.Payload{},
		Provenance: kernel.Provenance{
			Role: kernel.RoleKernel,
			// A trace belongs to one namespace: this record has its own.
			TraceID:    trace + "-tenant",
			Confidence: kernel.Confidence(0),
		},
		Status:    kernel.StatusActive,
		Reason:    kernel.CodeCommitted,
		Scope:     kernel.ScopePersistent,
		Namespace: "tenant-ä ✓",
	}, {
		ID:   "percepts:round-trip:3",
		Slot: kernel.Percepts,
		Mode: kernel.ModeCommit,
		Kind: "battery",
		Payload: kernel.Payload{
			"level": 0.8,
			"stale": true,
		},
		Provenance: kernel.Provenance{
			Role:        kernel.RoleTool,
			Writer:      "sensor ✓",
			TraceID:     trace,
			TimestampMS: math.MaxInt64,
			TTLMS:       maxTTLMS,
		},
		Status:    kernel.StatusExpired,
		Reason:    kernel.CodeTTLExpired,
		Scope:     kernel.ScopeEpisode,
		Namespace: kernel.DefaultNamespace,
	}, {
		ID:   "predictions:round-trip:4",
		Slot: kernel.Predictions,
		Mode: kernel.ModePropose,
		Kind: "move",
		Provenance: kernel.Provenance{
			Role:        kernel.RoleSimulator,
			Writer:      "sim",
			TraceID:     trace + "-colons", // its own namespace, so its own trace
			TimestampMS: -1,
			Span:        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
			Confidence:  kernel.Confidence(1),
		},
		Status:    kernel.StatusInvalidated,
		Reason:    kernel.BlockedCode("speed limit"),
		Scope:     kernel.ScopePersistent,
		Namespace: "ns:with:colons",
	}, {
		ID:      "evidence:round-trip:5",
		Slot:    kernel.Evidence,
		Mode:    kernel.ModeCommit,
		Kind:    "manual_check",
		Payload: kernel.Payload{"passed": false},
		Provenance: kernel.Provenance{
			Role:      kernel.RoleEvidence,
			Writer:    "auditor",
			TraceID:   trace,
			InputRefs: []string{"percepts:round-trip:3"},
		},
		EvidenceRefs: []string{"evidence:round-trip:1", "evidence:round-trip:2"},
		Status:       kernel.StatusActive,
		Reason:       kernel.CodeCommitted,
		Scope:        kernel.ScopeEpisode,
	}, {
		ID:      "actions:round-trip:6",
		Slot:    kernel.Actions,
		Mode:    kernel.ModeCommit,
		Kind:    "queue_for_review",
		Payload: kernel.Payload{"reason": "UNGROUNDED_ACTION", "requires_beliefs": []any{}},
		Provenance: kernel.Provenance{
			Role:        kernel.RoleSymbolic,
			Writer:      "validator",
			TraceID:     trace,
			TimestampMS: baseTS,
		},
		Status: kernel.StatusActive,
		Reason: kernel.CodeCommitted,
		Scope:  kernel.ScopeEpisode,
	}, {
		ID:   "plans:round-trip:7",
		Slot: kernel.Plans,
		Mode: kernel.ModeCommit,
		Kind: "route",
		Payload: kernel.Payload{"steps": []any{
			map[string]any{"action": "move", "requires_beliefs": []any{"door_open"}},
		}},
		Provenance: kernel.Provenance{
			Role:        kernel.RoleKernel,
			Writer:      "kernel",
			TraceID:     trace,
			TimestampMS: baseTS,
			InputRefs:   []string{"plans:round-trip:0"},
		},
		Status: kernel.StatusActive,
		Reason: kernel.CodePlanFeasible,
		Scope:  kernel.ScopeEpisode,
	}}
}

func testRoundTrip(t *testing.T, s kernel.Store) {
	ctx := t.Context()
	appended := roundTripRecords()
	mustAppend(t, s, appended...)
	recs := make([]kernel.Record, len(appended))
	for i, r := range appended {
		recs[i] = stored(r)
	}
	for _, want := range recs {
		got := mustGet(t, s, want.ID)
		wantSame(t, got, want, "Get returns every field exactly as Append stored it")
	}
	var inTrace []kernel.Record
	for _, r := range recs {
		if r.TraceID() == "round-trip" {
			inTrace = append(inTrace, r)
		}
	}
	wantSame(t, collect(t, "ListTrace", s.ListTrace(ctx, "round-trip")), inTrace,
		"ListTrace returns every field exactly as Append stored it, in append order")
	for _, want := range recs {
		wantSame(t, collect(t, "ListSlot", s.ListSlot(ctx, want.Slot, kernel.Filter{})), []kernel.Record{want},
			"ListSlot returns every field exactly as Append stored it")
		if want.Status != kernel.StatusActive {
			continue
		}
		got, err := s.FindActive(ctx, want.Provenance.TraceID, want.Slot, want.Kind)
		if err != nil {
			t.Fatalf("FindActive(%s): %v", want.ID, err)
		}
		wantSame(t, got, want, "FindActive returns every field exactly as Append stored it")
	}
}

func testAppendOnly(t *testing.T, s kernel.Store) {
	orig := record("dup", kernel.Percepts, "door", 1)
	mustAppend(t, s, orig)

	dupe := record("dup", kernel.Beliefs, "window", 2)
	dupe.ID = orig.ID
	dupe.Payload = kernel.Payload{"n": 99.0}
	wantErr(t, s.Append(t.Context(), dupe), kernel.ErrDuplicateID, "Append refuses an id the store holds")
	wantSame(t, mustGet(t, s, orig.ID), orig, "a refused duplicate leaves the original unchanged")

	mustInvalidate(t, s, orig.ID, kernel.StatusInvalidated, kernel.CodeStaleEvidence)
	wantErr(t, s.Append(t.Context(), orig), kernel.ErrDuplicateID,
		"Append refuses the id of an invalidated record (a status change does not free an id)")
	wantSame(t, mustGet(t, s, orig.ID), invalidated(orig, kernel.StatusInvalidated, kernel.CodeStaleEvidence),
		"a refused duplicate leaves the invalidated original unchanged")
	wantSame(t, ids(dump(t, s)), []string{orig.ID}, "a refused duplicate adds no record")
}

func testGetUnknown(t *testing.T, s kernel.Store) {
	_, err := s.Get(t.Context(), "percepts:nowhere:1")
	wantErr(t, err, kernel.ErrNotFound, "Get of an unknown id on an empty store")
	mustAppend(t, s, record("known", kernel.Percepts, "door", 1))
	_, err = s.Get(t.Context(), "percepts:known:2")
	wantErr(t, err, kernel.ErrNotFound, "Get of an unknown id")
	_, err = s.Get(t.Context(), "")
	wantErr(t, err, kernel.ErrNotFound, "Get of the empty id")
}

func testMalformed(t *testing.T, s kernel.Store) {
	good := record("malformed", kernel.Percepts, "door", 1)
	bad := []struct {
		name   string
		mutate func(*kernel.Record)
	}{
		{"empty id", func(r *kernel.Record) { r.ID = "" }},
		{"zero slot", func(r *kernel.Record) { r.Slot = 0 }},
		{"unknown slot", func(r *kernel.Record) { r.Slot = kernel.Actions + 1 }},
		{"zero mode", func(r *kernel.Record) { r.Mode = 0 }},
		{"unknown mode", func(r *kernel.Record) { r.Mode = kernel.ModeCommit + 1 }},
		{"zero status", func(r *kernel.Record) { r.Status = 0 }},
		{"unknown status", func(r *kernel.Record) { r.Status = kernel.StatusExpired + 1 }},
		{"zero scope", func(r *kernel.Record) { r.Scope = 0 }},
		{"unknown scope", func(r *kernel.Record) { r.Scope = kernel.ScopePersistent + 1 }},
		{"empty kind", func(r *kernel.Record) { r.Kind = "" }},
		{"empty trace id", func(r *kernel.Record) { r.Provenance.TraceID = "" }},
	}
	for _, c := range bad {
		r := good
		r.ID = "percepts:malformed:2"
		c.mutate(&r)
		if kernel.CheckRecord(r) == nil {
			t.Fatalf("suite bug: a record with %s passes kernel.CheckRecord", c.name)
		}
		before := dump(t, s)
		wantErr(t, s.Append(t.Context(), r), kernel.ErrInvalidInput, "Append refuses a record with "+c.name)
		wantErr(t, s.Apply(t.Context(), kernel.Batch{Appends: []kernel.Record{good, r}}), kernel.ErrInvalidInput,
			"Apply refuses a batch holding a record with "+c.name)
		unchanged(t, s, before, "a refused record with "+c.name+" changes nothing")
	}
	mustAppend(t, s, good)
	wantSame(t, mustGet(t, s, good.ID), good, "the well-formed record the refused batches held can be appended")
}

func testInvalidate(t *testing.T, s kernel.Store) {
	a := record("inv", kernel.Beliefs, "door_open", 1)
	a.Mode, a.Reason = kernel.ModePropose, ""
	b := record("inv", kernel.Percepts, "battery", 2)
	b.Provenance.TTLMS = 1000
	c := record("inv", kernel.Actions, "move", 3)
	mustAppend(t, s, a, b, c)

	mustInvalidate(t, s, a.ID, kernel.StatusInvalidated, kernel.CodeLowConfidence)
	mustInvalidate(t, s, b.ID, kernel.StatusExpired, kernel.CodeTTLExpired)
	wantA := invalidated(a, kernel.StatusInvalidated, kernel.CodeLowConfidence)
	wantB := invalidated(b, kernel.StatusExpired, kernel.CodeTTLExpired)
	wantSame(t, mustGet(t, s, a.ID), wantA, "Invalidate moves ACTIVE to INVALIDATED with its reason and changes nothing else")
	wantSame(t, mustGet(t, s, b.ID), wantB, "Invalidate moves ACTIVE to EXPIRED (TTL_EXPIRED) and changes nothing else")
	wantSame(t, mustGet(t, s, c.ID), c, "Invalidate changes no other record")
	wantSame(t, collect(t, "ListTrace", s.ListTrace(t.Context(), "inv")), []kernel.Record{wantA, wantB, c},
		"ListTrace shows status changes in place")
}

func testInvalidateNotActive(t *testing.T, s kernel.Store) {
	a := record("notactive", kernel.Beliefs, "a", 1)
	b := record("notactive", kernel.Percepts, "b", 2)
	born := record("notactive", kernel.Plans, "c", 3)
	born.Status, born.Reason = kernel.StatusInvalidated, kernel.CodePlanMissingBelief
	mustAppend(t, s, a, b, born)
	mustInvalidate(t, s, a.ID, kernel.StatusInvalidated, kernel.CodeStaleEvidence)
	mustInvalidate(t, s, b.ID, kernel.StatusExpired, kernel.CodeTTLExpired)
	before := dump(t, s)
	for _, id := range []string{a.ID, b.ID, born.ID} {
		for _, st := range []kernel.Status{kernel.StatusInvalidated, kernel.StatusExpired} {
			wantErr(t, s.Invalidate(t.Context(), id, st, kernel.CodeSupersededByCommit), kernel.ErrNotActive,
				"Invalidate refuses a record that is not ACTIVE ("+id+" to "+st.String()+")")
		}
	}
	unchanged(t, s, before, "a refused status change keeps the first status and reason")

	wantErr(t, s.Invalidate(t.Context(), "beliefs:notactive:99", kernel.StatusInvalidated, kernel.CodeStaleEvidence),
		kernel.ErrNotFound, "Invalidate of an unknown id")
	unchanged(t, s, before, "Invalidate of an unknown id changes nothing")
}

func testInvalidateBadInput(t *testing.T, s kernel.Store) {
	r := record("badinv", kernel.Beliefs, "a", 1)
	mustAppend(t, s, r)
	bad := []struct {
		name   string
		status kernel.Status
		reason kernel.Code
	}{
		{"target status ACTIVE", kernel.StatusActive, kernel.CodeStaleEvidence},
		{"zero target status", 0, kernel.CodeStaleEvidence},
		{"unknown target status", kernel.StatusExpired + 1, kernel.CodeStaleEvidence},
		{"empty reason", kernel.StatusInvalidated, ""},
		{"empty reason to EXPIRED", kernel.StatusExpired, ""},
	}
	for _, c := range bad {
		inv := kernel.Invalidation{ID: r.ID, Status: c.status, Reason: c.reason}
		if kernel.CheckInvalidation(inv) == nil {
			t.Fatalf("suite bug: an invalidation with %s passes kernel.CheckInvalidation", c.name)
		}
		wantErr(t, s.Invalidate(t.Context(), r.ID, c.status, c.reason), kernel.ErrInvalidInput,
			"Invalidate refuses a "+c.name)
		wantErr(t, s.Apply(t.Context(), kernel.Batch{Invalidations: []kernel.Invalidation{inv}}), kernel.ErrInvalidInput,
			"Apply refuses an invalidation with "+c.name)
	}
	wantSame(t, mustGet(t, s, r.ID), r, "refused status changes leave the record ACTIVE and unchanged")
}

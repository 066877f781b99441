package sqlitestore_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// storableText reports whether every string in v is valid UTF-8, which is
// what JSON can hold unchanged.
func storableText(v any) bool {
	switch x := v.(type) {
	case string:
		return utf8.ValidString(x)
	case blackboard.Payload:
		return storableText(map[string]any(x))
	case map[string]any:
		for k, e := range x {
			if !utf8.ValidString(k) || !storableText(e) {
				return false
			}
		}
	case []any:
		return !slices.ContainsFunc(x, func(e any) bool { return !storableText(e) })
	case []string:
		return !slices.ContainsFunc(x, func(e string) bool { return !utf8.ValidString(e) })
	}
	return true
}

// fuzzRefs makes a reference list: nil, empty, or s split at commas.
func fuzzRefs(mode uint64, s string) []string {
	switch mode % 3 {
	case 0:
		return nil
	case 1:
		return []string{}
	}
	return strings.Split(s, ",")
}

// FuzzRecordRoundTrip appends a record with arbitrary fields (enumerations
// in and out of range, a payload from arbitrary JSON or an arbitrary
// string, nil, empty and arbitrary reference lists, any confidence, TTL and
// timestamp, an empty, default or arbitrary namespace) and checks that the
// store either refuses it with a typed error and holds nothing, or gives
// back exactly what went in (an empty namespace as the default) from Get,
// ListTrace and FindActive, and then changes only its status on a valid
// status change.
// The enums a fuzz byte picks from, in the order of their former numeric
// values (so the stored corpus means what it did): the zero value first,
// and a name no store accepts last where the byte can reach past the valid
// ones.
var (
	fuzzSlots = [...]blackboard.Slot{"", blackboard.Percepts, blackboard.Beliefs, blackboard.Constraints, blackboard.Plans,
		blackboard.Evidence, blackboard.Predictions, blackboard.Actions, "Percepts"}
	fuzzModes    = [...]blackboard.Mode{"", blackboard.ModePropose, blackboard.ModeCommit, "proposal"}
	fuzzStatuses = [...]blackboard.Status{"", blackboard.StatusActive, blackboard.StatusInvalidated, blackboard.StatusExpired, "active"}
	fuzzScopes   = [...]blackboard.Scope{"", blackboard.ScopeEpisode, blackboard.ScopePersistent, "global"}
	fuzzRoles    = [...]blackboard.Role{"", blackboard.RoleKernel, blackboard.RoleTool, blackboard.RolePlanner, blackboard.RoleSymbolic,
		blackboard.RoleEvidence, blackboard.RoleSimulator, blackboard.RoleApprover}
)

func FuzzRecordRoundTrip(f *testing.F) {
	f.Add("percepts:t:1", "t", "door", "tool", "COMMITTED", []byte(`{"open":true,"n":[1,2.5,null]}`), "a,b", "", 0.5, int64(1), int64(0), uint64(0x0201_0212_0101_0201))
	f.Add("x", "t", "k", "", "", []byte(`{"s":"\ud800\u2028<&>"}`), "", "e", math.Copysign(0, -1), int64(-1), int64(math.MaxInt64), uint64(0x0102_0203_0112))
	f.Add("x", "t", "k", "w", "", []byte("caf\xe9"), "caf\xe9", "", math.Inf(1), int64(0), int64(-5), uint64(0x0201_0101_0122))
	f.Add("x", "t", "k", "w", "r", []byte(`null`), "", "", math.NaN(), int64(0), int64(0), uint64(0x0903_0001_0707))
	f.Add("", "", "", "", "", []byte(`[]`), "", "", 2.0, int64(0), int64(0), uint64(0))
	f.Add("id\x00nul", "t\x00", "k\xff", "w\n", "R", []byte(`{"":""}`), ",", ",,", math.SmallestNonzeroFloat64, int64(math.MinInt64), int64(1), uint64(0x0101_0101_0101))
	s := openMemory(f)
	f.Cleanup(func() { s.Close() })
	runs := 0
	f.Fuzz(func(t *testing.T, id, traceID, kind, writer, why string, payload []byte, inputs, evidence string,
		conf float64, ts, ttl int64, enums uint64) {
		ctx := t.Context()
		e := func(i int) uint64 { return enums >> (8 * i) & 0xff } // one byte each
		runs++
		suffix := "#" + strconv.Itoa(runs) // ids and traces from earlier runs stay apart
		if id != "" {
			id += suffix
		}
		if traceID != "" {
			traceID += suffix
		}
		r := blackboard.Record{ID: id, Slot: fuzzSlots[e(0)%9], Mode: fuzzModes[e(1)%4], Kind: kind, Status: fuzzStatuses[e(2)%5],
			Scope: fuzzScopes[e(3)%4], Reason: reason.Code(why), EvidenceRefs: fuzzRefs(e(4)>>4, evidence),
			Provenance: blackboard.Provenance{Role: fuzzRoles[e(5)%8], Writer: writer, TraceID: traceID, TimestampMS: ts,
				InputRefs: fuzzRefs(e(4), inputs), TTLMS: ttl}}
		if e(6)%2 == 1 {
			r.Provenance.Confidence = &conf
		}
		// The namespace reuses the writer so that the fuzz arguments, and
		// with them the stored corpus, stay as they were.
		switch (e(6) >> 1) % 3 {
		case 1:
			r.Namespace = blackboard.DefaultNamespace
		case 2:
			r.Namespace = writer
		}
		if json.Unmarshal(payload, &r.Payload) != nil {
			r.Payload = blackboard.Payload{"text": string(payload)}
		}
		storable := (&store.Batch{Appends: []blackboard.Record{r}}).Check("", "") == nil && !(r.Provenance.Confidence != nil && math.IsNaN(conf)) &&
			storableText(r.Payload) && storableText(r.Provenance.InputRefs) && storableText(r.EvidenceRefs)
		err := s.Apply(ctx, store.Batch{Appends: []blackboard.Record{r.Clone()}})
		if err != nil {
			if !errors.Is(err, blackboard.ErrInvalidInput) && !errors.Is(err, blackboard.ErrInvalidPayload) {
				t.Fatalf("Apply of %+v: untyped error %v", r, err)
			}
			if storable {
				t.Fatalf("Apply of %+v refused a storable record: %v", r, err)
			}
			if _, err := s.Get(ctx, r.ID); !errors.Is(err, blackboard.ErrNotFound) {
				t.Fatalf("refused record %q: Get says %v", r.ID, err)
			}
			if got := trace(t, s, r.Provenance.TraceID); len(got) != 0 {
				t.Fatalf("refused record left %d records in its trace", len(got))
			}
			return
		}
		if !storable {
			t.Fatalf("Apply accepted an unstorable record %+v", r)
		}
		if r.Namespace == "" {
			r.Namespace = blackboard.DefaultNamespace
		}
		want := []blackboard.Record{r}
		if got, err := s.Get(ctx, r.ID); err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("Get:\n got %+v (%v)\nwant %+v", got, err, r)
		}
		if got := trace(t, s, r.Provenance.TraceID); !reflect.DeepEqual(got, want) {
			t.Fatalf("ListTrace:\n got %+v\nwant %+v", got, want)
		}
		got, err := s.FindActive(ctx, "", r.Provenance.TraceID, r.Slot, r.Kind)
		if active := r.Status == blackboard.StatusActive; active && (err != nil || !reflect.DeepEqual(got, r)) || !active && !errors.Is(err, blackboard.ErrNotFound) {
			t.Fatalf("FindActive of a %s record: %+v, %v", r.Status, got, err)
		}
		// A status change with fuzzed status and reason.
		inv := store.Invalidation{ID: r.ID, Status: fuzzStatuses[e(7)%5], Reason: reason.Code(strings.ToUpper(writer))}
		err = s.Apply(ctx, store.Batch{Invalidations: []store.Invalidation{{ID: inv.ID, Status: inv.Status, Reason: inv.Reason}}})
		valid := (inv.Status == blackboard.StatusInvalidated || inv.Status == blackboard.StatusExpired) && inv.Reason != ""
		switch {
		case !valid && !errors.Is(err, blackboard.ErrInvalidInput) && !errors.Is(err, store.ErrNotActive):
			t.Fatalf("status change %+v of a %s record: %v", inv, r.Status, err)
		case valid && r.Status == blackboard.StatusActive && err != nil:
			t.Fatalf("status change %+v: %v", inv, err)
		case valid && r.Status != blackboard.StatusActive && !errors.Is(err, store.ErrNotActive):
			t.Fatalf("status change %+v of a %s record: %v", inv, r.Status, err)
		}
		if err == nil {
			r.Status, r.Reason = inv.Status, inv.Reason
		}
		if got, err := s.Get(ctx, r.ID); err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("after status change %+v (%v):\n got %+v\nwant %+v", inv, err, got, r)
		}
	})
}

package storetest

import (
	"errors"
	"math"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// badUTF8 is a string that is not valid UTF-8 (Latin-1 "café").
const badUTF8 = "caf\xe9"

// testInvalidUTF8 puts a string that is not valid UTF-8 in each string
// position of a record: the store must refuse it with the sentinel
// store.Batch.Check gives (ErrInvalidInput for the record's own fields,
// ErrInvalidPayload for the payload) and store nothing, rather than store a
// record that would read back altered.
func testInvalidUTF8(t *testing.T, s store.Store) {
	good := record("utf8", blackboard.Percepts, "door", 1)
	bad := []struct {
		where  string
		mutate func(*blackboard.Record)
		want   error
	}{
		{"the id", func(r *blackboard.Record) { r.ID = "percepts:utf8:" + badUTF8 }, blackboard.ErrInvalidInput},
		{"the kind", func(r *blackboard.Record) { r.Kind = badUTF8 }, blackboard.ErrInvalidInput},
		{"the trace id", func(r *blackboard.Record) { r.Provenance.TraceID = badUTF8 }, blackboard.ErrInvalidInput},
		{"the writer", func(r *blackboard.Record) { r.Provenance.Writer = badUTF8 }, blackboard.ErrInvalidInput},
		{"the reason", func(r *blackboard.Record) { r.Reason = reason.Code(badUTF8) }, blackboard.ErrInvalidInput},
		{"the namespace", func(r *blackboard.Record) { r.Namespace = badUTF8 }, blackboard.ErrInvalidInput},
		{"an input ref", func(r *blackboard.Record) { r.Provenance.InputRefs = []string{good.ID, badUTF8} }, blackboard.ErrInvalidInput},
		{"an evidence ref", func(r *blackboard.Record) { r.EvidenceRefs = []string{badUTF8} }, blackboard.ErrInvalidInput},
		{"a payload string", func(r *blackboard.Record) { r.Payload = blackboard.Payload{"s": badUTF8} }, blackboard.ErrInvalidPayload},
		{"a payload key", func(r *blackboard.Record) { r.Payload = blackboard.Payload{badUTF8: 1.0} }, blackboard.ErrInvalidPayload},
		{"a string deep in the payload", func(r *blackboard.Record) {
			r.Payload = blackboard.Payload{"l": []any{1.0, map[string]any{"k": []any{"ok", badUTF8}}}}
		}, blackboard.ErrInvalidPayload},
		{"a key deep in the payload", func(r *blackboard.Record) {
			r.Payload = blackboard.Payload{"m": map[string]any{"ok": []any{map[string]any{badUTF8: true}}}}
		}, blackboard.ErrInvalidPayload},
		{"a string list in the payload", func(r *blackboard.Record) { r.Payload = blackboard.Payload{"refs": []string{"ok", badUTF8}} }, blackboard.ErrInvalidPayload},
	}
	for _, c := range bad {
		r := record("utf8", blackboard.Percepts, "door", 2)
		c.mutate(&r)
		if err := (&store.Batch{Appends: []blackboard.Record{r}}).Check("", ""); !errors.Is(err, c.want) {
			t.Fatalf("suite bug: store.Batch.Check of a record with invalid UTF-8 in %s: %v, want %q", c.where, err, c.want)
		}
		refuses(t, s, good, r, c.want, "a record with invalid UTF-8 in "+c.where, "stores nothing")
	}
	mustAppend(t, s, good)
	wantSame(t, mustGet(t, s, good.ID), good, "the well-formed record the refused batches held can be appended")
}

// testTTLBounds checks that a TTL in [0, store.MaxTTL] is stored exactly
// and one outside it is refused, so that timestamp plus TTL cannot
// overflow.
func testTTLBounds(t *testing.T, s store.Store) {
	for i, ttl := range []int64{-1, maxTTLMS + 1, math.MaxInt64, math.MinInt64} {
		r := record("ttl", blackboard.Percepts, "door", 100+i)
		r.Provenance.TTLMS = ttl
		before := dump(t, s)
		wantErr(t, appendOne(t.Context(), s, r), blackboard.ErrInvalidInput, "Apply refuses a record with a TTL outside [0, store.MaxTTL]")
		wantErr(t, s.Apply(t.Context(), store.Batch{Appends: []blackboard.Record{record("ttl", blackboard.Percepts, "door", 200+i), r}}),
			blackboard.ErrInvalidInput, "Apply refuses a batch holding a record with a TTL outside [0, store.MaxTTL]")
		unchanged(t, s, before, "a record with a TTL outside [0, store.MaxTTL] is not stored")
	}
	for i, ttl := range []int64{0, 1, maxTTLMS} {
		r := record("ttl", blackboard.Percepts, "door", i+1)
		r.Provenance.TTLMS = ttl
		mustAppend(t, s, r)
		wantSame(t, mustGet(t, s, r.ID), r, "a TTL in [0, store.MaxTTL] is stored exactly")
	}
}

package storetest

import (
	"errors"
	"math"
	"testing"

	"github.com/blackboardkernel/bk/kernel"
)

// badUTF8 is a string that is not valid UTF-8 (Latin-1 "café").
const badUTF8 = "caf\xe9"

// testInvalidUTF8 puts a string that is not valid UTF-8 in each string
// position of a record: the store must refuse it with the sentinel
// kernel.CheckRecord gives (ErrInvalidInput for the record's own fields,
// ErrInvalidPayload for the payload) and store nothing, rather than store a
// record that would read back altered.
func testInvalidUTF8(t *testing.T, s kernel.Store) {
	good := record("utf8", kernel.Percepts, "door", 1)
	bad := []struct {
		where  string
		mutate func(*kernel.Record)
		want   error
	}{
		{"the id", func(r *kernel.Record) { r.ID = "percepts:utf8:" + badUTF8 }, kernel.ErrInvalidInput},
		{"the kind", func(r *kernel.Record) { r.Kind = badUTF8 }, kernel.ErrInvalidInput},
		{"the trace id", func(r *kernel.Record) { r.Provenance.TraceID = badUTF8 }, kernel.ErrInvalidInput},
		{"the writer", func(r *kernel.Record) { r.Provenance.Writer = badUTF8 }, kernel.ErrInvalidInput},
		{"the reason", func(r *kernel.Record) { r.Reason = kernel.Code(badUTF8) }, kernel.ErrInvalidInput},
		{"the namespace", func(r *kernel.Record) { r.Namespace = badUTF8 }, kernel.ErrInvalidInput},
		{"an input ref", func(r *kernel.Record) { r.Provenance.InputRefs = []string{good.ID, badUTF8} }, kernel.ErrInvalidInput},
		{"an evidence ref", func(r *kernel.Record) { r.EvidenceRefs = []string{badUTF8} }, kernel.ErrInvalidInput},
		{"a payload string", func(r *kernel.Record) { r.Payload = kernel.Payload{"s": badUTF8} }, kernel.ErrInvalidPayload},
		{"a payload key", func(r *kernel.Record) { r.Payload = kernel.Payload{badUTF8: 1.0} }, kernel.ErrInvalidPayload},
		{"a string deep in the payload", func(r *kernel.Record) {
			r.Payload = kernel.Payload{"l": []any{1.0, map[string]any{"k": []any{"ok", badUTF8}}}}
		}, kernel.ErrInvalidPayload},
		{"a key deep in the payload", func(r *kernel.Record) {
			r.Payload = kernel.Payload{"m": map[string]any{"ok": []any{map[string]any{badUTF8: true}}}}
		}, kernel.ErrInvalidPayload},
		{"a string list in the payload", func(r *kernel.Record) { r.Payload = kernel.Payload{"refs": []string{"ok", badUTF8}} }, kernel.ErrInvalidPayload},
	}
	for _, c := range bad {
		r := record("utf8", kernel.Percepts, "door", 2)
		c.mutate(&r)
		if err := kernel.CheckRecord(r); !errors.Is(err, c.want) {
			t.Fatalf("suite bug: kernel.CheckRecord of a record with invalid UTF-8 in %s: %v, want %q", c.where, err, c.want)
		}
		before := dump(t, s)
		wantErr(t, s.Append(t.Context(), r), c.want, "Append refuses invalid UTF-8 in "+c.where)
		wantErr(t, s.Apply(t.Context(), kernel.Batch{Appends: []kernel.Record{good, r}}), c.want,
			"Apply refuses a batch holding a record with invalid UTF-8 in "+c.where)
		unchanged(t, s, before, "a refused record with invalid UTF-8 in "+c.where+" stores nothing")
	}
	mustAppend(t, s, good)
	wantSame(t, mustGet(t, s, good.ID), good, "the well-formed record the refused batches held can be appended")
}

// testTTLBounds checks that a TTL in [0, kernel.MaxTTL] is stored exactly
// and one outside it is refused, so that timestamp plus TTL cannot
// overflow.
func testTTLBounds(t *testing.T, s kernel.Store) {
	for i, ttl := range []int64{-1, maxTTLMS + 1, math.MaxInt64, math.MinInt64} {
		r := record("ttl", kernel.Percepts, "door", 100+i)
		r.Provenance.TTLMS = ttl
		before := dump(t, s)
		wantErr(t, s.Append(t.Context(), r), kernel.ErrInvalidInput, "Append refuses a TTL outside [0, kernel.MaxTTL]")
		wantErr(t, s.Apply(t.Context(), kernel.Batch{Appends: []kernel.Record{r}}), kernel.ErrInvalidInput,
			"Apply refuses a TTL outside [0, kernel.MaxTTL]")
		unchanged(t, s, before, "a record with a TTL outside [0, kernel.MaxTTL] is not stored")
	}
	for i, ttl := range []int64{0, 1, maxTTLMS} {
		r := record("ttl", kernel.Percepts, "door", i+1)
		r.Provenance.TTLMS = ttl
		mustAppend(t, s, r)
		wantSame(t, mustGet(t, s, r.ID), r, "a TTL in [0, kernel.MaxTTL] is stored exactly")
	}
}

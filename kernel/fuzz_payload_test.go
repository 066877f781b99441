package kernel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/store/sqlitestore"
)

// payloadDepth is the nesting depth of v, the payload object itself at depth.
func payloadDepth(v any, depth int) int {
	out := depth
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			out = max(out, payloadDepth(e, depth+1))
		}
	case []any:
		for _, e := range x {
			out = max(out, payloadDepth(e, depth+1))
		}
	}
	return out
}

// FuzzPayload decodes arbitrary bytes into a payload in one of three ways
// (an object, any value under a key with numbers as json.Number, the raw
// bytes as a json.RawMessage), writes it through a Tool under a size limit
// and checks: a typed refusal that stores nothing, for a reason the input
// has; or a stored payload that is encoding/json's reading of the input,
// re-encodes to it, and reads back identically from SQLite.
func FuzzPayload(f *testing.F) {
	for _, seed := range []string{`{}`, `{"a":1}`, `[1,"x",null]`, `"\ud800 \u2028"`, `{"n":1e400}`, `{"a":{"b":[{"c":null}]}}`,
		`12345678901234567890`, `-0`, `{"a":1,"a":2}`, `not json`, `{"a":1}{"b":2}`, "\xff", `{"k":"<&>"}`,
		strings.Repeat("[", 64) + strings.Repeat("]", 64), strings.Repeat("[", 65) + strings.Repeat("]", 65)} {
		for mode := range uint8(3) {
			f.Add([]byte(seed), mode, uint16(65535))
		}
	}
	f.Add([]byte(`{"abc":"defgh"}`), uint8(0), uint16(13))
	f.Add([]byte(`{"abc":"defgh"}`), uint8(0), uint16(12))
	sql, err := sqlitestore.Open(context.Background(), ":memory:")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { sql.Close() })
	runs := 0
	f.Fuzz(func(t *testing.T, data []byte, mode uint8, limit uint16) {
		var p blackboard.Payload
		var want map[string]any // encoding/json's reading of the input, nil if it has none
		var plain any
		decodable := json.Unmarshal(data, &plain) == nil
		switch mode % 3 {
		case 0: // an object
			if json.Unmarshal(data, &p) != nil || p == nil {
				return
			}
			want, _ = plain.(map[string]any)
		case 1: // any value, numbers as json.Number
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.UseNumber()
			var v any
			if dec.Decode(&v) != nil {
				return
			}
			p = blackboard.Payload{"v": v}
			plain = nil // the same first value, with float64 numbers
			decodable = json.NewDecoder(bytes.NewReader(data)).Decode(&plain) == nil
			want = map[string]any{"v": plain}
		case 2: // raw bytes
			p = blackboard.Payload{"raw": json.RawMessage(data)}
			want = map[string]any{"raw": plain}
		}
		max := int(limit) + 2 // "{}" always fits
		mem := memstore.New()
		k, err := kernel.New(kernel.Config{Store: mem, MaxPayloadBytes: max})
		if err != nil {
			t.Fatal(err)
		}
		id, err := k.Handle(blackboard.RoleTool, "tool").Write(t.Context(), kernel.Entry{TraceID: "t", Slot: blackboard.Percepts, Kind: "k", Payload: p})
		enc, _ := json.Marshal(want)
		deep := payloadDepth(want, 0) > 64
		if err != nil {
			tooLarge := errors.Is(err, kernel.ErrPayloadTooLarge)
			switch {
			case kernel.CodeOf(err) != reason.InvalidInput || !tooLarge && !errors.Is(err, blackboard.ErrInvalidPayload):
				t.Fatalf("%q: untyped refusal %v", data, err)
			case mem.Len() != 0:
				t.Fatalf("%q: refused (%v) but %d records stored", data, err, mem.Len())
			case decodable && tooLarge && len(enc) <= max:
				t.Fatalf("%q encodes to %d bytes, limit %d: %v", data, len(enc), max, err)
			case decodable && !tooLarge && !deep:
				t.Fatalf("%q: refused %v", data, err)
			}
			return
		}
		rec, err := mem.Get(t.Context(), id)
		if err != nil {
			t.Fatalf("memstore lacks the record Write returned %s: %v", id, err)
		}
		if !decodable || deep || len(enc) > max {
			t.Fatalf("%q (decodable %v, deep %v, %d bytes, limit %d) stored as %v", data, decodable, deep, len(enc), max, rec.Payload)
		}
		if !reflect.DeepEqual(map[string]any(rec.Payload), want) {
			t.Fatalf("%q stored as %#v, want %#v", data, rec.Payload, want)
		}
		var again any
		if out, err := json.Marshal(rec.Payload); err != nil || json.Unmarshal(out, &again) != nil || !reflect.DeepEqual(again, any(want)) {
			t.Fatalf("%q re-encodes to %s (%v)", data, out, err)
		}
		runs++
		rec.Provenance.TraceID = "fuzz" + strconv.Itoa(runs)
		rec.ID = "percepts:" + rec.Provenance.TraceID + ":1"
		if err := sql.Apply(t.Context(), store.Batch{Appends: []blackboard.Record{rec}}); err != nil {
			t.Fatalf("sqlite refused %+v: %v", rec, err)
		}
		got, err := sql.Get(t.Context(), rec.ID)
		if err != nil || !reflect.DeepEqual(got, rec) {
			t.Fatalf("sqlite round trip: %+v (%v), want %+v", got, err, rec)
		}
	})
}

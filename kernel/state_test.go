package kernel

import (
	"errors"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/store"
)

// seqOfIDs are ids around the edges of seqOf's own reading of kernel ids.
var seqOfIDs = []string{"", ":", "::", "1", ":1", "a:1", "a::1", "a:b:1", "beliefs:t-1:12", "a:b:0", "a:b:01",
	"a:b:+1", "a:b:-1", "a:b:", "a:b:1x", "a:b:c:7", "a:b:99999999999999999", "a:b:999999999999999999",
	"a:b:9999999999999999999", "a:b:99999999999999999999", "plans:x:y:3", "é:ü:4", "a:b\xff:2"}

// TestSeqOfMatchesSplitRecordID holds seqOf to the general parser.
func TestSeqOfMatchesSplitRecordID(t *testing.T) {
	for _, id := range seqOfIDs {
		want := 0
		if _, _, n, ok := store.SplitRecordID(id); ok {
			want = n + 1
		}
		if got := seqOf(id); got != want {
			t.Errorf("seqOf(%q) = %d, want %d", id, got, want)
		}
	}
}

func FuzzSeqOf(f *testing.F) {
	for _, id := range seqOfIDs {
		f.Add(id)
	}
	f.Fuzz(func(t *testing.T, id string) {
		want := 0
		if _, _, n, ok := store.SplitRecordID(id); ok {
			want = n + 1
		}
		if got := seqOf(id); got != want {
			t.Errorf("seqOf(%q) = %d, want %d", id, got, want)
		}
	})
}

// TestDecodeStateRefusesUnknownEnums: a stored state is JSON and the
// enums decode from any text, so decodeState checks them; a state it
// refuses is rebuilt from the trace.
func TestDecodeStateRefusesUnknownEnums(t *testing.T) {
	rec := `{"id":"beliefs:t:1","slot":"beliefs","mode":"commit","kind":"k","payload":{},"provenance":{"role":"kernel","writer_id":"w","trace_id":"t","ts_ms":1},"status":"ACTIVE","scope":"episode"}`
	if _, err := decodeState([]byte(`{"h":[{"s":1,"r":` + rec + `}],"c":[` + rec + `]}`)); err != nil {
		t.Fatalf("a valid state: %v", err)
	}
	for _, bad := range []string{`"slot":"belief"`, `"mode":""`, `"status":"active"`, `"scope":"global"`, `"role":"root"`} {
		field := strings.SplitN(bad, ":", 2)[0]
		at := strings.Index(rec, field+":")
		end := at + strings.IndexAny(rec[at+len(field)+2:], `"`) + len(field) + 3
		r := rec[:at] + bad + rec[end:]
		for _, state := range []string{`{"h":[{"s":1,"r":` + r + `}]}`, `{"c":[` + r + `]}`, `{"p":[{"s":1,"e":true,"r":` + rec + `,"p":[` + r + `]}]}`} {
			if _, err := decodeState([]byte(state)); !errors.Is(err, blackboard.ErrInvalidInput) {
				t.Errorf("%s: %v", state, err)
			}
		}
	}
	if _, err := decodeState([]byte(`{"h":[{"s":1,"e":true,"r":` + rec + `,"o":"Kernel"}]}`)); !errors.Is(err, blackboard.ErrInvalidInput) {
		t.Errorf("unknown proposer role: %v", err)
	}
}

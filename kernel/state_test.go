package kernel

import (
	"testing"

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

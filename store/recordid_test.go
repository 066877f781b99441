package store_test

import (
	"cmp"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/store"
)

// A kernel id names its namespace, trace and position: SplitRecordID reads
// back what RecordID wrote, and no two (namespace, trace, slot, n) share an
// id, whatever colons, at signs and percent signs the names hold.
func TestRecordIDPerNamespace(t *testing.T) {
	names := []string{"", blackboard.DefaultNamespace, "a", "a:b", "a%3Ab", "a%", "@", "x@y", "b:", ":", "é"}
	traces := []string{"t", "a:b", "b", ":b", "@", "t:1", "%3A"}
	seen := map[string][3]string{}
	for _, ns := range names {
		for _, tr := range traces {
			for _, n := range []int{1, 12} {
				id := store.RecordID(blackboard.Percepts, ns, tr, n)
				gns, gtr, idx, ok := store.SplitRecordID(id)
				if !ok || gns != cmp.Or(ns, blackboard.DefaultNamespace) || gtr != tr || idx != n-1 {
					t.Errorf("SplitRecordID(%q) = %q, %q, %d, %v; want %q, %q, %d", id, gns, gtr, idx, ok, cmp.Or(ns, blackboard.DefaultNamespace), tr, n-1)
				}
				key := [3]string{cmp.Or(ns, blackboard.DefaultNamespace), tr, string(rune('0' + n))}
				if prev, dup := seen[id]; dup && prev != key {
					t.Errorf("RecordID %q names both %v and %v", id, prev, key)
				}
				seen[id] = key
			}
		}
	}
}

package audit

import (
	"strconv"
	"testing"
)

// TestInternedIsBounded: interned gives back the string it is given, the
// same box for a string it has seen, and stops keeping new strings once
// it holds internedCap of them.
func TestInternedIsBounded(t *testing.T) {
	if v := interned("EFFECT_SUCCEEDED"); v != any("EFFECT_SUCCEEDED") {
		t.Fatalf("interned = %v", v)
	}
	for i := range 2 * internedCap {
		s := "kind_" + strconv.Itoa(i)
		if v := interned(s); v != any(s) {
			t.Fatalf("interned(%q) = %v", s, v)
		}
	}
	if n := len(*internedTab.Load()); n != internedCap {
		t.Errorf("the table holds %d strings, want the cap %d", n, internedCap)
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = interned("EFFECT_SUCCEEDED") }); allocs != 0 {
		t.Errorf("a string seen before costs %v allocations, want 0", allocs)
	}
}

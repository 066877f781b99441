package ident

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		s  string
		ok bool
	}{
		{"T-1", true},
		{"ticket 7 · ünïcode", true},
		{"", false},
		{"a\x00b", false},
		{"line\nbreak", false},
		{"del\x7f", false},
		{"bad\xffutf8", false},
	} {
		if err := Check(tc.s, 32); (err == nil) != tc.ok {
			t.Errorf("Check(%q): %v, want ok=%v", tc.s, err, tc.ok)
		}
	}
	if err := Check(strings.Repeat("a", 9), 8); err == nil {
		t.Error("a name over the limit passed")
	}
	if err := Check(strings.Repeat("a", 8), 8); err != nil {
		t.Errorf("a name at the limit: %v", err)
	}
}

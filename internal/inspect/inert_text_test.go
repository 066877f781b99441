package inspect_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/blackboardkernel/bk/internal/inspect"
)

// TestInert: what a terminal acts on is shown as an escape; the rest of
// the text, non-ASCII letters included, is kept; and InertJSON keeps the
// JSON value.
func TestInert(t *testing.T) {
	for in, want := range map[string]string{
		"refund_order":                  "refund_order",
		"café ☕ ünïcode":                "café ☕ ünïcode",
		"\x1b]52;c;eA==\x07":            `\x1b]52;c;eA==\x07`,
		"a\nb\tc\rd\x00\x7f":            `a\nb\tc\rd\x00\x7f`,
		"\u009b2K \u0085":               `\x9b2K \x85`,
		"\u202egnp\u202c \u2066x\u2069": `\u202egnp\u202c \u2066x\u2069`,
		"\u200e\u200f\u061c\u2028":      `\u200e\u200f\u061c\u2028`,
		"bad \xff\x9b byte":             `bad \xff\x9b byte`,
	} {
		if got := inspect.Inert(in); got != want {
			t.Errorf("Inert(%q) = %q, want %q", in, got, want)
		}
	}
	v := map[string]string{"tool": "x\x1b[2K\u009b\u202e\x7f\n"}
	b, _ := json.Marshal(v)
	out := inspect.InertJSON(b)
	if string(out) != `{"tool":"x\u001b[2K\u009b\u202e\u007f\n"}` {
		t.Errorf("InertJSON: %s", out)
	}
	var back map[string]string
	if err := json.Unmarshal(out, &back); err != nil || back["tool"] != v["tool"] {
		t.Errorf("InertJSON changed the value: %q, %v", back, err)
	}
}

// A tool name that carries a clipboard write and a right-to-left override
// prints as text.
func ExampleInert() {
	fmt.Println(inspect.Inert("refund\x1b]52;c;cGF5\x07\u202egnp.exe"))
	// Output:
	// refund\x1b]52;c;cGF5\x07\u202egnp.exe
}

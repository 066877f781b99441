package kernel

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/blackboardkernel/bk/blackboard"
)

// TestNormalizeObjectNestedValues covers an object with more values to
// convert than object notes on its stack, mixed with canonical scalars: each
// is converted, the copy shares no container with the input, and a bad
// value is named by its key.
func TestNormalizeObjectNestedValues(t *testing.T) {
	inner := []any{"x", 1}
	p := blackboard.Payload{
		"a": 1, "b": []string{"p", "q"}, "c": map[string]any{"d": int8(-2)}, "e": json.Number("2.5"),
		"f": blackboard.Payload{"g": uint(3)}, "h": inner, "s": "str", "t": true, "n": nil, "x": 0.5,
	}
	got, err := normalizePayload(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := blackboard.Payload{
		"a": 1.0, "b": []any{"p", "q"}, "c": map[string]any{"d": -2.0}, "e": 2.5,
		"f": map[string]any{"g": 3.0}, "h": []any{"x", 1.0}, "s": "str", "t": true, "n": nil, "x": 0.5,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v, want %#v", got, want)
	}
	enc, _ := json.Marshal(want)
	if _, err := normalizePayload(p, len(enc)); err != nil {
		t.Fatalf("at its encoded size %d: %v", len(enc), err)
	}
	if _, err := normalizePayload(p, len(enc)-1); !errors.Is(err, ErrPayloadTooLarge) {
		t.Fatalf("under its encoded size: %v", err)
	}
	inner[0] = "changed"
	if got["h"].([]any)[0] != "x" {
		t.Fatal("the copy shares a list with the input")
	}
	for key, bad := range map[string]any{"a": "\xff", "c": map[string]any{"d": []any{"\xff"}}, "h": []any{struct{ C chan int }{}}} {
		q := blackboard.Payload{"a": 1, "b": []string{"p"}, "c": map[string]any{}, "e": json.Number("1"), "h": []any{}, "s": "ok"}
		q[key] = bad
		_, err := normalizePayload(q, 0)
		if !errors.Is(err, blackboard.ErrInvalidPayload) || !strings.Contains(err.Error(), "key \""+key+"\"") &&
			!strings.Contains(err.Error(), "key \"d\"") {
			t.Errorf("%s: %v", key, err)
		}
	}
}

// TestJSONStringAgreesWithEncodingJSON checks jsonString's size and
// validity against encoding/json and utf8.ValidString, with each byte or
// rune that is not written as it is at every offset of strings around the
// eight-byte words jsonString skips, and with random bytes.
func TestJSONStringAgreesWithEncodingJSON(t *testing.T) {
	check := func(s string) {
		t.Helper()
		enc, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if size, valid := jsonString(s); size != len(enc) || valid != utf8.ValidString(s) {
			t.Fatalf("jsonString(%q) = %d, %v; encoding/json writes %d bytes, valid %v", s, size, valid, len(enc), utf8.ValidString(s))
		}
	}
	specials := []string{"\x00", "\x1f", "\n", "\"", "\\", "<", ">", "&", "\x7f", "\x80", "\xff", "é", "\u2028", "\u2029", "€", "😀", "\xe2\x80"}
	for n := range 26 {
		for at := 0; at <= n; at++ {
			for _, sp := range specials {
				check(strings.Repeat("a", at) + sp + strings.Repeat("b", n-at))
			}
		}
		check(strings.Repeat(" ~", n))
	}
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 40)
	for range 20000 {
		b := buf[:r.IntN(len(buf))]
		for i := range b {
			b[i] = byte(r.IntN(256))
			if r.IntN(4) > 0 {
				b[i] = byte(0x20 + r.IntN(0x60)) // mostly ASCII, for runs of plain words
			}
		}
		check(string(b))
	}
}

// TestShortDecimalSizeAgreesWithFormatting checks the fast path for short
// decimals against formatting and encoding/json, around its bounds, for
// decimals of up to six fraction digits and for random numbers.
func TestShortDecimalSizeAgreesWithFormatting(t *testing.T) {
	hits := 0
	check := func(f float64) {
		t.Helper()
		size, ok := shortDecimalSize(f)
		if !ok {
			return
		}
		hits++
		enc, err := json.Marshal(f)
		if err != nil || size != formattedNumberSize(f) || size != len(enc) {
			t.Fatalf("shortDecimalSize(%v) = %d; formatted %d, encoding/json %s (%v)", f, size, formattedNumberSize(f), enc, err)
		}
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1e-3, 0.0009999, 1e12, math.Nextafter(1e12, 0), 999999999999.999,
		0.1, 0.2, 0.3, 1.005, 2.675, 9.995, 0.125, 0.0625, 1e-7, 5e-324, math.MaxFloat64, math.Inf(1), math.NaN(), 129.99, 149.99, 89} {
		check(f)
		check(-f)
	}
	for n := -200000; n <= 200000; n++ {
		for _, scale := range []float64{1, 10, 100, 1000, 1e4, 1e5, 1e6} {
			check(float64(n) / scale)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		check(r.Float64() * math.Pow(10, float64(r.IntN(16)-4)))
		check(float64(r.Int64N(1e15)) / math.Pow(10, float64(r.IntN(7))))
		check(math.Float64frombits(r.Uint64()))
	}
	if hits < 100000 {
		t.Fatalf("only %d numbers took the fast path", hits)
	}
}

package canon

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// The binary form and the JSON form tell the same values apart: two
// values share one exactly when they share the other. The attack this
// stops is a hash chain that tells two spellings of one record apart (or
// takes two records for one).
func TestBinaryMatchesJSON(t *testing.T) {
	vals := []any{nil, true, false, 0.0, math.Copysign(0, -1), 1.0, -1.0, 2.5, 1e21, 1e-7, "", "1", "a\"b", "a,b",
		[]any{}, []any{1.0}, []any{"1"}, []string{"1"}, []any{[]any{}}, map[string]any{}, map[string]any{"1": 1.0},
		map[string]any{"a": "b", "c": "d"}, map[string]any{"a": "b\",\"c\":\"d"}, map[string]any{"a": nil}, map[string]any{"a": []any{}},
		int64(3), uint8(3), float32(0.5), map[string]int{"k": 1}, (*int)(nil), []string(nil), map[string]any(nil)}
	r := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		vals = append(vals, randValue(r, 3))
	}
	for i, a := range vals {
		ja, err := Encode(a)
		if err != nil {
			t.Fatalf("Encode(%#v): %v", a, err)
		}
		ba, err := AppendBinary(nil, a)
		if err != nil {
			t.Fatalf("AppendBinary(%#v): %v", a, err)
		}
		for _, b := range vals[i:] {
			jb, _ := Encode(b)
			bb, _ := AppendBinary(nil, b)
			if bytes.Equal(ja, jb) != bytes.Equal(ba, bb) {
				t.Errorf("%#v and %#v: JSON forms equal %v, binary forms equal %v", a, b, bytes.Equal(ja, jb), bytes.Equal(ba, bb))
			}
		}
	}
	// Spellings of one value, as JSON text reads them.
	for _, g := range [][]string{{`2`, `2.0`, `20e-1`}, {`0`, `-0.0`}, {`{"a":1,"b":[1,2]}`, `{ "b" : [ 1.0 , 2e0 ], "a" : 10e-1 }`}} {
		want, _ := AppendBinary(nil, mustDecode(t, g[0]))
		for _, s := range g[1:] {
			if got, _ := AppendBinary(nil, mustDecode(t, s)); !bytes.Equal(got, want) {
				t.Errorf("%s and %s have different binary forms", g[0], s)
			}
		}
	}
	for name, v := range map[string]any{"NaN": math.NaN(), "+Inf": math.Inf(1), "bad UTF-8": "a\xffb", "bad key": map[string]any{"\xff": 1},
		"int key": map[int]int{1: 1}, "func": func() {}} {
		if _, err := AppendBinary(nil, v); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
}

// randValue is a random JSON value of small depth, with numbers drawn so
// that some repeat.
func randValue(r *rand.Rand, depth int) any {
	switch k := r.IntN(7); {
	case depth == 0 || k == 0:
		return float64(r.IntN(4)) / 2
	case k == 1:
		return strconv.Itoa(r.IntN(3))
	case k == 2:
		return r.IntN(2) == 0
	case k == 3:
		return nil
	case k == 4:
		s := make([]any, r.IntN(3))
		for i := range s {
			s[i] = randValue(r, depth-1)
		}
		return s
	default:
		m := map[string]any{}
		for range r.IntN(3) {
			m[strconv.Itoa(r.IntN(3))] = randValue(r, depth-1)
		}
		return m
	}
}

package canon

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// One value spelled several ways has one digest; the attack this stops is a
// repeated call (or a second refund) told apart from the first by spelling.
func TestSpellingsOfOneValue(t *testing.T) {
	groups := [][]string{
		{`2`, `2.0`, `2e0`, `20e-1`, `0.2e1`, `2.000000000000000000000001`},
		{`0`, `-0`, `0.0`, `-0.0`, `0e5`, `-0e-5`},
		{`{"a":1,"b":[1,2]}`, `{ "b" : [ 1.0 , 2e0 ], "a" : 10e-1 }`},
		{`"x"`, ` "x" `, `"\u0078"`},
		{`null`, ``, `  `},
	}
	for _, g := range groups {
		want, err := DigestJSON([]byte(g[0]))
		if err != nil {
			t.Fatalf("%s: %v", g[0], err)
		}
		for _, s := range g[1:] {
			got, err := DigestJSON([]byte(s))
			if err != nil {
				t.Fatalf("%s: %v", s, err)
			}
			if got != want {
				t.Errorf("%s and %s have different digests", g[0], s)
			}
		}
	}
}

// Different values never share a form.
func TestDifferentValuesDiffer(t *testing.T) {
	vals := []string{`1`, `-1`, `"1"`, `[1]`, `{"1":1}`, `true`, `null`, `"a,b"`, `["a","b"]`, `"a\"b"`, `["a\"","b"]`,
		`{"a":"b","c":"d"}`, `{"a":"b\",\"c\":\"d"}`, `1.5`, `1e21`, `1e-7`}
	seen := map[string]string{}
	for _, v := range vals {
		b, err := Encode(mustDecode(t, v))
		if err != nil {
			t.Fatal(err)
		}
		if prev, ok := seen[string(b)]; ok {
			t.Errorf("%s and %s share the form %s", prev, v, b)
		}
		seen[string(b)] = v
	}
}

func mustDecode(t *testing.T, s string) any {
	t.Helper()
	v, err := Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Go values and their JSON spelling agree, named types included.
func TestGoValuesMatchJSON(t *testing.T) {
	type payload map[string]any
	v := payload{"n": int64(3), "u": uint8(7), "f": float32(0.5), "s": []string{"x"}, "m": map[string]int{"k": 1},
		"z": math.Copysign(0, -1), "p": (*int)(nil)}
	got, err := Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"f":0.5,"m":{"k":1},"n":3,"p":null,"s":["x"],"u":7,"z":0}`
	if string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// Numbers other than -0 are written as encoding/json writes a float64.
func TestNumbersAsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) || f == 0 {
			continue
		}
		want, _ := json.Marshal(f)
		got, err := Encode(f)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("%v: got %s, want %s", f, got, want)
		}
	}
}

func TestStringsAsTheyAre(t *testing.T) {
	got, err := Encode("<a&b>\u2028\x01\"\\\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "\"<a&b>\u2028\\u0001\\\"\\\\\\n\""; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	var back string
	if err := json.Unmarshal(got, &back); err != nil || back != "<a&b>\u2028\x01\"\\\n" {
		t.Errorf("does not read back: %q, %v", back, err)
	}
}

// What has no canonical form is refused, never given one.
func TestRefused(t *testing.T) {
	for name, v := range map[string]any{
		"NaN": math.NaN(), "+Inf": math.Inf(1), "bad UTF-8": "a\xffb", "bad key": map[string]any{"\xff": 1},
		"int key": map[int]int{1: 1}, "func": func() {}, "huge": json.Number("1e400"),
	} {
		if _, err := Encode(v); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
	for _, s := range []string{`{"a":1,"a":2}`, `1 2`, `{`, "\"\xff\"", `[1,]`, `{"a":{"b":1,"b":1}}`} {
		if _, err := DigestJSON([]byte(s)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: got %v, want ErrInvalid", s, err)
		}
	}
}

func TestDepthBounded(t *testing.T) {
	deep := []byte{}
	for range maxDepth + 2 {
		deep = append(deep, '[')
	}
	for range maxDepth + 2 {
		deep = append(deep, ']')
	}
	if _, err := DigestJSON(deep); !errors.Is(err, ErrInvalid) {
		t.Errorf("got %v, want ErrInvalid", err)
	}
	var v any = "x"
	for range maxDepth + 2 {
		v = []any{v}
	}
	if _, err := Encode(v); !errors.Is(err, ErrInvalid) {
		t.Errorf("got %v, want ErrInvalid", err)
	}
}

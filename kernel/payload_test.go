package kernel

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

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

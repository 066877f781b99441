package toolgate

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestSchemaCheckReadsOneValue: arguments parse without a decoder when
// they are one JSON value, and anything else is refused in the decoder's
// words, as before that fast path.
func TestSchemaCheckReadsOneValue(t *testing.T) {
	s, err := parseSchema(json.RawMessage(searchSchema))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		raw, problem string
		want         map[string]any
	}{
		{raw: `{"query":"refund","n":2}`, want: map[string]any{"query": "refund", "n": 2.0}},
		{raw: " \n{\"query\":\"x\"}\t ", want: map[string]any{"query": "x"}},
		{raw: ``, problem: `argument "query" is required`},
		{raw: `{"query":"a"} {"query":"b"}`, problem: "more than one JSON value"},
		{raw: `{"query":`, problem: "not valid JSON"},
		{raw: `["query"]`, problem: "must be a JSON object"},
	} {
		args, prob := s.check(json.RawMessage(tc.raw))
		switch {
		case tc.problem != "":
			if prob == nil || !strings.Contains(prob.detail, tc.problem) {
				t.Errorf("%q: problem %+v, want one saying %q", tc.raw, prob, tc.problem)
			}
		case prob != nil:
			t.Errorf("%q: %+v", tc.raw, prob)
		case !reflect.DeepEqual(map[string]any(args), tc.want):
			t.Errorf("%q: %v, want %v", tc.raw, args, tc.want)
		}
	}
}

package toolgate

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
)

// richSchema uses what the hand-written subset could not check: bounds,
// a pattern, a nested object, an array of objects, a $ref into $defs and a
// rule across properties.
const richSchema = `{"type":"object",
 "properties":{
  "order_id":{"type":"string","pattern":"^[A-Z][0-9]+$"},
  "amount":{"type":"number","exclusiveMinimum":0,"maximum":500},
  "address":{"type":"object","properties":{"zip":{"type":"string","minLength":5}},"required":["zip"]},
  "lines":{"type":"array","minItems":1,"items":{"$ref":"#/$defs/line"}},
  "express":{"type":"boolean"},
  "carrier":{"type":"string"}
 },
 "required":["order_id","amount"],
 "dependentRequired":{"express":["carrier"]},
 "additionalProperties":false,
 "$defs":{"line":{"type":"object","properties":{"sku":{"type":"string"}},"required":["sku"]}}}`

// TestSchemaLibrary: arguments are checked against the whole schema by
// the library, and a failure names the argument behind it.
func TestSchemaLibrary(t *testing.T) {
	s, err := parseSchema(json.RawMessage(richSchema))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, args, field, words string
	}{
		{"fits", `{"order_id":"A1","amount":10,"address":{"zip":"10115"},"lines":[{"sku":"x"}],"express":true,"carrier":"dhl"}`, "", ""},
		{"pattern", `{"order_id":"a1","amount":10}`, "order_id", "pattern"},
		{"above the maximum", `{"order_id":"A1","amount":501}`, "amount", "maximum"},
		{"not above the minimum", `{"order_id":"A1","amount":0}`, "amount", "exclusiveMinimum"},
		{"nested object", `{"order_id":"A1","amount":1,"address":{"zip":"1"}}`, "address", "minLength"},
		{"nested required", `{"order_id":"A1","amount":1,"address":{}}`, "address", "zip"},
		{"empty array", `{"order_id":"A1","amount":1,"lines":[]}`, "lines", "minItems"},
		{"array item via $ref", `{"order_id":"A1","amount":1,"lines":[{"qty":1}]}`, "lines", "sku"},
		// A rule across properties: the library's words, naming no one.
		{"across properties", `{"order_id":"A1","amount":1,"express":true}`, "", "carrier"},
		{"wrong type", `{"order_id":"A1","amount":"1"}`, "amount", `must be number, not a string`},
		{"unknown", `{"order_id":"A1","amount":1,"zz":1,"aa":2}`, "aa", "unknown argument"},
		{"required", `{"amount":1}`, "order_id", "is required"},
	} {
		args, prob := s.check(json.RawMessage(tc.args))
		switch {
		case tc.words == "":
			if prob != nil || args == nil {
				t.Errorf("%s: %+v", tc.name, prob)
			}
		case prob == nil:
			t.Errorf("%s: accepted %s", tc.name, tc.args)
		case prob.field != tc.field || !strings.Contains(prob.detail, tc.words):
			t.Errorf("%s: problem %+v, want field %q and words %q", tc.name, prob, tc.field, tc.words)
		}
	}
}

// TestSchemaRefused: a schema the library does not resolve, that is not
// an object schema, or that declares a reserved key is an error at New.
func TestSchemaRefused(t *testing.T) {
	noop := func(context.Context, Invocation) (blackboard.Payload, error) { return nil, nil }
	for _, raw := range []string{
		`[]`, `true`, `{"type":"array"}`, `{"type":["object","null"]}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`,
		`{"type":"object","properties":{"a":{"$ref":"https://example.com/a.json"}}}`,
		`{"type":"object","properties":{"a":{"pattern":"("}}}`,
		`{"type":"object","properties":{"type":{"type":"string"}}}`,
		`{"type":"object","properties":{"requires_beliefs":{}}}`,
		`{"type":"object",`,
	} {
		g, err := New(context.Background(), Config{Tools: []Tool{{Unscoped: true, Name: "a", Parameters: json.RawMessage(raw), Effect: noop}}})
		if !errors.Is(err, blackboard.ErrInvalidInput) {
			t.Errorf("%s: %v, want blackboard.ErrInvalidInput", raw, err)
		}
		if g != nil {
			g.Close()
		}
	}
}

// TestSchemaCallRefused: through the gate, an argument out of its bounds
// is INVALID_ARGUMENTS before the kernel, with a hint and a record naming
// it; in bounds, the call runs.
func TestSchemaCallRefused(t *testing.T) {
	ran := 0
	g, err := New(context.Background(), Config{
		Tools: []Tool{{Unscoped: true, Name: "ship", Parameters: json.RawMessage(richSchema),
			Effect: func(context.Context, Invocation) (blackboard.Payload, error) { ran++; return blackboard.Payload{}, nil }}},
		Contracts: map[string][]string{"support": {"ship"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	res := callGate(t, g, "t", "ship", `{"order_id":"A1","amount":900}`)
	if res.Code != reason.InvalidArguments || !strings.Contains(res.Hint, `"amount"`) || ran != 0 {
		t.Fatalf("%+v (ran %d)", res, ran)
	}
	var rec audit.Entry
	for d, err := range audit.List(context.Background(), g.Kernel().Reader(), audit.Query{TraceID: "t"}) {
		if err != nil {
			t.Fatal(err)
		}
		rec = d
	}
	if rec.Code != reason.InvalidArguments || rec.Context["argument"] != "amount" {
		t.Errorf("record %+v", rec)
	}
	if res := callGate(t, g, "t", "ship", `{"order_id":"A1","amount":90}`); res.Code != reason.EffectSucceeded || ran != 1 {
		t.Errorf("%+v (ran %d)", res, ran)
	}
}

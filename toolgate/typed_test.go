package toolgate

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/kernel"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/blackboardkernel/bk/blackboard"
)

type shipArgs struct {
	OrderID string   `json:"order_id" jsonschema:"the order to ship"`
	Items   []item   `json:"items"`
	Express bool     `json:"express,omitempty"`
	Notes   []string `json:"notes,omitempty"`
}

type item struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

type shipment struct {
	ID    string `json:"id"`
	Count int    `json:"count"`
	Items []item `json:"items"`
}

// TestFuncSchema: the parameters come from Args: json names, required
// unless omitempty, no other property, descriptions from jsonschema tags,
// nested objects and arrays; and the gate holds calls to them.
func TestFuncSchema(t *testing.T) {
	tool := Func(Tool{Unscoped: true, Name: "ship", Description: "Ship an order."},
		func(_ context.Context, _ Invocation, a shipArgs) (shipment, error) { return shipment{}, nil })
	var doc struct {
		Type       string                     `json:"type"`
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
		Additional *bool                      `json:"additionalProperties"`
	}
	if err := json.Unmarshal(tool.Parameters, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Type != "object" || !reflect.DeepEqual(doc.Required, []string{"order_id", "items"}) || doc.Additional == nil || *doc.Additional {
		t.Errorf("schema %s", tool.Parameters)
	}
	if !strings.Contains(string(doc.Properties["order_id"]), `"description":"the order to ship"`) {
		t.Errorf("order_id %s has no description", doc.Properties["order_id"])
	}
	s, err := parseSchema(tool.Parameters)
	if err != nil {
		t.Fatal(err)
	}
	checkArgs(t, s, []argCase{
		{`{"order_id":"A1","items":[{"sku":"x","qty":2}]}`, ""},
		{`{"order_id":"A1","items":[{"sku":"x","qty":2.5}]}`, "items"},
		{`{"order_id":"A1","items":[{"sku":"x"}]}`, "items"},
		{`{"order_id":"A1","items":{}}`, "items"},
		{`{"order_id":"A1"}`, "items"},
		{`{"order_id":"A1","items":[],"gift":true}`, "gift"},
	})
}

// TestFuncEffect: the effect gets the committed arguments decoded into
// Args and its Out becomes the payload; its error passes through as it
// is, retryable or not.
func TestFuncEffect(t *testing.T) {
	fail := errors.New("carrier down")
	var got shipArgs
	tool := Func(Tool{Unscoped: true, Name: "ship"}, func(_ context.Context, inv Invocation, a shipArgs) (shipment, error) {
		got = a
		if a.OrderID == "down" {
			return shipment{}, Retryable(fail)
		}
		return shipment{ID: "s-" + a.OrderID + inv.Key, Count: len(a.Items), Items: a.Items}, nil
	})
	args := blackboard.Payload{"order_id": "A1", "items": []any{map[string]any{"sku": "x", "qty": 2.0}}, "express": true}
	out, err := tool.Effect(context.Background(), Invocation{Key: "k", Tool: "ship", Args: args})
	if err != nil {
		t.Fatal(err)
	}
	want := shipArgs{OrderID: "A1", Items: []item{{"x", 2}}, Express: true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("args %+v, want %+v", got, want)
	}
	if !reflect.DeepEqual(map[string]any(out), map[string]any{"id": "s-A1k", "count": 1.0, "items": []any{map[string]any{"sku": "x", "qty": 2.0}}}) {
		t.Errorf("output %v", out)
	}
	_, err = tool.Effect(context.Background(), Invocation{Tool: "ship", Args: blackboard.Payload{"order_id": "down", "items": []any{}}})
	if !errors.Is(err, fail) || !isRetryable(err) {
		t.Errorf("error %v, want the effect's, retryable", err)
	}
	// A nil map is an empty result, not null.
	empty := Func(Tool{Unscoped: true, Name: "e"}, func(context.Context, Invocation, struct{}) (map[string]any, error) { return nil, nil })
	if out, err := empty.Effect(context.Background(), Invocation{}); err != nil || out == nil || len(out) != 0 {
		t.Errorf("nil output: %v %v", out, err)
	}
}

// TestFuncInvalid: what Func cannot define, New refuses (blackboard.ErrInvalidInput)
// naming the tool.
func TestFuncInvalid(t *testing.T) {
	type withChan struct {
		C chan int `json:"c"`
	}
	ok := func(context.Context, Invocation, shipArgs) (shipment, error) { return shipment{}, nil }
	for _, tc := range []struct {
		name string
		tool Tool
	}{
		{"args not a struct", Func(Tool{Unscoped: true, Name: "a"}, func(context.Context, Invocation, string) (shipment, error) { return shipment{}, nil })},
		{"args with a channel", Func(Tool{Unscoped: true, Name: "a"}, func(context.Context, Invocation, withChan) (shipment, error) { return shipment{}, nil })},
		{"output not an object", Func(Tool{Unscoped: true, Name: "a"}, func(context.Context, Invocation, shipArgs) ([]string, error) { return nil, nil })},
		{"parameters given", Func(Tool{Unscoped: true, Name: "a", Parameters: json.RawMessage(`{}`)}, ok)},
		{"effect given", Func(Tool{Unscoped: true, Name: "a", Effect: func(context.Context, Invocation) (blackboard.Payload, error) { return nil, nil }}, ok)},
		{"no effect", Func[shipArgs, shipment](Tool{Unscoped: true, Name: "a"}, nil)},
		{"once-key on no argument", Func(Tool{Unscoped: true, Name: "a", Requires: []string{"b"}, Unbound: true, Once: &kernel.OnceKey{Fields: []string{"orderid"}}}, ok)},
	} {
		g, err := New(context.Background(), Config{Tools: []Tool{tc.tool}})
		if !errors.Is(err, blackboard.ErrInvalidInput) || !strings.Contains(err.Error(), `"a"`) {
			t.Errorf("%s: %v, want blackboard.ErrInvalidInput naming the tool", tc.name, err)
		}
		if g != nil {
			g.Close()
		}
	}
	// The once-key on a declared argument is accepted.
	g, err := New(context.Background(), Config{Kernel: kernel.Config{BeliefSpecs: []kernel.BeliefSpec{{Kind: "b", DependsOn: []string{"p"}}}},
		Tools: []Tool{Func(Tool{Unscoped: true, Name: "a", Requires: []string{"b"}, Unbound: true, Once: &kernel.OnceKey{Fields: []string{"order_id"}}}, ok)}})
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
}

// refundReason is an argument type that states its own schema: an enum.
type refundReason string

func (refundReason) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Enum: []any{"late", "damaged"}}
}

type returnArgs struct {
	OrderID string         `json:"order_id"`
	Reason  refundReason   `json:"reason"`
	Also    []refundReason `json:"also,omitempty"`
}

// TestFuncSchemer: a field whose type has a JSONSchema method gets the schema the
// type states, wherever the type appears (a field, a list's items), and
// the gate holds calls to it: a value outside the enum is refused, naming
// the argument.
func TestFuncSchemer(t *testing.T) {
	tool := Func(Tool{Unscoped: true, Name: "return_order", Description: "Take an order back."},
		func(_ context.Context, _ Invocation, a returnArgs) (shipment, error) { return shipment{}, nil })
	if !strings.Contains(string(tool.Parameters), `"reason":{"type":"string","enum":["late","damaged"]}`) {
		t.Errorf("refundReason's schema is not the stated one: %s", tool.Parameters)
	}
	s, err := parseSchema(tool.Parameters)
	if err != nil {
		t.Fatal(err)
	}
	checkArgs(t, s, []argCase{
		{`{"order_id":"A1","reason":"late"}`, ""},
		{`{"order_id":"A1","reason":"bored"}`, "reason"},
		{`{"order_id":"A1","reason":"late","also":["damaged"]}`, ""},
		{`{"order_id":"A1","reason":"late","also":["bored"]}`, "also"},
	})
}

// argCase is a call's arguments and the argument a check must blame ("":
// none).
type argCase struct{ args, field string }

// checkArgs checks each case's arguments against s.
func checkArgs(t *testing.T, s *schema, cases []argCase) {
	t.Helper()
	for _, tc := range cases {
		_, prob := s.check(json.RawMessage(tc.args))
		switch {
		case tc.field == "" && prob != nil:
			t.Errorf("%s: %+v", tc.args, prob)
		case tc.field != "" && (prob == nil || prob.field != tc.field):
			t.Errorf("%s: %+v, want a problem with %q", tc.args, prob, tc.field)
		}
	}
}

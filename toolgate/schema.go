package toolgate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
)

// reservedArgs are payload keys the kernel reads on an action: an argument
// of that name would let the model choose the action's grounding, its type
// or a flag the kernel derives.
var reservedArgs = []string{
	kernel.KeyRequiresBeliefs, kernel.KeyRequirePrediction, kernel.KeyType,
	kernel.KeyUsesStaleData, kernel.KeyUsesConflictedData, kernel.KeyUsesLowConfidenceData, kernel.KeyHasNegativePrediction,
}

// argsOf returns the arguments of a committed action's payload: the
// payload without the keys the kernel reads or derives (the same keys
// [ArgsDigest] leaves out). The copy is shallow: nested objects and lists
// are p's, so neither may be changed while the other is in use.
func argsOf(p blackboard.Payload) blackboard.Payload {
	out := make(blackboard.Payload, len(p))
	for key, v := range p {
		if !slices.Contains(reservedArgs, key) {
			out[key] = v
		}
	}
	return out
}

// jsonTypes are the type names a schema may use.
var jsonTypes = []string{"string", "number", "integer", "boolean", "object", "array", "null"}

// schema is the part of a tool's parameters schema the gate checks.
type schema struct {
	props    map[string]property
	required []string
	closed   bool // additionalProperties: false
}

type property struct {
	types []string // empty: any type
	enum  []any    // nil: any value
}

// defaultParameters is the schema of a tool that declares none.
var defaultParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// parseSchema reads a parameters schema. It must be a JSON object of type
// object (or no type); properties, when present, an object of schemas;
// required a list of declared property names.
func parseSchema(raw json.RawMessage) (*schema, error) {
	var doc struct {
		Type                 any                        `json:"type"`
		Properties           map[string]json.RawMessage `json:"properties"`
		Required             []string                   `json:"required"`
		AdditionalProperties any                        `json:"additionalProperties"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("parameters are not a JSON Schema object: %v", err)
	}
	if doc.Type != nil && doc.Type != any("object") {
		return nil, fmt.Errorf("parameters must have type object, not %v", doc.Type)
	}
	s := &schema{props: make(map[string]property, len(doc.Properties)), required: doc.Required}
	if b, ok := doc.AdditionalProperties.(bool); ok && !b {
		s.closed = true
	}
	for name, rawProp := range doc.Properties {
		if slices.Contains(reservedArgs, name) {
			return nil, fmt.Errorf("property %q is a key the kernel reserves", name)
		}
		var p struct {
			Type any   `json:"type"`
			Enum []any `json:"enum"`
		}
		if err := json.Unmarshal(rawProp, &p); err != nil {
			return nil, fmt.Errorf("property %q: %v", name, err)
		}
		var prop property
		switch t := p.Type.(type) {
		case nil:
		case string:
			prop.types = []string{t}
		case []any:
			for _, e := range t {
				tn, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("property %q: type list holds %v", name, e)
				}
				prop.types = append(prop.types, tn)
			}
		default:
			return nil, fmt.Errorf("property %q: type is %v", name, p.Type)
		}
		for _, t := range prop.types {
			if !slices.Contains(jsonTypes, t) {
				return nil, fmt.Errorf("property %q: unknown type %q", name, t)
			}
		}
		if p.Enum != nil {
			prop.enum = p.Enum
		}
		s.props[name] = prop
	}
	for _, r := range s.required {
		if _, ok := s.props[r]; !ok {
			return nil, fmt.Errorf("required property %q is not declared", r)
		}
	}
	return s, nil
}

// argProblem says what is wrong with a call's arguments, naming the field.
type argProblem struct {
	field  string // empty when the arguments as a whole are wrong
	detail string
}

// check parses raw arguments and checks them against the schema. Empty
// arguments are an empty object (some frameworks send "" for a call with
// no arguments).
func (s *schema) check(raw json.RawMessage) (blackboard.Payload, *argProblem) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	var v any
	// One JSON value with nothing after it, the common case, needs no
	// decoder; anything else gets the decoder's reading and its words.
	if json.Unmarshal(raw, &v) != nil {
		v = nil
		dec := json.NewDecoder(bytes.NewReader(raw))
		if err := dec.Decode(&v); err != nil {
			return nil, &argProblem{detail: "the arguments are not valid JSON: " + err.Error()}
		}
		if dec.More() {
			return nil, &argProblem{detail: "the arguments hold more than one JSON value"}
		}
	}
	args, ok := v.(map[string]any)
	if !ok {
		return nil, &argProblem{detail: "the arguments must be a JSON object"}
	}
	keys := make([]string, 0, len(args))
	for key := range args {
		keys = append(keys, key)
	}
	sort.Strings(keys) // report problems in a stable order
	for _, key := range keys {
		if slices.Contains(reservedArgs, key) {
			return nil, &argProblem{key, fmt.Sprintf("argument %q is not allowed (the name is reserved)", key)}
		}
		prop, declared := s.props[key]
		if !declared {
			if s.closed {
				return nil, &argProblem{key, fmt.Sprintf("unknown argument %q", key)}
			}
			continue
		}
		if len(prop.types) > 0 && !slices.ContainsFunc(prop.types, func(t string) bool { return hasType(args[key], t) }) {
			return nil, &argProblem{key, fmt.Sprintf("argument %q must be %s, not %s", key, strings.Join(prop.types, " or "), typeOf(args[key]))}
		}
		if prop.enum != nil && !slices.ContainsFunc(prop.enum, func(e any) bool { return reflect.DeepEqual(e, args[key]) }) {
			allowed, _ := json.Marshal(prop.enum)
			return nil, &argProblem{key, fmt.Sprintf("argument %q must be one of %s", key, allowed)}
		}
	}
	for _, r := range s.required {
		if _, ok := args[r]; !ok {
			return nil, &argProblem{r, fmt.Sprintf("argument %q is required", r)}
		}
	}
	return blackboard.Payload(args), nil
}

// hasType reports whether a decoded JSON value has the JSON Schema type t.
func hasType(v any, t string) bool {
	switch t {
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f)
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "null":
		return v == nil
	}
	return false
}

// typeOf names the JSON type of a decoded value.
func typeOf(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

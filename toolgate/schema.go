package toolgate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

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

// schema is a tool's compiled parameters schema: the whole, resolved by
// github.com/google/jsonschema-go, which decides whether arguments fit,
// and what the gate reads of its top level to name a failing argument and
// to expose properties to approval rules and bindings.
type schema struct {
	whole *jsonschema.Resolved
	// props are the declared top-level properties; each maps to its own
	// schema resolved alone, or nil when it cannot be (a $ref into the
	// root): it serves only to name the argument that fails.
	props    map[string]*jsonschema.Resolved
	required []string
	closed   bool // additionalProperties: false, no patternProperties
}

// jsonTypes are the type names a schema may use.
var jsonTypes = []string{"string", "number", "integer", "boolean", "object", "array", "null"}

// defaultParameters is the schema of a tool that declares none.
var defaultParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// parseSchema reads and resolves a parameters schema. Any JSON Schema the
// library resolves is accepted, as long as it is an object schema (type
// object, or no type) whose top level declares no property under a key
// the kernel reserves, gives its properties known type names and declares
// what it requires. A remote $ref does not resolve: the gate loads nothing.
func parseSchema(raw json.RawMessage) (*schema, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return nil, errors.New("parameters are not a JSON Schema object")
	}
	var doc jsonschema.Schema
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("parameters are not a JSON Schema object: %v", err)
	}
	switch {
	case doc.Type == "object", doc.Type == "" && doc.Types == nil:
	case doc.Type == "" && len(doc.Types) == 1 && doc.Types[0] == "object":
	default:
		return nil, fmt.Errorf("parameters must have type object, not %s", typeNames(doc.Type, doc.Types))
	}
	for name, p := range doc.Properties {
		if slices.Contains(reservedArgs, name) {
			return nil, fmt.Errorf("property %q is a key the kernel reserves", name)
		}
		// The library does not check type names; a misspelt one would
		// refuse every call.
		for _, t := range append([]string{p.Type}, p.Types...) {
			if t != "" && !slices.Contains(jsonTypes, t) {
				return nil, fmt.Errorf("property %q: unknown type %q", name, t)
			}
		}
	}
	for _, r := range doc.Required {
		if _, ok := doc.Properties[r]; !ok {
			// Valid JSON Schema, but at the top level a mistake: the model
			// is never told what the argument is.
			return nil, fmt.Errorf("required property %q is not declared", r)
		}
	}
	whole, err := doc.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("parameters do not resolve as a JSON Schema: %v", err)
	}
	s := &schema{whole: whole, props: make(map[string]*jsonschema.Resolved, len(doc.Properties)), required: doc.Required}
	s.closed = len(doc.PatternProperties) == 0 && isFalse(doc.AdditionalProperties)
	for name := range doc.Properties {
		s.props[name] = resolveAlone(&doc, name)
	}
	return s, nil
}

// resolveAlone resolves the root's property name as a schema of its own,
// with the root's definitions, so that a $ref into $defs still resolves;
// nil when it does not (a $ref to elsewhere in the root). It works on a
// copy: the library forbids changing a schema once resolved.
func resolveAlone(root *jsonschema.Schema, name string) *jsonschema.Resolved {
	c := root.CloneSchemas()
	sub := c.Properties[name]
	if sub == nil {
		return nil
	}
	if sub.Defs == nil && sub.Definitions == nil {
		sub.Defs, sub.Definitions = c.Defs, c.Definitions
	}
	if sub.Schema == "" {
		sub.Schema = c.Schema // the same draft as the whole
	}
	alone, err := sub.Resolve(nil)
	if err != nil {
		return nil
	}
	return alone
}

// isFalse reports whether a subschema is the false schema, which the
// library reads as {"not": {}}.
func isFalse(s *jsonschema.Schema) bool {
	if s == nil {
		return false
	}
	b, err := json.Marshal(s)
	return err == nil && (string(b) == "false" || string(b) == `{"not":{}}`)
}

// typeNames shows a schema's type or types.
func typeNames(t string, ts []string) string {
	if t != "" {
		return strconv.Quote(t)
	}
	return fmt.Sprintf("%q", ts)
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
	for _, key := range sortedReserved { // the first by name: a stable report
		if _, ok := args[key]; ok {
			return nil, &argProblem{key, fmt.Sprintf("argument %q is not allowed (the name is reserved)", key)}
		}
	}
	err := s.whole.Validate(args)
	if mutSchemaCheck {
		err = nil
	}
	if err == nil {
		return blackboard.Payload(args), nil
	}
	return nil, s.blame(args, slices.Sorted(maps.Keys(args)), err)
}

// sortedReserved are the reserved keys in name order.
var sortedReserved = slices.Sorted(slices.Values(reservedArgs))

// blame names the argument behind a failed validation: the first
// undeclared one (by name) when the schema is closed, else the first
// declared one that fails its own schema, else the first required one
// missing. When none does (a rule across properties: allOf, dependencies,
// minProperties), the problem is the whole's, in the library's words.
func (s *schema) blame(args map[string]any, keys []string, err error) *argProblem {
	for _, key := range keys {
		alone, declared := s.props[key]
		switch {
		case !declared && s.closed:
			return &argProblem{key, fmt.Sprintf("unknown argument %q", key)}
		case alone != nil:
			if e := alone.Validate(args[key]); e != nil {
				return &argProblem{key, describe(key, args[key], alone.Schema(), e)}
			}
		}
	}
	for _, r := range s.required {
		if _, ok := args[r]; !ok {
			return &argProblem{r, fmt.Sprintf("argument %q is required", r)}
		}
	}
	return &argProblem{detail: "the arguments do not fit the schema: " + innermost(err)}
}

// innermost is the library's words for what failed, without the chain of
// "validating <schema>" it wraps them in.
func innermost(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// describe words an argument's failure: a wrong JSON type or a value
// outside the enum as a model best reads it (the words the gate has always
// used), anything else in the library's words.
func describe(key string, v any, sch *jsonschema.Schema, err error) string {
	types := sch.Types
	if sch.Type != "" {
		types = []string{sch.Type}
	}
	if len(types) > 0 && !slices.ContainsFunc(types, func(t string) bool { return hasType(v, t) }) {
		return fmt.Sprintf("argument %q must be %s, not %s", key, strings.Join(types, " or "), typeOf(v))
	}
	if sch.Enum != nil && !slices.ContainsFunc(sch.Enum, func(e any) bool { return jsonschema.Equal(e, v) }) {
		allowed, _ := json.Marshal(sch.Enum)
		return fmt.Sprintf("argument %q must be one of %s", key, allowed)
	}
	return fmt.Sprintf("argument %q: %s", key, innermost(err))
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

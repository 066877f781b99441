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
)

// reservedArgs are payload keys the kernel reads on an action: an argument
// of that name would let the model choose the action's grounding, its type
// or a flag the kernel derives.
var reservedArgs = []string{
	"requires_beliefs", "require_prediction", "type",
	"uses_stale_data", "uses_conflicted_data", "uses_low_confidence_data", "has_negative_prediction",
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
			return nil, &argProblem{detail: notJSON(err)}
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
	if !schemaChecked() {
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
	if rule := brokenRule(s.whole.Schema(), args); rule != "" {
		return &argProblem{detail: "the arguments break the schema's rule " + rule}
	}
	return &argProblem{detail: "the arguments do not fit the schema"}
}

// notJSON words arguments that do not parse: where, never what (the
// decoder's words quote the offending text).
func notJSON(err error) string {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return fmt.Sprintf("the arguments are not valid JSON (at byte %d)", se.Offset)
	}
	return "the arguments are not valid JSON"
}

// describe words an argument's failure, naming the argument and the rule
// it broke, never its value: the library's words quote the value, and a
// refusal's words go into its decision record and back to the model. A
// wrong JSON type or a value outside the enum is worded as a model best
// reads it; any other failure names the schema keyword that refuses the
// value ([brokenRule]).
func describe(key string, v any, sch *jsonschema.Schema, err error) string {
	if !schemaNoValue() {
		return fmt.Sprintf("argument %q: %v", key, err)
	}
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
	if rule := brokenRule(sch, v); rule != "" {
		return fmt.Sprintf("argument %q breaks its rule %s", key, rule)
	}
	return fmt.Sprintf("argument %q does not fit its schema", key)
}

// Keywords a schema keyword needs beside it to mean what it means, and
// keywords that only annotate.
var (
	ruleCompanions = map[string][]string{
		"additionalProperties": {"properties", "patternProperties"},
		"additionalItems":      {"items"},
		"items":                {"prefixItems"},
		"if":                   {"then", "else"},
		"then":                 {"if"},
		"else":                 {"if"},
		"minContains":          {"contains"},
		"maxContains":          {"contains"},
	}
	ruleAnnotations = []string{"$schema", "$id", "$anchor", "$dynamicAnchor", "$comment", "$defs", "definitions",
		"$vocabulary", "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"}
)

// maxRuleValue bounds the part of a rule's value a refusal quotes.
const maxRuleValue = 120

// maxRuleDepth bounds how deep brokenRule follows properties and items.
const maxRuleDepth = 8

// brokenRule names the first keyword of sch, in name order, that refuses
// v on its own (with the keywords it needs beside it, [ruleCompanions],
// and the root's definitions, so that a $ref resolves): the keyword
// quoted, with its value when that is short, and, when it is a declared
// property's or an item's schema that refuses, where ("at /zip",
// "at /lines/0"), found the same way. What it quotes comes from the
// schema, the tool's published policy, and v's shape (a declared
// property, a position), never from v's values. It is "" when no keyword
// refuses v alone (a rule across keywords, such as
// unevaluatedProperties).
func brokenRule(sch *jsonschema.Schema, v any) string {
	if sch == nil {
		return ""
	}
	b, err := json.Marshal(sch)
	if err != nil {
		return ""
	}
	var doc map[string]any
	if json.Unmarshal(b, &doc) != nil {
		return ""
	}
	defs := map[string]any{}
	for _, c := range []string{"$schema", "$defs", "definitions"} {
		if x, ok := doc[c]; ok {
			defs[c] = x
		}
	}
	rule, at := findRule(doc, defs, v, 0)
	if rule == "" || at == "" {
		return rule
	}
	return rule + " at " + at
}

// findRule is brokenRule over a schema's JSON doc, with the root's
// definitions defs: the rule, and the path below v where it broke.
func findRule(doc, defs map[string]any, v any, depth int) (rule, at string) {
	for _, kw := range slices.Sorted(maps.Keys(doc)) {
		if slices.Contains(ruleAnnotations, kw) {
			continue
		}
		part := map[string]any{kw: doc[kw]}
		for _, c := range ruleCompanions[kw] {
			if x, ok := doc[c]; ok {
				part[c] = x
			}
		}
		if !refuses(part, defs, v) {
			continue
		}
		if depth < maxRuleDepth {
			if r, a := findBelow(kw, doc[kw], defs, v, depth); r != "" {
				return r, a
			}
		}
		return ruleText(kw, doc[kw]), ""
	}
	return "", ""
}

// findBelow looks for the rule that broke inside a keyword that refuses
// v: a $ref into the root's definitions, the first declared property (by
// name) or the first item that its own schema refuses.
func findBelow(kw string, val any, defs map[string]any, v any, depth int) (rule, at string) {
	switch kw {
	case "$ref":
		// A definition of the root's: the rule inside it, at v itself.
		ref, _ := val.(string)
		for _, c := range []string{"$defs", "definitions"} {
			if name, ok := strings.CutPrefix(ref, "#/"+c+"/"); ok {
				all, _ := defs[c].(map[string]any)
				if sub, isDoc := all[name].(map[string]any); isDoc {
					return findRule(sub, defs, v, depth+1)
				}
			}
		}
	case "properties":
		props, _ := val.(map[string]any)
		obj, _ := v.(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(props)) {
			x, present := obj[name]
			sub, isDoc := props[name].(map[string]any)
			if !present || !isDoc || !refuses(sub, defs, x) {
				continue
			}
			r, a := findRule(sub, defs, x, depth+1)
			if r == "" {
				return "", ""
			}
			return r, "/" + pointerToken(name) + a
		}
	case "items":
		sub, isDoc := val.(map[string]any)
		arr, _ := v.([]any)
		for i, x := range arr {
			if !isDoc || !refuses(sub, defs, x) {
				continue
			}
			r, a := findRule(sub, defs, x, depth+1)
			if r == "" {
				return "", ""
			}
			return r, "/" + strconv.Itoa(i) + a
		}
	}
	return "", ""
}

// refuses reports whether the schema doc, with the root's definitions,
// resolves and refuses v.
func refuses(doc, defs map[string]any, v any) bool {
	whole := make(map[string]any, len(doc)+len(defs))
	maps.Copy(whole, doc)
	for k, x := range defs {
		if _, own := whole[k]; !own {
			whole[k] = x
		}
	}
	b, err := json.Marshal(whole)
	if err != nil {
		return false
	}
	var s jsonschema.Schema
	if json.Unmarshal(b, &s) != nil {
		return false
	}
	r, err := s.Resolve(nil)
	return err == nil && r.Validate(v) != nil
}

// pointerToken escapes a property name as a JSON Pointer token.
func pointerToken(name string) string {
	return strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
}

// ruleText quotes a keyword, and its value (from the schema) when its
// JSON is short.
func ruleText(kw string, val any) string {
	if b, err := json.Marshal(val); err == nil && len(b) <= maxRuleValue {
		return fmt.Sprintf("%q (%s)", kw, b)
	}
	return strconv.Quote(kw)
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

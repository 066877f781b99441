package failure

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Expect is what a caller needs from a tool result for the call to count as
// a success. Paths name fields from the root of the result, with dots
// between map keys ("data.patients"); a segment ending in "[]" names a
// list, and the rest of the path then applies to each of its elements
// ("data.patients[].id"). Keys that contain a dot cannot be named.
//
// The zero Expect asks for nothing beyond the result's own signals.
type Expect struct {
	// Data is the path of the data the call fetches; "" is the whole
	// result.
	Data string
	// NonEmpty says data is expected: a result whose Data is absent or
	// empty is a silent partial fetch.
	NonEmpty bool
	// Required are paths that must be present and not empty. A path
	// through a list requires every element to have the field, and a path
	// ending in "[]" requires a list with at least one element.
	Required []string
	// PerResource is the path of the per-resource outcomes of a call that
	// touched several resources: a list of outcome objects, or a map from
	// resource name to outcome object. "" when the call has none.
	PerResource string
}

// keyResultStatus is the field in which a tool reports its own overall
// status; "partial_error" and "partial_success" there mean that some
// resources failed.
const keyResultStatus = "status"

// maxListed bounds the resources or fields a message names one by one.
const maxListed = 8

// Evaluate decides whether a tool result that came back without error is a
// success. It returns nil, or the [Failure] (as the error) saying what is
// missing, with its status. The checks, in this
// order, the first that fails deciding:
//
//  1. The result's own typed signal ([FromResult]): an execution_status
//     other than SUCCEEDED, or an error with no status (read by the legacy
//     matcher).
//  2. Mixed results, FAILED_INCOMPLETE_FETCH: the result's status field is
//     "partial_error" or "partial_success", or an outcome under
//     PerResource failed. An outcome fails when it is not an object (or is
//     the boolean false), or has "ok" or "success" false, a non-empty
//     "error", or a "status" that is a number of 400 or more or one of
//     "error", "failed", "failure" (in any case). A PerResource path that
//     is absent or is neither a list nor a map is FAILED_SCHEMA_INCOMPLETE.
//  3. Empty where data is expected, FAILED_SILENT_PARTIAL_FETCH: NonEmpty
//     and Data absent or empty. Empty means nil, a blank string, a list of
//     no elements, or a map whose values are all empty; numbers and
//     booleans are never empty.
//  4. Missing fields, FAILED_SCHEMA_INCOMPLETE: a Required path absent or
//     empty.
//
// Maps with string keys and slices of any element type are read, so a
// blackboard.Payload built in Go is read like one decoded from JSON. Evaluate
// never changes the result.
func Evaluate(result map[string]any, want Expect) error {
	if f, ok := FromResult(result); ok {
		return f
	}
	if f, ok := mixed(result, want.PerResource); ok {
		return f
	}
	if want.NonEmpty {
		data, ok := lookup(result, want.Data)
		if !ok || empty(data) {
			where := "the result"
			if want.Data != "" {
				where = want.Data
			}
			f := New(StatusSilentPartialFetch, fmt.Sprintf(
				"no data in %s although data was expected: the operation may not be supported in this form; find the variant that returns data", where))
			return f
		}
	}
	var missing []string
	for _, p := range want.Required {
		missing = missingAt(result, strings.Split(p, "."), "", missing)
	}
	if len(missing) > 0 {
		f := New(StatusSchemaIncomplete, "required fields missing or empty: "+list(missing))
		return f
	}
	return nil
}

// mixed checks the result's self-reported status and its per-resource
// outcomes.
func mixed(result map[string]any, path string) (Failure, bool) {
	self, _ := result[keyResultStatus].(string)
	partial := self == "partial_error" || self == "partial_success"
	var failed []string
	total := 0
	if path != "" {
		outcomes, ok := lookup(result, path)
		names, values, isCollection := collection(outcomes)
		if !ok || !isCollection {
			return New(StatusSchemaIncomplete, fmt.Sprintf("per-resource outcomes missing at %s", path)), true
		}
		total = len(values)
		for i, v := range values {
			if why, bad := outcomeFailed(v); bad {
				failed = append(failed, names[i]+" ("+why+")")
			}
		}
	}
	if !partial && len(failed) == 0 {
		return Failure{}, false
	}
	var msg string
	switch {
	case len(failed) > 0:
		msg = fmt.Sprintf("%d of %d resources failed: %s", len(failed), total, list(failed))
	default:
		msg = fmt.Sprintf("the result reports status %q", self)
	}
	return New(StatusIncompleteFetch, msg+"; the call works for some resources and not for others"), true
}

// collection returns the outcomes of a list (named by an "id", "resource"
// or "name" field, else "#index") or of a map (named by key, in key order).
func collection(v any) (names []string, values []any, ok bool) {
	if elems, isList := elements(v); isList {
		for i, e := range elems {
			name := "#" + strconv.Itoa(i)
			for _, k := range []string{"id", "resource", "name"} {
				if x, has := field(e, k); has && !empty(x) && scalar(x) {
					name = fmt.Sprint(x)
					break
				}
			}
			names = append(names, name)
		}
		return names, elems, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Map || rv.Type().Key().Kind() != reflect.String {
		return nil, nil, false
	}
	keys := make([]string, 0, rv.Len())
	for _, k := range rv.MapKeys() {
		keys = append(keys, k.String())
	}
	sort.Strings(keys)
	for _, k := range keys {
		x, _ := field(v, k)
		values = append(values, x)
	}
	return keys, values, true
}

// outcomeFailed applies the outcome rule of [Evaluate].
func outcomeFailed(v any) (why string, failed bool) {
	if b, isBool := v.(bool); isBool {
		return "false", !b
	}
	if rv := reflect.ValueOf(v); !rv.IsValid() || rv.Kind() != reflect.Map {
		return "unreadable outcome", true
	}
	for _, k := range []string{"ok", "success"} {
		if x, _ := field(v, k); x == false {
			if e, _ := field(v, "error"); !empty(e) {
				return fmt.Sprint(e), true
			}
			return k + "=false", true
		}
	}
	if e, _ := field(v, "error"); !empty(e) {
		return fmt.Sprint(e), true
	}
	if s, has := field(v, "status"); has {
		if n, isNum := number(s); isNum && n >= 400 {
			return "status " + strconv.FormatFloat(n, 'f', -1, 64), true
		}
		if str, isString := s.(string); isString {
			switch strings.ToLower(str) {
			case "error", "failed", "failure":
				return "status " + str, true
			}
		}
	}
	return "", false
}

// missingAt appends to out the Required paths under v that are absent or
// empty, as concrete paths ("patients[2].id").
func missingAt(v any, segs []string, prefix string, out []string) []string {
	seg := segs[0]
	name, each := strings.CutSuffix(seg, "[]")
	here := join(prefix, name)
	child, ok := field(v, name)
	if !ok || (len(segs) == 1 && empty(child)) {
		return append(out, here+suffix(segs[1:], each))
	}
	if !each {
		if len(segs) == 1 {
			return out
		}
		return missingAt(child, segs[1:], here, out)
	}
	elems, isList := elements(child)
	if !isList {
		return append(out, here+"[]"+suffix(segs[1:], false)+" (not a list)")
	}
	if len(segs) == 1 {
		return out // a non-empty list: checked above
	}
	for i, e := range elems {
		out = missingAt(e, segs[1:], here+"["+strconv.Itoa(i)+"]", out)
	}
	return out
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// suffix renders the rest of a path after a segment that failed.
func suffix(rest []string, each bool) string {
	s := ""
	if each {
		s = "[]"
	}
	if len(rest) > 0 {
		s += "." + strings.Join(rest, ".")
	}
	return s
}

// list renders names, at most maxListed of them.
func list(names []string) string {
	if len(names) <= maxListed {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:maxListed], ", ") + fmt.Sprintf(" and %d more", len(names)-maxListed)
}

// lookup follows a dotted path of map keys from v; "" is v itself.
func lookup(v any, path string) (any, bool) {
	if path == "" {
		return v, true
	}
	for _, k := range strings.Split(path, ".") {
		var ok bool
		if v, ok = field(v, k); !ok {
			return nil, false
		}
	}
	return v, true
}

package failure

import (
	"encoding/json"
	"reflect"
	"strings"
)

// Readers of JSON-like values: maps with string keys, slices and numbers,
// whether decoded from JSON or built in Go (a blackboard.Payload, a
// []map[string]any).

// field reads key from a map with string keys.
func field(v any, key string) (any, bool) {
	if m, ok := v.(map[string]any); ok {
		x, has := m[key]
		return x, has
	}
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || rv.Kind() != reflect.Map || rv.Type().Key().Kind() != reflect.String {
		return nil, false
	}
	x := rv.MapIndex(reflect.ValueOf(key).Convert(rv.Type().Key()))
	if !x.IsValid() {
		return nil, false
	}
	return x.Interface(), true
}

// elements returns the elements of a slice or array.
func elements(v any) ([]any, bool) {
	if s, ok := v.([]any); ok {
		return s, true
	}
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || (rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array) {
		return nil, false
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, true
}

// maxDepth bounds how deep empty looks into nested maps; anything deeper
// counts as data.
const maxDepth = 64

// empty reports whether v holds no data: nil, a blank string, an empty
// list, or a map whose values are all empty.
func empty(v any) bool { return emptyAt(v, 0) }

func emptyAt(v any, depth int) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return strings.TrimSpace(x) == ""
	case json.Number:
		return false
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String:
		return strings.TrimSpace(rv.String()) == ""
	case reflect.Slice, reflect.Array:
		return rv.Len() == 0
	case reflect.Map:
		if depth >= maxDepth {
			return false
		}
		it := rv.MapRange()
		for it.Next() {
			if !emptyAt(it.Value().Interface(), depth+1) {
				return false
			}
		}
		return true
	case reflect.Pointer, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// number reads a JSON or Go number.
func number(v any) (float64, bool) {
	if n, ok := v.(json.Number); ok {
		f, err := n.Float64()
		return f, err == nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return float64(rv.Uint()), true
	case reflect.Float32, reflect.Float64:
		return rv.Float(), true
	}
	return 0, false
}

// scalar reports whether v prints as a short name: a string or a number.
func scalar(v any) bool {
	if _, ok := v.(string); ok {
		return true
	}
	_, ok := number(v)
	return ok
}

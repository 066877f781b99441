package jsonval

import (
	"encoding/json"
	"reflect"
)

var objectType = reflect.TypeOf(map[string]any(nil))

// Truthy gives a JSON value the truth value the paper's pipeline uses: false
// for nil, false, zero, "", and empty lists and objects; true otherwise.
func Truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	case []string:
		return len(x) > 0
	}
	if f, ok := Float(v); ok {
		return f != 0
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Map && rv.Type().ConvertibleTo(objectType) {
		return rv.Len() > 0 // a named object type such as blackboard.Payload
	}
	return true
}

// Float converts any Go or JSON number to float64; ok is false for anything
// that is not a number.
func Float(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int8:
		return float64(x), true
	case int16:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint8:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

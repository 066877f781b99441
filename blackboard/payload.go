package blackboard

import (
	"maps"

	"github.com/blackboardkernel/bk/internal/jsonval"
)

// Payload is a record's structured content: a JSON object. The kernel stores
// a normalised copy of what it is given: numbers become float64, slices
// []any, objects map[string]any, so a payload reads back the same from every
// store.
type Payload map[string]any

func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return cloneObject(x)
	case Payload:
		return cloneObject(x)
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = cloneValue(e)
		}
		return l
	}
	return v
}

// cloneObject copies m with maps.Clone, which copies the table as it is
// instead of inserting key by key (about twice as fast), then replaces
// the nested containers with their copies.
func cloneObject(m map[string]any) map[string]any {
	out := maps.Clone(m)
	for k, e := range m {
		if container(e) {
			out[k] = cloneValue(e)
		}
	}
	return out
}

// container reports whether v holds memory a copy must not share.
func container(v any) bool {
	switch v.(type) {
	case map[string]any, Payload, []any:
		return true
	}
	return false
}

// Clone returns a deep copy of p.
func (p Payload) Clone() Payload {
	if p == nil {
		return nil
	}
	return cloneValue(map[string]any(p)).(map[string]any)
}

// Bool reports whether p[key] is truthy: false for a missing key, nil,
// false, zero, "", and empty lists and objects; true otherwise.
func (p Payload) Bool(key string) bool { return jsonval.Truthy(p[key]) }

// Float returns p[key] as a float64 if it is a number.
func (p Payload) Float(key string) (float64, bool) { return jsonval.Float(p[key]) }

// Strings returns p[key] as a list of strings. ok is false when the key is
// present but is not a list of strings.
func (p Payload) Strings(key string) (out []string, ok bool) {
	v, present := p[key]
	if !present || v == nil {
		return nil, true
	}
	switch l := v.(type) {
	case []string:
		return l, true
	case []any:
		out = make([]string, 0, len(l))
		for _, e := range l {
			s, isStr := e.(string)
			if !isStr {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}

package kernel

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"strconv"
	"unicode/utf8"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/jsonval"
)

// Payload keys the kernel itself reads. Everything else in a payload is the
// domain's own and is never interpreted.
const (
	keyValue             = "value"              // belief: its truth value (truthy or not)
	keyDependsOn         = "depends_on"         // belief: percept kinds it rests on
	keySteps             = "steps"              // plan: list of steps
	keyAction            = "action"             // plan step: action type
	keyRequiresBeliefs   = "requires_beliefs"   // plan step, action, prediction: belief kinds
	keyRequirePrediction = "require_prediction" // action: opt into the prediction gate
	keyStale             = "stale"              // percept: flagged stale by its source
	keyConflict          = "conflict"           // percept: sources disagree
	keyLowConfidence     = "low_confidence"     // percept: flagged unreliable by its source
	keyActionType        = "action_type"        // prediction: the action it predicts
	keyExpectedOutcome   = "expected_outcome"   // prediction: a number; negative is harmful
	keyName              = "name"               // constraint: its name
	keyEnabled           = "enabled"            // constraint: whether it is enforced
	keyBlocksField       = "blocks_field"       // constraint: the field that blocks when truthy
	keyBindPercept       = "bind_percept"       // constraint: percept kind whose field is authoritative
	keyAppliesTo         = "applies_to"         // constraint: the action types it guards (absent: all but safe fallbacks)
	keyReason            = "reason"             // fallback action: the code that caused it
	keyType              = "type"               // action: if present, must equal the action's kind

	// Flags the kernel derives for every plan step and action from its own
	// evidence chain. A proposal cannot set them.
	keyUsesStaleData         = "uses_stale_data"
	keyUsesConflictedData    = "uses_conflicted_data"
	keyUsesLowConfidenceData = "uses_low_confidence_data"
	keyHasNegativePrediction = "has_negative_prediction"
)

// keyError names the innermost key under which a payload was refused.
type keyError struct {
	key string
	err error
}

func (e *keyError) Error() string { return fmt.Sprintf("%v (under key %q)", e.err, e.key) }
func (e *keyError) Unwrap() error { return e.err }

// maxDepth bounds nesting; deeper values are refused, which also catches
// cyclic maps and slices.
const maxDepth = 64

// normalizer turns a caller's payload into the kernel's canonical form and
// measures the size of its JSON encoding on the way.
type normalizer struct {
	size  int
	limit int
}

// normalizePayload validates p and returns a normalised deep copy.
func normalizePayload(p blackboard.Payload, limit int) (blackboard.Payload, error) {
	n := normalizer{limit: limit}
	if p == nil {
		return blackboard.Payload{}, nil
	}
	v, err := n.object(p, 0)
	if err != nil {
		return nil, err
	}
	if limit > 0 && n.size > limit {
		return nil, fmt.Errorf("%w: encoded size exceeds %d bytes", ErrPayloadTooLarge, limit)
	}
	return v, nil
}

// grow counts k more bytes of the encoding and fails once they exceed the
// limit. It is small enough to inline at every value; the refusal is
// built out of line.
func (n *normalizer) grow(k int) error {
	n.size += k
	if n.limit > 0 && n.size > n.limit {
		return n.tooLarge()
	}
	return nil
}

func (n *normalizer) tooLarge() error {
	return fmt.Errorf("%w: encoded size exceeds %d bytes", ErrPayloadTooLarge, n.limit)
}

func (n *normalizer) value(v any, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: nested deeper than %d (or cyclic)", blackboard.ErrInvalidPayload, maxDepth)
	}
	switch x := v.(type) {
	case nil:
		return nil, n.grow(4)
	// Values already in canonical form are returned as the interface they
	// came in, which avoids boxing them again.
	case bool:
		return v, n.grow(boolSize(x))
	case string:
		return v, n.str(x, "string")
	case float64:
		if err := n.checkNumber(x); err != nil {
			return nil, err
		}
		return v, nil
	case map[string]any:
		return n.object(x, depth)
	case blackboard.Payload:
		return n.object(x, depth)
	case []any:
		out := make([]any, len(x))
		if err := n.grow(2 + commas(len(x))); err != nil {
			return nil, err
		}
		for i, e := range x {
			c, err := n.value(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case []string:
		out := make([]any, len(x))
		if err := n.grow(2 + commas(len(x))); err != nil {
			return nil, err
		}
		for i, s := range x {
			if err := n.str(s, "string"); err != nil {
				return nil, err
			}
			out[i] = s
		}
		return out, nil
	case json.RawMessage:
		var decoded any
		if err := json.Unmarshal(x, &decoded); err != nil {
			return nil, fmt.Errorf("%w: raw JSON: %v", blackboard.ErrInvalidPayload, err)
		}
		return n.value(decoded, depth)
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return nil, fmt.Errorf("%w: bad number %q", blackboard.ErrInvalidPayload, string(x))
		}
		return n.number(f)
	}
	if f, ok := jsonval.Float(v); ok {
		return n.number(f)
	}
	return n.reflectValue(reflect.ValueOf(v), depth)
}

func (n *normalizer) number(f float64) (any, error) {
	if err := n.checkNumber(f); err != nil {
		return nil, err
	}
	return f, nil
}

// checkNumber refuses non-finite numbers and counts f's encoded size.
func (n *normalizer) checkNumber(f float64) error {
	if !mutFiniteNumbers && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return fmt.Errorf("%w: non-finite number %v", blackboard.ErrInvalidPayload, f)
	}
	return n.grow(jsonNumberSize(f))
}

// jsonNumberSize is the length of f as encoding/json writes a float64.
func jsonNumberSize(f float64) int {
	if size, ok := shortDecimalSize(f); ok {
		return size
	}
	return formattedNumberSize(f)
}

// formattedNumberSize is jsonNumberSize for any f, by formatting it.
func formattedNumberSize(f float64) int {
	var buf [32]byte
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(buf[:0], f, format, -1, 64)
	// encoding/json writes e-07 as e-7.
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		return n - 1
	}
	return len(b)
}

// shortDecimalSize is jsonNumberSize for the common numbers (amounts,
// counts, scores) that are a decimal of at most three fraction digits
// between 1e-3 and 1e12, without formatting them: ok is false for any
// other f. Such a decimal n/10^d is the shortest that reads back as f when
// d is the least that does, and it is written in fixed notation. Below
// 1e12, n is exact and at most one integer is near enough to f*10^d to
// read back, so rounding the product finds it when there is one.
func shortDecimalSize(f float64) (size int, ok bool) {
	a := math.Abs(f)
	if !(a >= 1e-3 && a < 1e12) {
		return 0, false
	}
	if f < 0 {
		size = 1
	}
	scale := 1.0
	for d := range 4 {
		n := math.Round(a * scale)
		if n/scale == a {
			size += decimalDigits(uint64(a))
			if d > 0 {
				size += 1 + d
			}
			return size, true
		}
		scale *= 10
	}
	return 0, false
}

// decimalDigits is the number of digits of u in base 10 (1 for 0).
func decimalDigits(u uint64) int {
	n := 1
	for ; u >= 10; u /= 10 {
		n++
	}
	return n
}

// commas is the number of separators between n elements.
func commas(n int) int { return max(n-1, 0) }

func boolSize(b bool) int {
	if b {
		return len("true")
	}
	return len("false")
}

func (n *normalizer) object(m map[string]any, depth int) (map[string]any, error) {
	if err := n.grow(2 + len(m) + commas(len(m))); err != nil {
		return nil, err
	}
	// Keys and canonical scalars are checked in place, in one pass that
	// notes the other values (nested containers, numbers of other types,
	// ...); the map is then copied whole, which is cheaper than building
	// it anew, and only the noted values are normalised into the copy. The
	// note saves a second pass over the map; most objects need at most a few.
	var buf [4]nested
	rest := buf[:0]
	for k, e := range m {
		if err := n.str(k, "key"); err != nil {
			return nil, err
		}
		// The canonical scalars, which the copy holds as they are.
		var err error
		switch x := e.(type) {
		case nil:
			err = n.grow(4)
		case bool:
			err = n.grow(boolSize(x))
		case string:
			err = n.str(x, "string")
		case float64:
			err = n.checkNumber(x)
		default:
			rest = append(rest, nested{k, e})
			continue
		}
		if err != nil {
			return nil, &keyError{key: k, err: err}
		}
	}
	out := maps.Clone(m)
	for _, r := range rest {
		c, err := n.value(r.v, depth+1)
		if err != nil {
			if errors.As(err, new(*keyError)) {
				return nil, err
			}
			return nil, &keyError{key: r.k, err: err}
		}
		out[r.k] = c
	}
	return out, nil
}

// nested is a value of an object that normalisation may replace.
type nested struct {
	k string
	v any
}

// reflectValue handles the less common shapes: other slice and map types,
// pointers, and structs (through their JSON encoding).
func (n *normalizer) reflectValue(rv reflect.Value, depth int) (any, error) {
	switch rv.Kind() {
	case reflect.Invalid:
		return nil, n.grow(4)
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil, n.grow(4)
		}
		return n.value(rv.Elem().Interface(), depth+1)
	case reflect.Bool:
		return rv.Bool(), n.grow(boolSize(rv.Bool()))
	case reflect.String:
		return n.value(rv.String(), depth)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return n.number(float64(rv.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return n.number(float64(rv.Uint()))
	case reflect.Float32, reflect.Float64:
		return n.number(rv.Float())
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return nil, n.grow(4)
		}
		out := make([]any, rv.Len())
		if err := n.grow(2 + commas(rv.Len())); err != nil {
			return nil, err
		}
		for i := range out {
			c, err := n.value(rv.Index(i).Interface(), depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return nil, fmt.Errorf("%w: map key type %s is not string", blackboard.ErrInvalidPayload, rv.Type().Key())
		}
		if rv.IsNil() {
			return nil, n.grow(4)
		}
		out := make(map[string]any, rv.Len())
		if err := n.grow(2 + rv.Len() + commas(rv.Len())); err != nil {
			return nil, err
		}
		it := rv.MapRange()
		for it.Next() {
			k := it.Key().String()
			if err := n.str(k, "key"); err != nil {
				return nil, err
			}
			c, err := n.value(it.Value().Interface(), depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case reflect.Struct:
		raw, err := json.Marshal(rv.Interface())
		if err != nil {
			return nil, fmt.Errorf("%w: %v", blackboard.ErrInvalidPayload, err)
		}
		return n.value(json.RawMessage(raw), depth+1)
	}
	return nil, fmt.Errorf("%w: %s is not JSON-encodable", blackboard.ErrInvalidPayload, rv.Type())
}

// str refuses a string (or key, as what says) that is not valid UTF-8 and
// counts its encoded size, in one pass over it.
func (n *normalizer) str(s, what string) error {
	size, ok := jsonString(s)
	if !ok {
		return notUTF8(what)
	}
	return n.grow(size)
}

func notUTF8(what string) error {
	return fmt.Errorf("%w: %s is not valid UTF-8", blackboard.ErrInvalidPayload, what)
}

// jsonString returns the length of s encoded as a JSON string by
// encoding/json (HTML-safe escaping) and whether s is valid UTF-8.
func jsonString(s string) (size int, valid bool) {
	size, valid = 2+len(s), true
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			size += int(asciiEscape[c])
			i++
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && w == 1 {
			valid = false
			size += 5 // written as \ufffd
		} else if r == '\u2028' || r == '\u2029' {
			size += 6 - w
		}
		i += w
	}
	return size, valid
}

// asciiEscape is how many bytes encoding/json adds to an ASCII byte: one
// for a two-byte escape (\n, \"), five for a \u00XX one.
var asciiEscape = func() (t [utf8.RuneSelf]uint8) {
	for c := range utf8.RuneSelf {
		switch {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
			t[c] = 1
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			t[c] = 5
		}
	}
	return t
}()

// list returns p[key] as the []any that normalisation makes of every list
// (nil when absent). Internal readers use it where checkShape has already
// checked the element types, to avoid converting to []string.
func list(p blackboard.Payload, key string) []any {
	l, _ := p[key].([]any)
	return l
}

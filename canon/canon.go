package canon

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// ErrInvalid is returned for a value that has no canonical form: a NaN or
// infinite number, a string that is not UTF-8, a map key that is not a
// string, a Go type JSON cannot hold, or raw JSON that is not exactly one
// value or repeats an object key.
var ErrInvalid = errors.New("canon: invalid value")

// appendCanonical appends the canonical JSON of v to dst. v is a JSON-compatible Go
// value: nil, bool, string, any Go number or json.Number, and maps with
// string keys and slices of such values (named types included, such as
// blackboard.Payload).
//
// The canonical form is JSON without insignificant space, object keys in
// byte order, strings as they are (only '"', '\\' and control characters
// escaped) and numbers by their IEEE-754 double value, written the shortest
// way that reads back to it: 2, 2.0, 2e0 and 20e-1 are all "2", and -0 is
// "0". Values are compared as doubles because that is what the kernel keeps
// of a number: two spellings it stores alike must not tell two calls apart.
func appendCanonical(dst []byte, v any) ([]byte, error) {
	return appendValue(dst, v, 0)
}

// Encode returns the canonical JSON of v (see appendCanonical).
func Encode(v any) ([]byte, error) { return appendCanonical(nil, v) }

// Digest returns "sha256:" and the hex SHA-256 of v's canonical JSON: the
// one identity of a value the module uses for approval digests, once-keys
// and the loop guard.
func Digest(v any) (string, error) {
	bp := digestBufs.Get().(*[]byte)
	b, err := appendCanonical((*bp)[:0], v)
	if err != nil {
		return "", err
	}
	d := digestBytes(b)
	if cap(b) <= maxPooledBuf {
		*bp = b
		digestBufs.Put(bp)
	}
	return d, nil
}

// digestBufs holds the buffers Digest encodes into, so that a digest
// costs no buffer of its own; one that grew past maxPooledBuf is dropped.
var digestBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

const maxPooledBuf = 64 << 10

// DigestJSON is [Digest] of raw JSON text. Empty text counts as null. Text
// that is not exactly one JSON value, or an object that repeats a key (which
// readers resolve differently), fails with [ErrInvalid].
func DigestJSON(raw []byte) (string, error) {
	v, err := Decode(raw)
	if err != nil {
		return "", err
	}
	return Digest(v)
}

// Decode parses raw JSON text into Go values (numbers as json.Number), the
// way [DigestJSON] reads it: empty text is null; trailing data, repeated
// object keys and invalid UTF-8 fail with [ErrInvalid].
func Decode(raw []byte) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	if !utf8.Valid(raw) {
		return nil, fmt.Errorf("%w: JSON text is not UTF-8", ErrInvalid)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: JSON text holds more than one value", ErrInvalid)
	}
	return v, nil
}

// maxDepth bounds nesting, so that hostile input cannot exhaust the stack.
const maxDepth = 256

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: nested deeper than %d", ErrInvalid, maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := map[string]any{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
				}
				key := kt.(string) // the decoder yields only strings as keys
				if _, dup := m[key]; dup {
					return nil, fmt.Errorf("%w: object key %q repeated", ErrInvalid, key)
				}
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				m[key] = v
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
			}
			return m, nil
		case '[':
			s := []any{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				s = append(s, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
			}
			return s, nil
		}
		return nil, fmt.Errorf("%w: unexpected %v", ErrInvalid, t)
	default:
		return tok, nil
	}
}

func digestBytes(b []byte) string {
	sum := sha256.Sum256(b)
	var out [len("sha256:") + 2*sha256.Size]byte // on the stack: the string is the one allocation
	copy(out[:], "sha256:")
	hex.Encode(out[len("sha256:"):], sum[:])
	return string(out[:])
}

func appendValue(dst []byte, v any, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: nested deeper than %d", ErrInvalid, maxDepth)
	}
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, x), nil
	case string:
		return appendString(dst, x)
	case float64:
		return appendFloat(dst, x)
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return nil, fmt.Errorf("%w: number %s: %v", ErrInvalid, x, err)
		}
		return appendFloat(dst, f)
	case map[string]any:
		var small [8]string // the keys of a small object, on the stack
		keys := small[:0]
		if len(x) > len(small) {
			keys = make([]string, 0, len(x))
		}
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendString(dst, k); err != nil {
				return nil, err
			}
			dst = append(dst, ':')
			if dst, err = appendValue(dst, x[k], depth+1); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendValue(dst, e, depth+1); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	}
	return appendReflect(dst, reflect.ValueOf(v), depth)
}

// appendReflect handles the types the switch above does not name: other
// Go numbers, named map and slice types, and pointers to any of these.
func appendReflect(dst []byte, rv reflect.Value, depth int) ([]byte, error) {
	v, err := plain(rv)
	if err != nil {
		return nil, err
	}
	return appendValue(dst, v, depth+1)
}

// plain returns the value rv holds as one of the types both forms name
// (float64, string, bool, nil, map[string]any, []any, or what a pointer or
// interface holds): other Go numbers, named map and slice types, pointers.
// A type JSON cannot hold is [ErrInvalid].
func plain(rv reflect.Value) (any, error) {
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return float64(rv.Uint()), nil
	case reflect.Float32, reflect.Float64:
		return rv.Float(), nil
	case reflect.String:
		return rv.String(), nil
	case reflect.Bool:
		return rv.Bool(), nil
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil, nil
		}
		return rv.Elem().Interface(), nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return nil, fmt.Errorf("%w: map key of type %s", ErrInvalid, rv.Type().Key())
		}
		if rv.IsNil() {
			return nil, nil
		}
		m := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			m[it.Key().String()] = it.Value().Interface()
		}
		return m, nil
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return nil, nil
		}
		s := make([]any, rv.Len())
		for i := range s {
			s[i] = rv.Index(i).Interface()
		}
		return s, nil
	}
	return nil, fmt.Errorf("%w: type %s", ErrInvalid, rv.Type())
}

// appendFloat writes f as ECMAScript writes a number (the form
// encoding/json uses), with -0 written as 0.
func appendFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("%w: number %v", ErrInvalid, f)
	}
	if f == 0 {
		return append(dst, '0'), nil // -0 and 0 are one value
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-07 -> e-7, as ECMAScript writes it.
		n := len(dst) - start
		if n >= 4 && dst[len(dst)-4] == 'e' && dst[len(dst)-3] == '-' && dst[len(dst)-2] == '0' {
			dst[len(dst)-2] = dst[len(dst)-1]
			dst = dst[:len(dst)-1]
		}
	}
	return dst, nil
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string, escaping only what JSON
// requires. s must be UTF-8: a replacement character would make two
// strings one.
func appendString(dst []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return nil, fmt.Errorf("%w: string is not UTF-8", ErrInvalid)
	}
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"'), nil
}

package canon

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// AppendBinary appends to dst the canonical form of v (the one [Encode]
// writes as JSON) in a binary framing meant for hashing, not reading:
// each value is a tag byte followed by its content — a string its length
// and bytes, a number the eight bytes of its IEEE-754 double (-0 as 0),
// an object its length and its members in key order, an array its length
// and elements. Two values have the same binary form exactly when they
// have the same canonical JSON, and it is cheaper to make: no number is
// formatted and no string escaped. v is what [Encode] accepts, and what
// Encode refuses is refused here, with [ErrInvalid].
func AppendBinary(dst []byte, v any) ([]byte, error) {
	return appendBin(dst, v, 0)
}

// member is an object's member, gathered to be sorted.
type member struct {
	k string
	v any
}

// The tags of the binary form.
const (
	binNull   = 'n'
	binFalse  = 'f'
	binTrue   = 't'
	binString = 's'
	binNumber = 'd'
	binObject = 'o'
	binArray  = 'a'
)

func appendBin(dst []byte, v any, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: nested deeper than %d", ErrInvalid, maxDepth)
	}
	switch x := v.(type) {
	case nil:
		return append(dst, binNull), nil
	case bool:
		if x {
			return append(dst, binTrue), nil
		}
		return append(dst, binFalse), nil
	case string:
		return appendBinString(dst, x)
	case float64:
		return appendBinFloat(dst, x)
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return nil, fmt.Errorf("%w: number %s: %v", ErrInvalid, x, err)
		}
		return appendBinFloat(dst, f)
	case map[string]any:
		// The members are gathered once, key and value, and sorted by
		// key: no second lookup of each. A small object's stay on the
		// stack.
		var small [16]member
		ms := small[:0]
		if len(x) > len(small) {
			ms = make([]member, 0, len(x))
		}
		for k, v := range x {
			ms = append(ms, member{k, v})
		}
		slices.SortFunc(ms, func(a, b member) int { return strings.Compare(a.k, b.k) })
		dst = binary.AppendUvarint(append(dst, binObject), uint64(len(ms)))
		for _, m := range ms {
			var err error
			if dst, err = appendBinString(dst, m.k); err != nil {
				return nil, err
			}
			if dst, err = appendBin(dst, m.v, depth+1); err != nil {
				return nil, err
			}
		}
		return dst, nil
	case []any:
		dst = binary.AppendUvarint(append(dst, binArray), uint64(len(x)))
		for _, e := range x {
			var err error
			if dst, err = appendBin(dst, e, depth+1); err != nil {
				return nil, err
			}
		}
		return dst, nil
	case []string:
		if x == nil {
			return append(dst, binNull), nil // as JSON writes a nil slice
		}
		dst = binary.AppendUvarint(append(dst, binArray), uint64(len(x)))
		for _, e := range x {
			var err error
			if dst, err = appendBinString(dst, e); err != nil {
				return nil, err
			}
		}
		return dst, nil
	}
	return appendBinReflect(dst, reflect.ValueOf(v), depth)
}

// appendBinReflect handles the types appendBin does not name, as
// appendReflect does for the JSON form.
func appendBinReflect(dst []byte, rv reflect.Value, depth int) ([]byte, error) {
	v, err := plain(rv)
	if err != nil {
		return nil, err
	}
	return appendBin(dst, v, depth+1)
}

func appendBinFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("%w: number %v", ErrInvalid, f)
	}
	if f == 0 {
		f = 0 // -0 and 0 are one value
	}
	return binary.BigEndian.AppendUint64(append(dst, binNumber), math.Float64bits(f)), nil
}

func appendBinString(dst []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return nil, fmt.Errorf("%w: string is not UTF-8", ErrInvalid)
	}
	dst = binary.AppendUvarint(append(dst, binString), uint64(len(s)))
	return append(dst, s...), nil
}

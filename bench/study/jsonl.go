package study

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/blackboardkernel/bk/blackboard"
)

// The JSON lines are written by hand rather than through encoding/json's
// reflection, which was a quarter of a run's time. The bytes are exactly
// those of a json.Encoder with SetEscapeHTML(false) (TestLinesMatchEncodingJSON
// checks it on every agent's episodes and on random payloads); a value of
// a type this file does not know is handed to encoding/json.

// appendLine appends r's JSON line, newline included.
func appendLine(b []byte, r *Result) ([]byte, error) {
	b = append(b, `{"task_id":`...)
	b = appendString(b, r.TaskID)
	b = append(b, `,"seed":`...)
	b = strconv.AppendInt(b, int64(r.Seed), 10)
	b = append(b, `,"agent":`...)
	b = appendString(b, r.Agent)
	b = append(b, `,"output":`...)
	var err error
	switch o := r.Output.(type) {
	case *KernelOutput:
		b, err = appendKernelOutput(b, o, r.views)
	case *GlueOutput:
		b, err = appendGlueOutput(b, o)
	default:
		b, err = appendReflect(b, o)
	}
	if err != nil {
		return nil, err
	}
	b = append(b, `,"metrics":`...)
	if b, err = r.Metrics.appendJSON(b); err != nil {
		return nil, err
	}
	return append(b, "}\n"...), nil
}

// appendKernelOutput writes o; vm, if not nil, holds the maps of o's view
// when the harness filled it in.
func appendKernelOutput(b []byte, o *KernelOutput, vm *viewMaps) ([]byte, error) {
	if o == nil {
		return append(b, "null"...), nil
	}
	b = append(b, `{"trace_id":`...)
	b = appendString(b, o.TraceID)
	f := &o.Final
	b = append(b, `,"final":{"belief_committed":`...)
	b = strconv.AppendBool(b, f.BeliefCommitted)
	b = append(b, `,"belief_code":`...)
	b = appendString(b, string(f.BeliefCode))
	b = append(b, `,"plan_feasible":`...)
	b = strconv.AppendBool(b, f.PlanFeasible)
	b = append(b, `,"plan_code":`...)
	b = appendString(b, string(f.PlanCode))
	b = append(b, `,"action_committed":`...)
	b = strconv.AppendBool(b, f.ActionCommitted)
	b = append(b, `,"action_code":`...)
	b = appendString(b, string(f.ActionCode))
	b = append(b, `,"safe_action_committed":`...)
	b = strconv.AppendBool(b, f.SafeActionCommitted)
	b = append(b, `,"safe_action_code":`...)
	b = appendString(b, string(f.SafeActionCode))
	b = append(b, `},"view":`...)
	var err error
	if vm.holds(o.View) {
		b, err = vm.appendJSON(b)
	} else {
		b, err = appendView(b, o.View)
	}
	if err != nil {
		return nil, err
	}
	if a := o.Attack; a != nil {
		b = append(b, `,"attack":{"name":`...)
		b = appendString(b, a.Name)
		b = append(b, `,"target":`...)
		b = appendString(b, a.Target)
		b = append(b, `,"attempts":`...)
		if a.Attempts == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '[')
			for i, at := range a.Attempts {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"step":`...)
				b = appendString(b, at.Step)
				if at.Code != "" {
					b = append(b, `,"code":`...)
					b = appendString(b, string(at.Code))
				}
				if at.Accepted {
					b = append(b, `,"accepted":true`...)
				}
				b = append(b, '}')
			}
			b = append(b, ']')
		}
		b = append(b, `,"blocked":`...)
		b = strconv.AppendBool(b, a.Blocked)
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// appendView writes the view's slots in the order encoding/json sorts them:
// by name. The slots are looked up in that order rather than collected
// from the map and sorted.
func appendView(b []byte, v map[blackboard.Slot]map[string]blackboard.Payload) ([]byte, error) {
	if v == nil {
		return append(b, "null"...), nil
	}
	var kinds [len(slotsByName)]map[string]blackboard.Payload
	var in [len(slotsByName)]bool
	n := 0
	for i, s := range slotsByName {
		if kinds[i], in[i] = v[s]; in[i] {
			n++
		}
	}
	if n != len(v) {
		return appendReflect(b, v) // encoding/json reports the bad key
	}
	b = append(b, '{')
	sep := false
	for i, s := range slotsByName {
		if !in[i] {
			continue
		}
		if sep {
			b = append(b, ',')
		}
		sep = true
		b = appendString(b, string(s))
		b = append(b, ':')
		var err error
		if b, err = appendMap(b, kinds[i], appendPayload); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// holds reports whether v is the view vm's maps make up, every slot of it
// noted in vm.bySlot; vm may be nil.
func (vm *viewMaps) holds(v map[blackboard.Slot]map[string]blackboard.Payload) bool {
	if vm == nil || v == nil || reflect.ValueOf(v).UnsafePointer() != reflect.ValueOf(vm.slots).UnsafePointer() {
		return false
	}
	n := 0
	for i := range vm.bySlot {
		if vm.bySlot[i].kinds != nil {
			n++
		}
	}
	return n == len(v)
}

// appendJSON writes vm's view as appendView does, from vm.bySlot: without
// hashing the slots, and without iterating a slot's map when it holds one
// kind, the last one put in it.
func (vm *viewMaps) appendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	sep := false
	for i := range slotsByName {
		sv := &vm.bySlot[i]
		if sv.kinds == nil {
			continue
		}
		if sep {
			b = append(b, ',')
		}
		sep = true
		b = append(b, slotKeys[i]...)
		var err error
		if len(sv.kinds) == 1 {
			b = append(appendString(append(b, '{'), sv.kind), ':')
			b, err = appendObject(b, sv.payload)
			b = append(b, '}')
		} else {
			b, err = appendMap(b, sv.kinds, appendPayload)
		}
		if err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// slotKeys are slotsByName's names as JSON keys, colon included.
var slotKeys = func() (k [len(slotsByName)]string) {
	for i, s := range slotsByName {
		k[i] = string(appendString(nil, string(s))) + ":"
	}
	return k
}()

// slotsByName are the valid slots, sorted by name.
var slotsByName = func() (s [7]blackboard.Slot) {
	copy(s[:], blackboard.AllSlots())
	slices.Sort(s[:])
	return s
}()

// slotIndex returns s's index in slotsByName, or -1 for an invalid slot.
func slotIndex(s blackboard.Slot) int {
	for i := range slotsByName {
		if slotsByName[i] == s {
			return i
		}
	}
	return -1
}

func appendPayload(b []byte, p blackboard.Payload) ([]byte, error) { return appendObject(b, p) }

func appendGlueOutput(b []byte, o *GlueOutput) ([]byte, error) {
	if o == nil {
		return append(b, "null"...), nil
	}
	b = append(b, `{"beliefs":`...)
	b, err := appendObject(b, o.Beliefs)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"action":`...)
	if b, err = appendObject(b, o.Action); err != nil {
		return nil, err
	}
	b = append(b, `,"tool_obs":{"charge":`...)
	if b, err = appendObject(b, o.ToolObs.Charge); err != nil {
		return nil, err
	}
	b = append(b, `,"refund":`...)
	if b, err = appendObject(b, o.ToolObs.Refund); err != nil {
		return nil, err
	}
	return append(b, "}}"...), nil
}

// appendObject writes a JSON object with its keys sorted, as encoding/json
// does; nil is null. It is appendMap written out for payloads, the bulk of
// a line: the values' common types are written in place rather than
// through a function value, and the sort moves one-byte indices rather
// than key-value pairs.
func appendObject(b []byte, m map[string]any) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	if len(m) > maxSmall {
		return appendMap(b, m, appendValue)
	}
	var keys [maxSmall]string
	var vals [maxSmall]any
	var order [maxSmall]uint8
	n := 0
	for k, v := range m {
		if n == maxSmall { // the map grew under us: a racing writer
			return appendMap(b, m, appendValue)
		}
		keys[n], vals[n] = k, v
		order[n] = uint8(n)
		n++
	}
	for i := 1; i < n; i++ {
		for j := i; j > 0 && less(keys[order[j]], keys[order[j-1]]); j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	b = append(b, '{')
	for i, o := range order[:n] {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, keys[o])
		b = append(b, ':')
		switch x := vals[o].(type) {
		case bool:
			b = strconv.AppendBool(b, x)
		case string:
			b = appendString(b, x)
		default:
			var err error
			if b, err = appendValue(b, x); err != nil {
				return nil, err
			}
		}
	}
	return append(b, '}'), nil
}

// maxSmall is the most keys appendObject sorts on the stack; payloads
// have a dozen at most.
const maxSmall = 24

// appendMap writes a map with string keys, keys sorted, each value with
// value; nil is null. The pairs are collected in one pass over the map
// and sorted, so no key is hashed a second time.
func appendMap[V any](b []byte, m map[string]V, value func([]byte, V) ([]byte, error)) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	type pair struct {
		k string
		v V
	}
	var stack [16]pair
	pairs := stack[:0]
	for k, v := range m {
		pairs = append(pairs, pair{k, v})
	}
	// Payloads have a handful of keys: an insertion sort beats a general
	// one there.
	for i := 1; i < len(pairs); i++ {
		for j := i; j > 0 && less(pairs[j].k, pairs[j-1].k); j-- {
			pairs[j], pairs[j-1] = pairs[j-1], pairs[j]
		}
	}
	b = append(b, '{')
	for i := range pairs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, pairs[i].k)
		b = append(b, ':')
		var err error
		if b, err = value(b, pairs[i].v); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// less is x < y, deciding on the first bytes where it can: keys mostly
// differ there, and that spares a call to the runtime's comparison.
func less(x, y string) bool {
	if x != "" && y != "" && x[0] != y[0] {
		return x[0] < y[0]
	}
	return x < y
}

// appendValue writes one payload value. The kernel normalises payloads to
// nil, bool, string, float64, []any and map[string]any; the glue agents
// add Payload and []string.
func appendValue(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case string:
		return appendString(b, x), nil
	case float64:
		return appendFloat(b, x)
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case map[string]any:
		return appendObject(b, x)
	case blackboard.Payload:
		return appendObject(b, x)
	case []any:
		if x == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendValue(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case []string:
		if x == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, s := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, s)
		}
		return append(b, ']'), nil
	}
	return appendReflect(b, v)
}

// appendReflect hands a value of any other type to encoding/json, with
// the settings the lines are written with.
func appendReflect(b []byte, v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}

// appendFloat writes f as encoding/json writes a float64: the shortest
// decimal that reads back as f, in exponent form only below 1e-6 or from
// 1e21 on, with a one-digit negative exponent not padded (1e-7, not
// 1e-07). NaN and infinities have no JSON form.
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("json: unsupported value: %s", strconv.FormatFloat(f, 'g', -1, 64))
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

const hexDigits = "0123456789abcdef"

// Eight bytes at a time: the masks of the SWAR test in plainPrefix.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plainPrefix returns how many leading bytes of s need no escaping:
// printable ASCII other than '"' and '\'. It tests eight bytes at once
// (a byte below 0x20, equal to '"' or '\', or with its high bit set
// marks the word); a marked word is finished byte by byte. The tests can
// mark a clean byte above a marked one, never a word with none.
func plainPrefix(s string) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := binary.LittleEndian.Uint64([]byte(s[i : i+8]))
		q, bs := x^(ones*'"'), x^(ones*'\\')
		if (x-ones*0x20)&^x&highs|(q-ones)&^q&highs|(bs-ones)&^bs&highs|x&highs != 0 {
			break
		}
	}
	for ; i < len(s) && plain[s[i]]; i++ {
	}
	return i
}

// plain marks the bytes that need no escaping: one load per byte of a
// tail rather than four comparisons.
var plain = func() (p [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		p[c] = c != '"' && c != '\\'
	}
	return p
}()

// appendString writes s as a JSON string the way encoding/json does without
// HTML escaping: '"' and '\\' escaped, control characters as \b, \f, \n,
// \r, \t or \u00XX, invalid UTF-8 as \ufffd, and U+2028 and U+2029 (line
// and paragraph separators, which JavaScript does not allow in strings)
// as \u2028 and \u2029. Everything else is copied.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	i := plainPrefix(s)
	start := 0
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

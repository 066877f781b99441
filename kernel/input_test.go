package kernel_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

func TestBadInput(t *testing.T) {
	cyclicMap := map[string]any{}
	cyclicMap["self"] = cyclicMap
	cyclicSlice := []any{nil}
	cyclicSlice[0] = cyclicSlice
	nan, inf := math.NaN(), math.Inf(1)
	tool := func(f *fixture) kernel.Handle { return f.tool }
	planner := func(f *fixture) kernel.Handle { return f.planner }
	symbolic := func(f *fixture) kernel.Handle { return f.sym }
	percept := func(p blackboard.Payload) kernel.Entry {
		return kernel.Entry{TraceID: tr, Slot: blackboard.Percepts, Kind: "charge", Payload: p}
	}
	propose := func(slot blackboard.Slot, p blackboard.Payload) kernel.Entry {
		return kernel.Entry{TraceID: tr, Slot: slot, Kind: "k", Payload: p}
	}
	constraint := func(p blackboard.Payload) kernel.Entry {
		return kernel.Entry{TraceID: tr, Slot: blackboard.Constraints, Kind: "c", Payload: p}
	}
	withEntry := func(edit func(*kernel.Entry)) kernel.Entry {
		e := percept(nil)
		edit(&e)
		return e
	}
	for _, tc := range []struct {
		name     string
		cfg      kernel.Config
		h        func(*fixture) kernel.Handle
		e        kernel.Entry
		sentinel error
		code     reason.Code
	}{
		{"empty slot", kernel.Config{}, tool, withEntry(func(e *kernel.Entry) { e.Slot = "" }), blackboard.ErrInvalidInput, reason.InvalidInput},
		{"unknown slot", kernel.Config{}, tool, withEntry(func(e *kernel.Entry) { e.Slot = "percept" }), blackboard.ErrInvalidInput, reason.InvalidInput},
		{"unknown mode", kernel.Config{}, tool, withEntry(func(e *kernel.Entry) { e.Mode = "Commit" }), blackboard.ErrInvalidInput, reason.InvalidInput},
		{"unknown scope", kernel.Config{}, tool, withEntry(func(e *kernel.Entry) { e.Scope = "global" }), blackboard.ErrInvalidInput, reason.InvalidInput},
		{"empty kind", kernel.Config{}, tool, withEntry(func(e *kernel.Entry) { e.Kind = "" }), blackboard.ErrInvalidInput, reason.InvalidInput},
		{"empty trace", kernel.Config{}, tool, withEntry(func(e *kernel.Entry) { e.TraceID = "" }), blackboard.ErrInvalidInput, reason.InvalidInput},
		{"newline in kind", kernel.Config{}, tool, withEntry(func(e *kernel.Entry) { e.Kind = "char\nge" }), blackboard.ErrInvalidInput, reason.InvalidInput},
		{"NUL in trace", kernel.Config{}, tool, withEntry(func(e *kernel.Entry) { e.TraceID = "t\x00" }), blackboard.ErrInvalidInput, reason.InvalidInput},
		{"DEL in kind", kernel.Config{}, tool, withEntry(func(e *kernel.Entry) { e.Kind = "a\x7f" }), blackboard.ErrInvalidInput, reason.InvalidInput},
		{"invalid UTF-8 kind", kernel.Config{}, tool, withEntry(func(e *kernel.Entry) { e.Kind = "\xff" }), blackboard.ErrInvalidInput, reason.InvalidInput},
		{"over-long kind", kernel.Config{}, tool, withEntry(func(e *kernel.Entry) { e.Kind = strings.Repeat("k", 513) }), blackboard.ErrInvalidInput, reason.InvalidInput},
		{"NaN confidence", kernel.Config{}, tool, withEntry(func(e *kernel.Entry) { e.Confidence = &nan }), blackboard.ErrInvalidInput, reason.InvalidInput},
		{"+Inf confidence", kernel.Config{}, tool, withEntry(func(e *kernel.Entry) { e.Confidence = new(inf) }), blackboard.ErrInvalidInput, reason.InvalidInput},
		{"-Inf confidence", kernel.Config{}, tool, withEntry(func(e *kernel.Entry) { e.Confidence = new(-inf) }), blackboard.ErrInvalidInput, reason.InvalidInput},
		{"confidence -0.1", kernel.Config{}, tool, withEntry(func(e *kernel.Entry) { e.Confidence = new(-0.1) }), blackboard.ErrInvalidInput, reason.InvalidInput},
		{"confidence 1.1", kernel.Config{}, tool, withEntry(func(e *kernel.Entry) { e.Confidence = new(1.1) }), blackboard.ErrInvalidInput, reason.InvalidInput},
		{"negative TTL", kernel.Config{}, tool, withEntry(func(e *kernel.Entry) { e.TTL = -time.Second }), blackboard.ErrInvalidInput, reason.InvalidInput},
		{"empty input ref", kernel.Config{}, tool, withEntry(func(e *kernel.Entry) { e.InputRefs = []string{""} }), kernel.ErrInvalidReference, reason.InvalidReference},
		{"empty evidence ref", kernel.Config{}, tool, withEntry(func(e *kernel.Entry) { e.EvidenceRefs = []string{""} }), kernel.ErrInvalidReference, reason.InvalidReference},

		{"chan in payload", kernel.Config{}, tool, percept(blackboard.Payload{"c": make(chan int)}), blackboard.ErrInvalidPayload, reason.InvalidInput},
		{"func in payload", kernel.Config{}, tool, percept(blackboard.Payload{"f": func() {}}), blackboard.ErrInvalidPayload, reason.InvalidInput},
		{"cyclic map", kernel.Config{}, tool, percept(blackboard.Payload{"m": cyclicMap}), blackboard.ErrInvalidPayload, reason.InvalidInput},
		{"cyclic slice", kernel.Config{}, tool, percept(blackboard.Payload{"l": cyclicSlice}), blackboard.ErrInvalidPayload, reason.InvalidInput},
		{"NaN number", kernel.Config{}, tool, percept(blackboard.Payload{"n": nan}), blackboard.ErrInvalidPayload, reason.InvalidInput},
		{"nested Inf float32", kernel.Config{}, tool, percept(blackboard.Payload{"l": []any{map[string]any{"x": float32(inf)}}}), blackboard.ErrInvalidPayload, reason.InvalidInput},
		{"invalid UTF-8 string", kernel.Config{}, tool, percept(blackboard.Payload{"s": "ok\xff"}), blackboard.ErrInvalidPayload, reason.InvalidInput},
		{"invalid UTF-8 key", kernel.Config{}, tool, percept(blackboard.Payload{"k\xfe": 1}), blackboard.ErrInvalidPayload, reason.InvalidInput},
		{"non-string map keys", kernel.Config{}, tool, percept(blackboard.Payload{"m": map[int]string{1: "a"}}), blackboard.ErrInvalidPayload, reason.InvalidInput},
		{"bad json.Number", kernel.Config{}, tool, percept(blackboard.Payload{"n": json.Number("12abc")}), blackboard.ErrInvalidPayload, reason.InvalidInput},
		{"bad json.RawMessage", kernel.Config{}, tool, percept(blackboard.Payload{"r": json.RawMessage(`{"a":`)}), blackboard.ErrInvalidPayload, reason.InvalidInput},
		{"struct with a chan", kernel.Config{}, tool, percept(blackboard.Payload{"s": struct{ C chan int }{}}), blackboard.ErrInvalidPayload, reason.InvalidInput},
		{"over 1 MiB", kernel.Config{}, tool, percept(blackboard.Payload{"blob": strings.Repeat("x", 1<<20)}), kernel.ErrPayloadTooLarge, reason.InvalidInput},
		{"over a configured limit", kernel.Config{MaxPayloadBytes: 64}, tool,
			percept(blackboard.Payload{"blob": strings.Repeat("x", 60)}), kernel.ErrPayloadTooLarge, reason.InvalidInput},

		{"belief depends_on a string", kernel.Config{}, planner, propose(blackboard.Beliefs, blackboard.Payload{"depends_on": "charge"}), kernel.ErrInvalidProposal, reason.InvalidProposal},
		{"belief depends_on numbers", kernel.Config{}, planner, propose(blackboard.Beliefs, blackboard.Payload{"depends_on": []int{1}}), kernel.ErrInvalidProposal, reason.InvalidProposal},
		{"plan without steps", kernel.Config{}, planner, propose(blackboard.Plans, blackboard.Payload{}), kernel.ErrInvalidProposal, reason.InvalidProposal},
		{"plan with empty steps", kernel.Config{}, planner, propose(blackboard.Plans, blackboard.Payload{"steps": []any{}}), kernel.ErrInvalidProposal, reason.InvalidProposal},
		{"plan step not an object", kernel.Config{}, planner, propose(blackboard.Plans, blackboard.Payload{"steps": []any{"issue_refund"}}), kernel.ErrInvalidProposal, reason.InvalidProposal},
		{"plan step without action", kernel.Config{}, planner, propose(blackboard.Plans, plan(blackboard.Payload{"requires_beliefs": []string{"b"}})), kernel.ErrInvalidProposal, reason.InvalidProposal},
		{"plan step bad requires_beliefs", kernel.Config{}, planner, propose(blackboard.Plans, plan(blackboard.Payload{"action": "a", "requires_beliefs": "b"})), kernel.ErrInvalidProposal, reason.InvalidProposal},
		{"action bad requires_beliefs", kernel.Config{}, planner, propose(blackboard.Actions, blackboard.Payload{"requires_beliefs": []any{"b", 2}}), kernel.ErrInvalidProposal, reason.InvalidProposal},
		{"prediction without action_type", kernel.Config{}, planner, propose(blackboard.Predictions, blackboard.Payload{"expected_outcome": 1}), kernel.ErrInvalidProposal, reason.InvalidProposal},
		{"prediction with text outcome", kernel.Config{}, planner, propose(blackboard.Predictions, blackboard.Payload{"action_type": "a", "expected_outcome": "good"}), kernel.ErrInvalidProposal, reason.InvalidProposal},
		{"prediction bad requires_beliefs", kernel.Config{}, planner, propose(blackboard.Predictions, with(prediction("a", 1), "requires_beliefs", true)), kernel.ErrInvalidProposal, reason.InvalidProposal},
		{"constraint name not a string", kernel.Config{}, symbolic, constraint(blackboard.Payload{"name": 5}), blackboard.ErrInvalidInput, reason.InvalidInput},
		{"constraint blocks_field not a string", kernel.Config{}, symbolic, constraint(blackboard.Payload{"blocks_field": 1}), blackboard.ErrInvalidInput, reason.InvalidInput},
		{"constraint bind_percept not a string", kernel.Config{}, symbolic, constraint(blackboard.Payload{"bind_percept": true}), blackboard.ErrInvalidInput, reason.InvalidInput},
		{"constraint enabled not a bool", kernel.Config{}, symbolic, constraint(blackboard.Payload{"enabled": "yes"}), blackboard.ErrInvalidInput, reason.InvalidInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixtureWith(t, tc.cfg)
			f.perceive("other", "seed", nil, nil, 0) // so "unchanged" compares a non-empty store
			f.mark()
			rec, err := tc.h(f).Write(f.ctx, tc.e)
			wantErr(t, err, tc.sentinel, tc.code)
			if rec != "" {
				t.Errorf("failed write returned record %q", rec)
			}
			// Submit must refuse the same way, before any decision.
			if p, ok := tc.h(f).(*kernel.Proposer); ok {
				d, err := p.Submit(f.ctx, tc.e)
				wantErr(t, err, tc.sentinel, tc.code)
				if d.ProposalID != "" {
					t.Errorf("failed submit returned proposal %q", d.ProposalID)
				}
			}
			f.unchanged()
		})
	}
}

func TestViewBadTrace(t *testing.T) {
	f := newFixture(t)
	for _, id := range []string{"", "t\n"} {
		_, err := f.planner.View(f.ctx, id, false)
		wantErr(t, err, blackboard.ErrInvalidInput, reason.InvalidInput)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg   kernel.Config
		field string
	}{
		"NaN conflict threshold":  {kernel.Config{ConflictThreshold: math.NaN()}, "ConflictThreshold"},
		"conflict threshold 2":    {kernel.Config{ConflictThreshold: 2}, "ConflictThreshold"},
		"NaN min confidence":      {kernel.Config{MinConfidence: math.NaN()}, "MinConfidence"},
		"negative min conf":       {kernel.Config{MinConfidence: -0.5}, "MinConfidence"},
		"negative max payload":    {kernel.Config{MaxPayloadBytes: -1}, "MaxPayloadBytes"},
		"bad namespace":           {kernel.Config{Namespace: "a\nb"}, "Namespace"},
		"spec with empty type":    {kernel.Config{ActionSpecs: []kernel.ActionSpec{{}}}, "ActionSpecs[0].Type"},
		"two specs of a type":     {kernel.Config{ActionSpecs: []kernel.ActionSpec{{Type: "a"}, {Type: "a"}}}, "ActionSpecs[1].Type"},
		"once-key without fields": {kernel.Config{ActionSpecs: []kernel.ActionSpec{{Type: "a", Once: &kernel.OnceKey{}}}}, "ActionSpecs[0].Once.Fields"},
		"nil validator":           {kernel.Config{Validators: []kernel.Validator{nil}}, "Validators[0]"},
		"nil validator func":      {kernel.Config{Validators: []kernel.Validator{kernel.ValidatorFunc(nil)}}, "Validators[0]"},
		"belief spec, no kind":    {kernel.Config{BeliefSpecs: []kernel.BeliefSpec{{DependsOn: []string{"charge"}}}}, "BeliefSpecs[0].Kind"},
		"belief spec, no deps":    {kernel.Config{BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due"}}}, "BeliefSpecs[0].DependsOn"},
		"two belief specs":        {kernel.Config{BeliefSpecs: []kernel.BeliefSpec{{Kind: "b", DependsOn: []string{"p"}}, {Kind: "b", DependsOn: []string{"p"}}}}, "BeliefSpecs[1].Kind"},
		"shared, no kinds":        {kernel.Config{SharedPersistent: map[blackboard.Slot][]string{blackboard.Beliefs: nil}}, "SharedPersistent[beliefs]"},
		"reserved empty writer":   {kernel.Config{Reserved: map[blackboard.Slot]map[string][]string{blackboard.Beliefs: {"b": {""}}}}, `Reserved[beliefs]["b"]`},
	} {
		k, err := kernel.New(tc.cfg)
		var cerr *kernel.ConfigError
		if !errors.Is(err, blackboard.ErrInvalidInput) || k != nil || !errors.As(err, &cerr) || cerr.Field != tc.field {
			t.Errorf("%s: New = %v, %v; want ErrInvalidInput naming %s", name, k, err, tc.field)
		}
		if verr := tc.cfg.Validate(); verr == nil || verr.Error() != err.Error() {
			t.Errorf("%s: Validate = %v, want New's error", name, verr)
		}
	}
}

// Validate reports every problem at once, each naming its field; the zero
// Config is valid.
func TestConfigValidateEveryProblem(t *testing.T) {
	if err := (kernel.Config{}).Validate(); err != nil {
		t.Errorf("zero Config: %v", err)
	}
	err := kernel.Config{MinConfidence: 2, ConflictThreshold: -1, MaxPayloadBytes: -1,
		ActionSpecs: []kernel.ActionSpec{{}}, Validators: []kernel.Validator{nil}}.Validate()
	var fields []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var cerr *kernel.ConfigError
		if !errors.As(e, &cerr) {
			t.Fatalf("%v is not a *ConfigError", e)
		}
		fields = append(fields, cerr.Field)
	}
	want := []string{"MinConfidence", "ConflictThreshold", "MaxPayloadBytes", "ActionSpecs[0].Type", "Validators[0]"}
	if !slices.Equal(fields, want) {
		t.Errorf("fields %q, want %q", fields, want)
	}
}

// TestPayloadNormalisation: what a caller passes comes back in the kernel's
// canonical JSON form, from the returned record and from the store.
func TestPayloadNormalisation(t *testing.T) {
	type inner struct {
		N     int    `json:"n"`
		S     string `json:"s,omitempty"`
		Skip  string `json:"-"`
		Inner *inner `json:"inner,omitempty"`
	}
	three := 3
	in := blackboard.Payload{
		"int":       7,
		"int64":     int64(-8),
		"uint8":     uint8(9),
		"float32":   float32(0.5),
		"number":    json.Number("3.25"),
		"strings":   []string{"a", "b"},
		"ints":      []int{1, 2},
		"array":     [2]bool{true, false},
		"ptr":       &three,
		"nilptr":    (*int)(nil),
		"struct":    inner{N: 1, Skip: "x", Inner: &inner{N: 2, S: "deep"}},
		"map":       map[string]int{"a": 1},
		"payload":   blackboard.Payload{"p": uint64(4)},
		"raw":       json.RawMessage(`{"r":[1,"x",null]}`),
		"nested":    []any{map[string]any{"k": []string{"v"}}},
		"untouched": "text",
	}
	want := blackboard.Payload{
		"int":       7.0,
		"int64":     -8.0,
		"uint8":     9.0,
		"float32":   0.5,
		"number":    3.25,
		"strings":   []any{"a", "b"},
		"ints":      []any{1.0, 2.0},
		"array":     []any{true, false},
		"ptr":       3.0,
		"nilptr":    nil,
		"struct":    map[string]any{"n": 1.0, "inner": map[string]any{"n": 2.0, "s": "deep"}},
		"map":       map[string]any{"a": 1.0},
		"payload":   map[string]any{"p": 4.0},
		"raw":       map[string]any{"r": []any{1.0, "x", nil}},
		"nested":    []any{map[string]any{"k": []any{"v"}}},
		"untouched": "text",
	}
	f := newFixture(t)
	id, err := f.tool.Write(f.ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Percepts, Kind: "charge", Payload: in})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.get(id).Payload; !reflect.DeepEqual(got, want) {
		t.Errorf("stored payload\n got %#v\nwant %#v", got, want)
	}
	// A nil payload is stored as an empty object.
	id, err = f.tool.Write(f.ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Percepts, Kind: "empty"})
	if err != nil {
		t.Fatal(err)
	}
	if rec := f.get(id); rec.Payload == nil || len(rec.Payload) != 0 {
		t.Errorf("nil payload stored as %#v", rec.Payload)
	}
}

// TestPayloadLimitIsExact: the limit applies to the JSON encoding byte for
// byte: a payload whose encoding is exactly the limit passes, one byte less
// fails.
func TestPayloadLimitIsExact(t *testing.T) {
	for name, p := range map[string]blackboard.Payload{
		"one key":     {"a": "b"},
		"many keys":   {"a": 1, "bb": true, "ccc": false, "d": nil, "e": "x"},
		"nested":      {"l": []any{1, 2, []any{}, map[string]any{}, map[string]any{"x": []string{"y", "z"}}}},
		"numbers":     {"big": 1e21, "bigger": 1.5e300, "mid": 1e20, "small": 1e-7, "tiny": -2.5e-10, "frac": 0.000001, "neg": math.Copysign(0, -1), "int": 123456789},
		"escapes":     {"s": "<a href=\"x\">&\n\t\x01\u2028é</a>"},
		"typed":       {"m": map[string]int{"a": 1, "b": 2}, "s": []int{1, 2, 3}, "empty": []int{}},
		"struct-ish":  {"st": struct{ A, B int }{1, 2}},
		"empty lists": {"a": []any{}, "b": []string{}, "c": map[string]any{}},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			id, err := f.tool.Write(f.ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Percepts, Kind: "k", Payload: p})
			if err != nil {
				t.Fatal(err)
			}
			enc, err := json.Marshal(f.get(id).Payload)
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				limit int
				err   error
			}{{len(enc), nil}, {len(enc) - 1, kernel.ErrPayloadTooLarge}} {
				f := newFixtureWith(t, kernel.Config{MaxPayloadBytes: tc.limit})
				_, err := f.tool.Write(f.ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Percepts, Kind: "k", Payload: p})
				if !errors.Is(err, tc.err) { // errors.Is(nil, nil) holds
					t.Errorf("encoding is %d bytes; limit %d: %v, want %v", len(enc), tc.limit, err, tc.err)
				}
			}
		})
	}
}

// FuzzPayloadLimit: for any JSON object, the kernel stores what encoding/json
// decodes, and its size limit agrees with encoding/json byte for byte.
func FuzzPayloadLimit(f *testing.F) {
	for _, seed := range []string{`{}`, `{"a":1}`, `{"a":[1,2,{"b":null}],"c":"<&>\u2028"}`, `{"n":1e21,"m":1e-7,"o":-0.000001}`, `{"s":"\u0001\t\""}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var p map[string]any
		if json.Unmarshal([]byte(doc), &p) != nil || p == nil {
			return
		}
		enc, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, limit := range []int{len(enc), len(enc) - 1} {
			fx := newFixtureWith(t, kernel.Config{MaxPayloadBytes: limit}) // an encoding is at least 2 bytes
			id, err := fx.tool.Write(fx.ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Percepts, Kind: "k", Payload: p})
			var rec blackboard.Record
			if err == nil {
				rec = fx.get(id)
			}
			switch {
			case limit == len(enc) && (err != nil || !reflect.DeepEqual(map[string]any(rec.Payload), p)):
				t.Fatalf("%s at limit %d: %v, stored %#v", enc, limit, err, rec.Payload)
			case limit < len(enc) && !errors.Is(err, kernel.ErrPayloadTooLarge):
				t.Fatalf("%s (%d bytes) under limit %d: %v", enc, len(enc), limit, err)
			}
		}
	})
}

package sim_test

import (
	"cmp"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/sim"
)

// holds is the paper's condition semantics written out independently: the
// field must be present and of the value's type (numbers of any JSON
// spelling, strings, booleans for eq and ne only); anything else is false.
func holds(op string, got, want any) bool {
	num := func(v any) (float64, bool) {
		switch x := v.(type) {
		case float64:
			return x, !math.IsNaN(x) && !math.IsInf(x, 0)
		case json.Number:
			f, err := strconv.ParseFloat(string(x), 64)
			return f, err == nil && !math.IsInf(f, 0)
		}
		return 0, false
	}
	var c int
	switch g := got.(type) {
	case float64:
		w, ok := num(want)
		if !ok {
			return false
		}
		c = cmp.Compare(g, w)
	case string:
		w, ok := want.(string)
		if !ok {
			return false
		}
		c = strings.Compare(g, w)
	case bool:
		w, ok := want.(bool)
		if !ok || op != "eq" && op != "ne" {
			return false
		}
		if g != w {
			c = 1
		}
	default:
		return false
	}
	switch op {
	case "eq":
		return c == 0
	case "ne":
		return c != 0
	case "gt":
		return c > 0
	case "lt":
		return c < 0
	case "gte":
		return c >= 0
	case "lte":
		return c <= 0
	}
	return false
}

// FuzzRules loads an arbitrary JSON rules document and evaluates what loads
// against committed percept and belief payloads decoded from arbitrary JSON.
// A document either loads into valid rules that survive a round trip through
// JSON, or is refused with ErrInvalidRule; a loaded rule matches exactly when
// every one of its conditions holds by the semantics above.
func FuzzRules(f *testing.F) {
	for _, seed := range [][3]string{
		{`[{"name":"hot","action_type":"alert","expected_outcome":1.0,"requires_beliefs":["anomaly_detected"],"confidence":0.85,
			"percept_conditions":[{"kind":"temperature","field":"value","op":"gt","value":90}]}]`, `{"value":91}`, `{}`},
		{`[{"action_type":"a","expected_outcome":-0.5,"requires_beliefs":[],"belief_conditions":[{"kind":"b","field":"ok","op":"eq","value":true}]}]`, `{}`, `{"ok":true}`},
		{`[{"action_type":"a","expected_outcome":0,"requires_beliefs":[],"percept_conditions":[{"kind":"p","field":"s","op":"lte","value":"m"},{"kind":"p","field":"n","op":"ne","value":1e-7}]}]`, `{"s":"a","n":1e-7}`, `null`},
		{`[{"action_type":"a","expected_outcome":1,"requires_beliefs":[],"percept_conditions":[{"kind":"p","field":"x","op":"gte","value":true}]}]`, `{"x":true}`, `{}`},
		{`[{"action_type":"a","expected_outcome":1,"requires_beliefs":[],"percept_conditions":[{"kind":"p","field":"x","op":"eq","value":1e400}]}]`, `{"x":1}`, `{}`},
		{`[{"action_type":"a","expected_outcome":1,"requires_beliefs":[""]}]`, `{}`, `{}`},
		{`[{"name":"r","action_type":"a","expected_outcome":1,"requires_beliefs":[]},{"name":"r","action_type":"b","expected_outcome":1,"requires_beliefs":[]}]`, `{}`, `{}`},
		{`[{"action_type":"a","expected_outcome":1,"requires_beliefs":[],"unknown":1}]`, `{}`, `{}`},
		{`[] []`, `{}`, `{}`}, {`{}`, `{}`, `{}`}, {`null`, `[]`, `"x"`},
		{`[{"action_type":"a","expected_outcome":1,"requires_beliefs":[],"percept_conditions":[{"kind":"p","field":"x","op":"lt","value":-0}]}]`, `{"x":0}`, `{}`},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, doc, percept, belief string) {
		rules, err := sim.LoadRules(strings.NewReader(doc))
		if err != nil {
			if rules != nil || !errors.Is(err, sim.ErrInvalidRule) {
				t.Fatalf("LoadRules(%s) = %v, %v", doc, rules, err)
			}
			return
		}
		if err := sim.ValidateRules(rules); err != nil {
			t.Fatalf("LoadRules(%s) returned rules that do not validate: %v", doc, err)
		}
		enc, err := json.Marshal(rules)
		if err != nil {
			t.Fatalf("loaded rules do not encode: %v", err)
		}
		again, err := sim.LoadRules(strings.NewReader(string(enc)))
		if enc2, _ := json.Marshal(again); err != nil || string(enc2) != string(enc) {
			t.Fatalf("round trip of %s: %s, %v", enc, enc2, err)
		}
		if _, err := sim.New(kernelSimulator(t), rules); err != nil {
			t.Fatalf("New refused loaded rules: %v", err)
		}
		// The view commits the percept payload under every percept kind
		// the rules name, the belief payload under every belief kind; a
		// payload that is not a JSON object leaves its kinds absent.
		v := kernel.View{TraceID: "t", Committed: map[blackboard.Slot]map[string]blackboard.Payload{blackboard.Percepts: {}, blackboard.Beliefs: {}}}
		var pp, bp blackboard.Payload
		json.Unmarshal([]byte(percept), &pp)
		json.Unmarshal([]byte(belief), &bp)
		for _, r := range rules {
			for _, c := range r.PerceptConditions {
				if pp != nil {
					v.Committed[blackboard.Percepts][c.Kind] = pp
				}
			}
			for _, c := range r.BeliefConditions {
				if bp != nil {
					v.Committed[blackboard.Beliefs][c.Kind] = bp
				}
			}
		}
		for _, r := range rules {
			want := true
			for slot, conds := range map[blackboard.Slot][]sim.Condition{blackboard.Percepts: r.PerceptConditions, blackboard.Beliefs: r.BeliefConditions} {
				for _, c := range conds {
					p, committed := v.Committed[slot][c.Kind]
					got, present := p[c.Field]
					h := present && holds(c.Op, got, c.Value)
					if c.Holds(p) != h {
						t.Fatalf("%+v on %v: Holds = %v, want %v", c, p, !h, h)
					}
					want = want && committed && h
				}
			}
			// Match must be deterministic as well as right.
			if first := r.Match(v); first != want || r.Match(v) != first {
				t.Fatalf("rule %+v on percepts %v, beliefs %v: Match = %v, want %v", r, pp, bp, !want, want)
			}
			if slices.ContainsFunc(r.RequiresBeliefs, func(b string) bool { return b == "" }) {
				t.Fatalf("loaded rule %+v requires an empty belief", r)
			}
		}
	})
}

// kernelSimulator returns a simulator handle on a fresh kernel.
func kernelSimulator(t *testing.T) *kernel.Proposer {
	k, err := kernel.New(kernel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k.Proposer(blackboard.RoleSimulator, "sim")
}

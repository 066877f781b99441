package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/jsonval"
	"github.com/blackboardkernel/bk/kernel"
)

// Sentinel errors of this package, for errors.Is.
var (
	// ErrInvalidRule: a rule or condition that cannot be evaluated (no
	// action type, an unknown operator, a comparison value that is not a
	// number, string or boolean, ...), duplicate rule names, or a rules
	// document that is not valid JSON of the expected shape.
	ErrInvalidRule = errors.New("sim: invalid rule")
)

// The six condition operators (paper §11.3), the values of
// [Condition.Op].
const (
	opEq  = "eq"
	opNe  = "ne"
	opGt  = "gt"
	opLt  = "lt"
	opGte = "gte"
	opLte = "lte"
)

// validOp reports whether op is one of the six operators.
func validOp(op string) bool {
	switch op {
	case opEq, opNe, opGt, opLt, opGte, opLte:
		return true
	}
	return false
}

func ordering(op string) bool { return op == opGt || op == opLt || op == opGte || op == opLte }

// Condition tests one field of one committed payload: payload[Field] Op
// Value, where the payload is the latest committed record of Kind in the
// slot the condition is listed for (percept or belief).
type Condition struct {
	Kind  string `json:"kind"`
	Field string `json:"field"`
	// Op is one of six operators: "eq" and "ne" compare numbers, strings
	// and booleans; "gt", "lt", "gte" and "lte" compare numbers or
	// strings. Numbers compare by value whatever their Go or JSON type.
	Op string `json:"op"`
	// Value is a number (of any Go numeric type, or a json.Number), a
	// string or a boolean.
	Value any `json:"value"`
}

// validate checks that c can be evaluated. It returns an error wrapping
// [ErrInvalidRule] or nil.
func (c Condition) validate() error {
	switch {
	case c.Kind == "":
		return fmt.Errorf("%w: condition without kind", ErrInvalidRule)
	case c.Field == "":
		return fmt.Errorf("%w: condition on %q without field", ErrInvalidRule, c.Kind)
	case !validOp(c.Op):
		return fmt.Errorf("%w: condition on %s.%s: unknown operator %q", ErrInvalidRule, c.Kind, c.Field, c.Op)
	}
	if _, ok := number(c.Value); ok {
		return nil
	}
	switch c.Value.(type) {
	case string:
		return nil
	case bool:
		if !ordering(c.Op) {
			return nil
		}
		return fmt.Errorf("%w: condition on %s.%s: %s needs a number or a string", ErrInvalidRule, c.Kind, c.Field, c.Op)
	}
	return fmt.Errorf("%w: condition on %s.%s: value %v (%T) is not a finite number, a string or a boolean",
		ErrInvalidRule, c.Kind, c.Field, c.Value, c.Value)
}

// holds evaluates the condition against a payload. A missing field, a
// value of another type than the condition's, or an invalid condition
// makes it false; it never panics.
func (c Condition) holds(p blackboard.Payload) bool {
	got, present := p[c.Field]
	if !present {
		return false
	}
	return compare(c.Op, got, c.Value)
}

// number converts any Go or JSON number to a finite float64.
func number(v any) (float64, bool) {
	f, ok := jsonval.Float(v)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// compare applies op to got and want, false on any type mismatch.
func compare(op string, got, want any) bool {
	var c int
	if g, ok := number(got); ok {
		w, ok := number(want)
		if !ok {
			return false
		}
		switch {
		case g < w:
			c = -1
		case g > w:
			c = 1
		}
	} else if g, ok := got.(string); ok {
		w, ok := want.(string)
		if !ok {
			return false
		}
		c = strings.Compare(g, w)
	} else if g, ok := got.(bool); ok {
		w, ok := want.(bool)
		if !ok || ordering(op) {
			return false
		}
		if g != w {
			c = 1
		}
	} else {
		return false
	}
	switch op {
	case opEq:
		return c == 0
	case opNe:
		return c != 0
	case opGt:
		return c > 0
	case opLt:
		return c < 0
	case opGte:
		return c >= 0
	case opLte:
		return c <= 0
	}
	return false
}

// Rule is the paper's SimRule: when every condition holds on the committed
// percepts and beliefs of a trace, the simulator predicts ExpectedOutcome for
// ActionType. The kernel commits the prediction only once RequiresBeliefs
// are committed. Rules are plain data: see [LoadRules] for the JSON form.
type Rule struct {
	// Name identifies the rule; it is the kind of the prediction records
	// the simulator proposes for it. Empty means "<action_type>#<index>".
	Name            string   `json:"name,omitempty"`
	ActionType      string   `json:"action_type"`
	ExpectedOutcome float64  `json:"expected_outcome"`
	RequiresBeliefs []string `json:"requires_beliefs"`
	// PerceptConditions test committed percepts; BeliefConditions test
	// committed beliefs. All must hold.
	PerceptConditions []Condition `json:"percept_conditions,omitempty"`
	BeliefConditions  []Condition `json:"belief_conditions,omitempty"`
	// Confidence, if set, becomes the prediction's provenance confidence.
	Confidence *float64 `json:"confidence,omitempty"`
}

// validate checks that r can be evaluated and proposed. It returns an error
// wrapping [ErrInvalidRule] or nil.
func (r Rule) validate() error {
	switch {
	case r.ActionType == "":
		return fmt.Errorf("%w: rule %q: no action_type", ErrInvalidRule, r.Name)
	case math.IsNaN(r.ExpectedOutcome) || math.IsInf(r.ExpectedOutcome, 0):
		return fmt.Errorf("%w: rule %q: expected_outcome %v is not finite", ErrInvalidRule, r.Name, r.ExpectedOutcome)
	case r.Confidence != nil && !(*r.Confidence >= 0 && *r.Confidence <= 1):
		return fmt.Errorf("%w: rule %q: confidence %v outside [0,1]", ErrInvalidRule, r.Name, *r.Confidence)
	}
	for _, b := range r.RequiresBeliefs {
		if b == "" {
			return fmt.Errorf("%w: rule %q: empty belief in requires_beliefs", ErrInvalidRule, r.Name)
		}
	}
	for _, c := range append(append([]Condition(nil), r.PerceptConditions...), r.BeliefConditions...) {
		if err := c.validate(); err != nil {
			return fmt.Errorf("rule %q: %w", r.Name, err)
		}
	}
	return nil
}

// match reports whether every condition of r holds on the view's committed
// percepts and beliefs. A condition on a kind that is not committed does
// not hold.
func (r Rule) match(v kernel.View) bool {
	for _, set := range []struct {
		slot  blackboard.Slot
		conds []Condition
	}{{blackboard.Percepts, r.PerceptConditions}, {blackboard.Beliefs, r.BeliefConditions}} {
		for _, c := range set.conds {
			p, ok := v.Committed[set.slot][c.Kind]
			if !ok || !c.holds(p) {
				return false
			}
		}
	}
	return true
}

// clone returns a copy of r sharing no slices with it.
func (r Rule) clone() Rule {
	r.RequiresBeliefs = append([]string(nil), r.RequiresBeliefs...)
	r.PerceptConditions = append([]Condition(nil), r.PerceptConditions...)
	r.BeliefConditions = append([]Condition(nil), r.BeliefConditions...)
	if r.Confidence != nil {
		c := *r.Confidence
		r.Confidence = &c
	}
	return r
}

// ValidateRules validates every rule and checks that names are unique.
func validateRules(rules []Rule) error {
	names := make(map[string]bool, len(rules))
	for i, r := range rules {
		if err := r.validate(); err != nil {
			return fmt.Errorf("rule %d: %w", i, err)
		}
		if r.Name != "" {
			if names[r.Name] {
				return fmt.Errorf("%w: rule %d: duplicate name %q", ErrInvalidRule, i, r.Name)
			}
			names[r.Name] = true
		}
	}
	return nil
}

// LoadRules reads a JSON array of rules, for example
//
//	[{"name": "hot", "action_type": "alert", "expected_outcome": 1.0,
//	  "requires_beliefs": ["anomaly_detected"], "confidence": 0.85,
//	  "percept_conditions": [{"kind": "temperature", "field": "value", "op": "gt", "value": 90}]}]
//
// Unknown fields are refused, numbers in conditions keep their exact JSON
// text (as [json.Number]) and every rule is validated. Any problem is an
// error wrapping [ErrInvalidRule].
func LoadRules(r io.Reader) ([]Rule, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%w: reading rules: %w", ErrInvalidRule, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var rules []Rule
	if err := dec.Decode(&rules); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRule, err)
	}
	if rules == nil {
		return nil, fmt.Errorf("%w: expected a JSON array of rules", ErrInvalidRule)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the rules array", ErrInvalidRule)
	}
	if err := validateRules(rules); err != nil {
		return nil, err
	}
	return rules, nil
}

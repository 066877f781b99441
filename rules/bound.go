package rules

import (
	"fmt"
	"reflect"
	"strconv"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
)

// sizeBound is the cost estimator [New] uses: every list, object and
// string a rule reads is as large as the bounds allow. A value of type dyn
// (any payload field) is taken for a list of [MaxElements]: a dyn string
// may be longer, so the cost of a string function over a field can exceed
// the estimate, by at most MaxStringBytes/MaxElements.
type sizeBound struct{}

// EstimateSize implements [checker.CostEstimator].
func (sizeBound) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	max := uint64(MaxElements)
	if t := n.Type(); t != nil && (t.IsExactType(cel.StringType) || t.IsExactType(cel.BytesType)) {
		max = MaxStringBytes
	}
	return &checker.SizeEstimate{Min: 0, Max: max}
}

// EstimateCallCost implements [checker.CostEstimator]: the standard
// functions' own estimates apply.
func (sizeBound) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// reads reports which of the shared variables a compiled rule refers to.
func reads(ast *cel.Ast) (percepts, beliefs bool) {
	for _, ref := range ast.NativeRep().ReferenceMap() {
		switch ref.Name {
		case varPercepts:
			percepts = true
		case varBeliefs:
			beliefs = true
		}
	}
	return percepts, beliefs
}

// bounded checks, before any rule runs, every payload the rules about to
// run can read against the bounds: own (the proposal's payload, when a
// rule reads it), the grounding beliefs, and the trace's percepts and
// beliefs when a rule reads them. A payload out of bounds refuses the
// proposal with [CodeInputTooLarge], naming rule (the first that would
// have run) and the value. It builds the percept and belief maps the rules
// then read.
func (in *input) bounded(rules []*rule, rule, where string, own blackboard.Payload, grounds ...blackboard.Record) kernel.Verdict {
	if mutInputBound {
		return kernel.Verdict{}
	}
	refuse := func(what, problem string) kernel.Verdict {
		return kernel.Verdict{Code: CodeInputTooLarge, Rule: rule,
			Detail: fmt.Sprintf("%s: %s holds %s; a rule is given at most %d entries a list or object, %d bytes a string, %d levels and %d values a payload",
				where, what, problem, MaxElements, MaxStringBytes, MaxDepth, MaxValues)}
	}
	if own != nil {
		if p := checkPayload(own); p != "" {
			return refuse("the proposal", p)
		}
	}
	for _, g := range grounds {
		if p := checkPayload(g.Payload); p != "" {
			return refuse("grounding belief "+g.Kind+" ("+g.ID+")", p)
		}
	}
	var percepts, beliefs bool
	for _, rl := range rules {
		percepts, beliefs = percepts || rl.percepts, beliefs || rl.beliefs
	}
	if percepts {
		m := in.c.Percepts()
		for kind, p := range m {
			if pr := checkPayload(p); pr != "" {
				return refuse("percept "+kind, pr)
			}
		}
		in.percepts = plain(m)
	}
	if beliefs {
		m := in.c.Beliefs()
		for kind, p := range m {
			if pr := checkPayload(p); pr != "" {
				return refuse("belief "+kind, pr)
			}
		}
		in.beliefs = plain(m)
	}
	return kernel.Verdict{}
}

// checkPayload returns what in p is out of bounds, or "".
func checkPayload(p blackboard.Payload) string {
	values := 0
	return checkValue(map[string]any(p), 0, &values)
}

// checkValue walks v, counting its values into *values; on the first
// value out of bounds it returns where (a path of keys and indexes) and
// why.
func checkValue(v any, depth int, values *int) string {
	*values++
	if *values > MaxValues {
		return fmt.Sprintf("more than %d values", MaxValues)
	}
	if depth > MaxDepth {
		return fmt.Sprintf("lists or objects nested deeper than %d", MaxDepth)
	}
	switch x := v.(type) {
	case nil, bool, float64, int, int64:
		return ""
	case string:
		if len(x) > MaxStringBytes {
			return fmt.Sprintf("a string of %d bytes", len(x))
		}
		return ""
	case blackboard.Payload:
		return checkValue(map[string]any(x), depth, values)
	case map[string]any:
		if len(x) > MaxElements {
			return fmt.Sprintf("an object of %d entries", len(x))
		}
		for k, e := range x {
			if len(k) > MaxStringBytes {
				return fmt.Sprintf("a key of %d bytes", len(k))
			}
			if p := checkValue(e, depth+1, values); p != "" {
				return "." + k + ": " + p
			}
		}
		return ""
	case []any:
		if len(x) > MaxElements {
			return fmt.Sprintf("a list of %d elements", len(x))
		}
		for i, e := range x {
			if p := checkValue(e, depth+1, values); p != "" {
				return "[" + strconv.Itoa(i) + "]: " + p
			}
		}
		return ""
	}
	// Other Go types a payload may hold ([]string, typed maps): their
	// lengths and elements are bounded alike.
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		if rv.Len() > MaxElements {
			return fmt.Sprintf("a list of %d elements", rv.Len())
		}
		for i := range rv.Len() {
			if p := checkValue(rv.Index(i).Interface(), depth+1, values); p != "" {
				return "[" + strconv.Itoa(i) + "]: " + p
			}
		}
	case reflect.Map:
		if rv.Len() > MaxElements {
			return fmt.Sprintf("an object of %d entries", rv.Len())
		}
		for it := rv.MapRange(); it.Next(); {
			if p := checkValue(it.Value().Interface(), depth+1, values); p != "" {
				return "." + fmt.Sprint(it.Key().Interface()) + ": " + p
			}
		}
	case reflect.String:
		if rv.Len() > MaxStringBytes {
			return fmt.Sprintf("a string of %d bytes", rv.Len())
		}
	}
	return ""
}

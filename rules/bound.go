package rules

import (
	"fmt"

	"github.com/google/cel-go/cel"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/expr"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

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
// proposal with [reason.RuleInputTooLarge], naming rule (the first that would
// have run) and the value. It builds the percept and belief maps the rules
// then read.
func (in *input) bounded(rules []*rule, rule, where string, own blackboard.Payload, grounds ...blackboard.Record) kernel.Cause {
	if mutInputBound {
		return kernel.Cause{}
	}
	return in.checkBounds(rules, rule, where, own, grounds...)
}

// checkBounds is [input.bounded]'s work.
func (in *input) checkBounds(rules []*rule, rule, where string, own blackboard.Payload, grounds ...blackboard.Record) kernel.Cause {
	refuse := func(what, problem string) kernel.Cause {
		return kernel.Cause{Code: reason.RuleInputTooLarge, Rule: rule,
			Detail: fmt.Sprintf("%s: %s holds %s; a rule is given at most %d entries a list or object, %d bytes a string, %d levels and %d values a payload",
				where, what, problem, expr.MaxElements, expr.MaxStringBytes, expr.MaxDepth, expr.MaxValues)}
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
	return kernel.Cause{}
}

// checkPayload returns what in p is out of bounds, or "".
func checkPayload(p blackboard.Payload) string {
	return expr.CheckValue(map[string]any(p))
}

// checkCost refuses a rule whose worst-case cost over inputs within the
// bounds exceeds the one limit every expression has ([expr.CheckCost]).
func checkCost(env *cel.Env, ast *cel.Ast) error {
	if mutStaticCost {
		return nil
	}
	return expr.CheckCost(env, ast)
}

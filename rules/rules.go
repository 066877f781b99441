package rules

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/interpreter"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/expr"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// ErrInvalidRule is wrapped by every error [New] returns for a rule it
// cannot accept.
var ErrInvalidRule = errors.New("invalid rule")

// Variables the rules see.
const (
	varAction   = "action"
	varBelief   = "belief"
	varValue    = "value"
	varPercepts = "percepts"
	varBeliefs  = "beliefs"
)

// OnAction is the rule name: every action proposal of type actionType
// must satisfy expr. The expression sees action, beliefs and percepts (see
// the package doc).
func OnAction(name, actionType, expr string) Spec {
	return Spec{Name: name, On: TargetAction, Target: actionType, Expr: expr}
}

// OnBelief is the rule name: every belief of kind must satisfy expr, when
// it is proposed and whenever a plan or action rests on it. The expression
// sees value, belief, beliefs and percepts (see the package doc).
func OnBelief(name, kind, expr string) Spec {
	return Spec{Name: name, On: TargetBelief, Target: kind, Expr: expr}
}

// rule is a compiled rule.
type rule struct {
	name string
	expr string
	prg  cel.Program
	// percepts and beliefs: the rule reads that variable.
	percepts, beliefs bool
	// op and clauses split the rule at its top-level && or || (op "" and
	// one clause when it has neither), to say which part was false.
	op      string
	clauses []*clause
}

// Rules is a set of compiled rules; it is a [kernel.Validator]. Build it
// with [New]. It is safe for concurrent use.
type Rules struct {
	actions map[string][]*rule // by action type, in declaration order
	beliefs map[string][]*rule // by belief kind, in declaration order
	specs   []Spec             // as given, for [Rules.Specs]
}

var _ kernel.Validator = (*Rules)(nil)

// New compiles the rules specs give ([OnAction], [OnBelief], or specs
// as a policy snapshot recorded them, [Rules.Specs]). A rule with an empty
// name, kind or expression, a target ([Spec].On) other than [TargetAction]
// and [TargetBelief], a name another rule already has, an expression that
// does not compile or whose type is not bool is refused with an error
// wrapping [ErrInvalidRule] that names the rule. New with no rules returns
// a Rules that lets everything through.
func New(specs ...Spec) (*Rules, error) {
	byKind := cel.MapType(cel.StringType, expr.Object)
	shared := []cel.EnvOption{cel.Variable(varPercepts, byKind), cel.Variable(varBeliefs, byKind)}
	actionEnv, err := expr.NewEnv(append(shared, cel.Variable(varAction, expr.Object))...)
	if err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	beliefEnv, err := expr.NewEnv(append(shared, cel.Variable(varBelief, expr.Object), cel.Variable(varValue, cel.DynType))...)
	if err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}

	rs := &Rules{actions: map[string][]*rule{}, beliefs: map[string][]*rule{}}
	seen := make(map[string]bool, len(specs))
	for _, s := range specs {
		invalid := func(format string, args ...any) error {
			return fmt.Errorf("rules: rule %q: %w: on %s %q: %s", s.Name, ErrInvalidRule, s.On, s.Target, fmt.Sprintf(format, args...))
		}
		switch {
		case s.On != TargetAction && s.On != TargetBelief:
			return nil, invalid("target is neither %q nor %q", TargetAction, TargetBelief)
		case s.Name == "":
			return nil, invalid("empty name")
		case s.Target == "":
			return nil, invalid("empty %s kind", s.On)
		case s.Expr == "":
			return nil, invalid("empty expression")
		case seen[s.Name]:
			return nil, invalid("duplicate name")
		}
		seen[s.Name] = true
		env, index := actionEnv, rs.actions
		if s.On == TargetBelief {
			env, index = beliefEnv, rs.beliefs
		}
		ast, err := expr.Compile(env, s.Expr)
		if err != nil {
			return nil, invalid("%v", err)
		}
		if err := expr.WantBool(ast); err != nil {
			return nil, invalid("%v", err)
		}
		// The cost is bounded before evaluation, not tracked during it
		// (see [expr.Program]): the worst case over inputs within the
		// bounds is estimated here, once; evaluation then runs untracked,
		// in time linear in its input, and the context still interrupts it.
		if err := checkCost(env, ast); err != nil {
			return nil, invalid("%v", err)
		}
		prg, err := expr.Program(env, ast)
		if err != nil {
			return nil, invalid("%v", err)
		}
		rl := &rule{name: s.Name, expr: s.Expr, prg: prg}
		rl.op, rl.clauses = splitClauses(env, ast, s.Expr)
		rl.percepts, rl.beliefs = reads(ast)
		index[s.Target] = append(index[s.Target], rl)
	}
	rs.specs = slices.Clone(specs)
	return rs, nil
}

// Validate checks c against the rules that apply to it and returns the
// cause of the first rule that does not hold, or the zero Cause. A
// belief is checked against its kind's rules; a plan against the rules of
// every belief it rests on; an action against those, then its type's rules.
func (r *Rules) Validate(ctx context.Context, c kernel.Candidate) kernel.Cause {
	switch c.Proposal().Slot {
	case blackboard.Beliefs:
		rs := r.beliefs[c.Proposal().Kind]
		if len(rs) == 0 {
			return kernel.Cause{}
		}
		in := &input{c: c, belief: c.Proposal().Payload}
		if v := in.bounded(rs, rs[0].name, "belief "+c.Proposal().Kind, c.Proposal().Payload); v.Code != "" {
			return v
		}
		return in.check(ctx, rs, "belief "+c.Proposal().Kind)
	case blackboard.Plans, blackboard.Actions:
		acts := r.actions[c.Proposal().Kind]
		if c.Proposal().Slot != blackboard.Actions {
			acts = nil
		}
		if len(acts) == 0 && len(r.beliefs) == 0 {
			return kernel.Cause{}
		}
		in := &input{c: c}
		var grounds []blackboard.Record
		if len(r.beliefs) > 0 {
			grounds = c.Grounds()
		}
		// The rules about to run, for the bounds of what they read.
		var run []*rule
		var checked []blackboard.Record
		for _, g := range grounds {
			if rs := r.beliefs[g.Kind]; len(rs) > 0 {
				run = append(run, rs...)
				checked = append(checked, g)
			}
		}
		run = append(run, acts...)
		if len(run) == 0 {
			return kernel.Cause{} // no rule applies
		}
		var own blackboard.Payload
		if len(acts) > 0 {
			own = c.Proposal().Payload
		}
		if v := in.bounded(run, run[0].name, string(c.Proposal().Slot)+" "+c.Proposal().Kind, own, checked...); v.Code != "" {
			return v
		}
		if len(r.beliefs) > 0 {
			for _, g := range grounds {
				rs := r.beliefs[g.Kind]
				if len(rs) == 0 {
					continue
				}
				in.belief = g.Payload
				where := "grounding belief " + g.Kind + " (" + g.ID + "), rechecked against the current percepts"
				if v := in.check(ctx, rs, where); v.Code != "" {
					return v
				}
			}
			in.belief = nil
		}
		if len(acts) > 0 {
			in.action = c.Proposal().Payload
			return in.check(ctx, acts, "action "+c.Proposal().Kind)
		}
	}
	return kernel.Cause{}
}

// input binds a rule's variables for one Validate call. The percept and
// belief maps are built on first use and shared by the rules evaluated in
// that call, which evaluates them one after another.
type input struct {
	c        kernel.Candidate
	action   blackboard.Payload // the action proposal, for action rules
	belief   blackboard.Payload // the belief checked, for belief rules
	percepts map[string]any
	beliefs  map[string]any
}

// check evaluates rules in order and returns the first failure; where
// says what was checked, for the detail.
func (in *input) check(ctx context.Context, rules []*rule, where string) kernel.Cause {
	for _, rl := range rules {
		out, _, err := rl.prg.ContextEval(ctx, in)
		if err != nil {
			return kernel.Cause{Code: reason.RuleError, Rule: rl.name, Detail: where + ": " + err.Error()}
		}
		ok, isBool := out.Value().(bool)
		switch {
		case !isBool:
			return kernel.Cause{Code: reason.RuleError, Rule: rl.name,
				Detail: fmt.Sprintf("%s: result is %s, not bool", where, out.Type().TypeName())}
		case !ok:
			return kernel.Cause{Code: reason.RuleViolated, Rule: rl.name, Detail: rl.violation(ctx, in, where)}
		}
	}
	return kernel.Cause{}
}

// ResolveName implements [interpreter.Activation]. A name left unbound
// (value when the belief has none) makes the rule fail at evaluation.
func (in *input) ResolveName(name string) (any, bool) {
	switch name {
	case varAction:
		return map[string]any(in.action), in.action != nil
	case varBelief:
		return map[string]any(in.belief), in.belief != nil
	case varValue:
		v, ok := in.belief["value"]
		return v, ok
	case varPercepts:
		if in.percepts == nil {
			in.percepts = plain(in.c.Percepts())
		}
		return in.percepts, true
	case varBeliefs:
		if in.beliefs == nil {
			in.beliefs = plain(in.c.Beliefs())
		}
		return in.beliefs, true
	}
	return nil, false
}

// Parent implements [interpreter.Activation].
func (in *input) Parent() interpreter.Activation { return nil }

// plain converts payloads to the map type CEL adapts without reflection.
func plain(m map[string]blackboard.Payload) map[string]any {
	out := make(map[string]any, len(m))
	for k, p := range m {
		out[k] = map[string]any(p)
	}
	return out
}

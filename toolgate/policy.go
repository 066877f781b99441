package toolgate

import (
	"context"
	"fmt"
	"regexp"
	"slices"

	"github.com/google/cel-go/cel"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/expr"
)

// Variables an approval rule sees besides the declared properties.
const (
	varArgs   = "args"
	varCaller = "caller"
	varIntent = "intent"
)

var celIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// celReserved are words CEL does not accept as variable names.
var celReserved = []string{
	"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function", "if",
	"import", "let", "loop", "package", "namespace", "return", "var", "void", "while",
}

// policy is a compiled approval rule ([Tool.Approval]).
type policy struct {
	always bool
	expr   string
	prg    cel.Program // nil when the policy has no rule
	vars   []string    // the properties declared as variables
}

// approvalAlways is the rule of a tool whose every call needs approval:
// it needs no evaluation, and is recorded as such ("always").
const approvalAlways = "true"

// compilePolicy compiles the approval rule when against the tool's schema.
func compilePolicy(when string, s *schema) (*policy, error) {
	if when == approvalAlways {
		return &policy{always: true}, nil
	}
	pol := &policy{expr: when}
	if when == "" {
		return pol, nil
	}
	opts := []cel.EnvOption{
		cel.Variable(varArgs, expr.Object),
		cel.Variable(varCaller, cel.StringType),
		cel.Variable(varIntent, cel.StringType),
	}
	for name := range s.props {
		if name == varArgs || name == varCaller || name == varIntent || !celIdent.MatchString(name) || slices.Contains(celReserved, name) {
			continue
		}
		pol.vars = append(pol.vars, name)
		opts = append(opts, cel.Variable(name, cel.DynType))
	}
	env, err := expr.NewEnv(opts...)
	if err != nil {
		return nil, err
	}
	ast, err := expr.Compile(env, when)
	if err == nil {
		err = expr.WantBool(ast)
	}
	if err == nil {
		err = expr.CheckCost(env, ast)
	}
	if err != nil {
		return nil, fmt.Errorf("approval rule %w", err)
	}
	pol.prg, err = expr.TrackedProgram(env, ast)
	if err != nil {
		return nil, fmt.Errorf("approval rule: %v", err)
	}
	return pol, nil
}

// needs reports whether a call with these arguments needs approval, and
// why (for the decision record): "always", the rule, or the rule's
// evaluation error (fail closed).
func (p *policy) needs(ctx context.Context, args blackboard.Payload, caller, intent string) (bool, string) {
	if p.always {
		return true, "always"
	}
	if p.prg == nil {
		return false, ""
	}
	act := map[string]any{varArgs: map[string]any(args), varCaller: caller, varIntent: intent}
	for _, name := range p.vars {
		if v, ok := args[name]; ok {
			act[name] = v
		}
	}
	out, _, err := p.prg.ContextEval(ctx, act)
	if err != nil {
		return true, "approval rule " + p.expr + " could not be evaluated (fails closed): " + err.Error()
	}
	b, ok := out.Value().(bool)
	if !ok {
		return true, "approval rule " + p.expr + " is not a bool (fails closed)"
	}
	if b {
		return true, "approval rule " + p.expr
	}
	return false, ""
}

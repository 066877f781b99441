package rules

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/parser"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/expr"
)

// maxShownValue bounds the text of one value a violation's detail shows:
// a field may hold up to expr.MaxStringBytes, and a detail is for a person.
const maxShownValue = 200

// maxShownValues bounds how many values a violation's detail shows.
const maxShownValues = 16

// clause is one operand of a rule's top-level && or || (the whole rule
// when it has neither), compiled on its own so that a false rule can say
// which part of it was false.
type clause struct {
	text  string
	prg   cel.Program // nil for the whole rule: its own program decides
	paths []string    // the variables and fields it reads: "action.amount"
}

// splitClauses breaks a compiled rule into the operands of its top-level
// && or || (nested operands of the same operator are flattened: a && b &&
// c has three clauses) and returns the operator ("&&", "||" or "" when
// the rule is one clause). A clause that cannot be printed back or
// compiled on its own leaves the rule as one clause: the explanation is
// then coarser, never wrong.
func splitClauses(env *cel.Env, ast *cel.Ast, src string) (string, []*clause) {
	native := ast.NativeRep()
	refs := native.ReferenceMap()
	whole := []*clause{{text: src, paths: readPaths(native.Expr(), refs)}}
	root := native.Expr()
	if root.Kind() != celast.CallKind {
		return "", whole
	}
	fn := root.AsCall().FunctionName()
	if fn != operators.LogicalAnd && fn != operators.LogicalOr {
		return "", whole
	}
	var operands []celast.Expr
	var flatten func(e celast.Expr)
	flatten = func(e celast.Expr) {
		if e.Kind() == celast.CallKind && e.AsCall().FunctionName() == fn {
			for _, a := range e.AsCall().Args() {
				flatten(a)
			}
			return
		}
		operands = append(operands, e)
	}
	flatten(root)
	out := make([]*clause, 0, len(operands))
	for _, e := range operands {
		text, err := parser.Unparse(e, native.SourceInfo())
		if err != nil {
			return "", whole
		}
		sub, err := expr.Compile(env, text)
		if err != nil {
			return "", whole
		}
		prg, err := expr.Program(env, sub)
		if err != nil {
			return "", whole
		}
		out = append(out, &clause{text: text, prg: prg, paths: readPaths(e, refs)})
	}
	if fn == operators.LogicalOr {
		return "||", out
	}
	return "&&", out
}

// readPaths lists, in order and once each, what e reads of the rule's
// variables: a variable (value) or a chain of field selections from one
// (percepts.order.amount), the longest chain only.
func readPaths(e celast.Expr, refs map[int64]*celast.ReferenceInfo) []string {
	inner := map[int64]bool{} // operands of a selection: part of a longer chain
	var nodes []celast.Expr
	celast.PreOrderVisit(e, celast.NewExprVisitor(func(n celast.Expr) {
		switch n.Kind() {
		case celast.SelectKind:
			inner[n.AsSelect().Operand().ID()] = true
			nodes = append(nodes, n)
		case celast.IdentKind:
			nodes = append(nodes, n)
		}
	}))
	var out []string
	for _, n := range nodes {
		if inner[n.ID()] {
			continue
		}
		if p := chain(n, refs); p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// chain returns the path a selection chain ending in n reads, or "" when
// it does not start at one of the rule's variables (a loop variable, a
// call's result).
func chain(n celast.Expr, refs map[int64]*celast.ReferenceInfo) string {
	var fields []string
	for n.Kind() == celast.SelectKind {
		fields = append(fields, n.AsSelect().FieldName())
		n = n.AsSelect().Operand()
	}
	if n.Kind() != celast.IdentKind {
		return ""
	}
	name := n.AsIdent()
	if ref, ok := refs[n.ID()]; !ok || ref.Name != name || !isVariable(name) {
		return ""
	}
	slices.Reverse(fields)
	return strings.Join(append([]string{name}, fields...), ".")
}

func isVariable(name string) bool {
	switch name {
	case varAction, varBelief, varValue, varPercepts, varBeliefs:
		return true
	}
	return false
}

// violation is the detail of a false rule: the whole rule, the clause that
// was false (every clause, for a disjunction) and the values the clause
// read, as in.
func (rl *rule) violation(ctx context.Context, in *input, where string) string {
	var sb strings.Builder
	sb.WriteString(where + ": rule is false: " + rl.expr)
	var shown []*clause
	switch {
	case rl.op == "&&":
		for i, c := range rl.clauses {
			if out, _, err := c.prg.ContextEval(ctx, in); err == nil && out.Value() == false {
				sb.WriteString("; clause " + strconv.Itoa(i+1) + " of " + strconv.Itoa(len(rl.clauses)) + " is false: " + c.text)
				shown = []*clause{c}
				break
			}
		}
	case rl.op == "||":
		sb.WriteString("; each of its " + strconv.Itoa(len(rl.clauses)) + " clauses is false")
		shown = rl.clauses
	}
	if shown == nil { // one clause, or none could be told false (a cancelled context)
		shown = rl.clauses
	}
	var paths []string
	for _, c := range shown {
		for _, p := range c.paths {
			if !slices.Contains(paths, p) {
				paths = append(paths, p)
			}
		}
	}
	for i, p := range paths {
		if i == maxShownValues {
			sb.WriteString(", and " + strconv.Itoa(len(paths)-i) + " more")
			break
		}
		if i == 0 {
			sb.WriteString("; it read ")
		} else {
			sb.WriteString(", ")
		}
		sb.WriteString(p + " = " + in.show(p))
	}
	return sb.String()
}

// show renders the value at path (a variable and its fields) as JSON,
// "(absent)" when a field on the way is missing, at most maxShownValue
// bytes.
func (in *input) show(path string) string {
	parts := strings.Split(path, ".")
	v, ok := in.ResolveName(parts[0])
	for _, f := range parts[1:] {
		if !ok {
			break
		}
		switch m := v.(type) {
		case map[string]any:
			v, ok = m[f]
		case blackboard.Payload:
			v, ok = m[f]
		default:
			ok = false
		}
	}
	if !ok {
		return "(absent)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "(unprintable)"
	}
	if len(b) > maxShownValue {
		cut := maxShownValue
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut--
		}
		return string(b[:cut]) + "…"
	}
	return string(b)
}

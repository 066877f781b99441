package toolgate

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
)

// register checks a tool and compiles what the gate needs of it.
func (g *Gate) register(t Tool) (*entry, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: tool %q: %s", ErrInvalidTool, t.Name, fmt.Sprintf(format, a...))
	}
	if err := checkToolName(t.Name); err != nil {
		return nil, fmt.Errorf("%w: tool %s: %v", ErrInvalidTool, escapedTool(t.Name), err)
	}
	if g.tools[t.Name] != nil {
		return nil, bad("registered twice")
	}
	if t.defErr != nil {
		return nil, bad("%v", t.defErr)
	}
	if g.byAction[t.action()] != nil {
		return nil, bad("action type %q is another tool's", t.action())
	}
	switch rk := t.resultKind(); rk {
	case KindAttempt, KindFailed, KindEscalated, audit.Kind, audit.KindApproval:
		return nil, bad("result kind %q is reserved", rk)
	}
	if slices.Contains(t.Requires, "") {
		return nil, bad("empty belief kind in Requires")
	}
	if t.ResultTTL < 0 || t.ResultTTL > blackboard.MaxTTL {
		return nil, bad("result TTL %v", t.ResultTTL)
	}
	r := t.Retry.withDefaults()
	if r.MaxAttempts < 1 || r.Backoff < 0 || r.MaxBackoff < r.Backoff {
		return nil, bad("retry policy %+v", t.Retry)
	}
	t.Retry = r
	t.Requires = slices.Clone(t.Requires)
	t.Hints = maps.Clone(t.Hints)
	params := slices.Clone(t.Parameters)
	if len(params) == 0 {
		params = slices.Clone(defaultParameters)
	}
	t.Parameters = params
	s, err := parseSchema(params)
	if err != nil {
		return nil, bad("%v", err)
	}
	pol, err := compilePolicy(t.Approval, s)
	if err != nil {
		return nil, bad("%v", err)
	}
	if err := checkBindings(&t, s); err != nil {
		return nil, bad("%v", err)
	}
	if err := checkMasked(&t); err != nil {
		return nil, bad("%v", err)
	}
	if err := checkScope(&t, s); err != nil {
		return nil, bad("%v", err)
	}
	t.Scope = maps.Clone(t.Scope)
	t.Masked = slices.Clone(t.Masked)
	t.Bindings = slices.Clone(t.Bindings)
	if t.Once != nil {
		o := *t.Once
		o.Fields = slices.Clone(o.Fields)
		t.Once = &o
		for _, f := range o.Fields {
			// A misspelt field would leave every call without its key
			// (ONCE_KEY_MISSING): refuse it here instead.
			if _, declared := s.props[f]; o.Percept == "" && !declared && len(s.props) > 0 {
				return nil, bad("once-key field %q is not a declared argument", f)
			}
		}
	}
	derives, err := compileDerives(t.Derives)
	if err != nil {
		return nil, bad("%v", err)
	}
	t.Derives = slices.Clone(t.Derives)
	requires := slices.Clone(t.Requires)
	if requires == nil {
		requires = []string{}
	}
	return &entry{
		Tool:   t,
		spec:   Spec{Name: t.Name, Description: t.Description, Parameters: params},
		schema: s, policy: pol, once: t.Once != nil, derives: derives,
		handle:   governedAs(g.k, toolWriter(t.Name)),
		requires: requires, nameValue: t.Name, spanName: "execute_tool " + t.Name,
	}, nil
}

// actionSpec is the kernel action spec of the tool's action type: a
// read-only tool's is a safe, repeatable action; any other's requires the
// tool's beliefs.
func (t *Tool) actionSpec() kernel.ActionSpec {
	s := kernel.ActionSpec{Type: t.action(), Once: t.Once}
	if t.restsOnNothing() {
		s.SafeFallback, s.Repeatable = true, true
	} else {
		s.MinBeliefs = slices.Clone(t.Requires)
	}
	return s
}

// checkName refuses caller and intent names the kernel would refuse as a
// kind, and long ones.
func checkName(s string) error { return checkLen(s, 256) }

// maxToolName bounds a tool's name.
const maxToolName = 64

// isToolName reports whether s is a tool name: 1 to 64 ASCII letters,
// digits, '_', '.' and '-', what model frameworks accept. Nothing else a
// model sends as a tool name reaches a record as it is, so no escape
// sequence can reach an operator's terminal through one.
func isToolName(s string) bool {
	if s == "" || len(s) > maxToolName {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// checkToolName refuses a tool name that is not a name ([isToolName]).
func checkToolName(s string) error {
	if toolNameChecked() && !isToolName(s) {
		return fmt.Errorf("the name is not 1 to %d of A-Z, a-z, 0-9, _, . and -", maxToolName)
	}
	return checkName(s)
}

// invalidTool is the kind under which a call naming no tool name is
// refused.
const invalidTool = "invalid_tool_name"

// toolLabel is a called tool's name where a label is wanted (a kind, a
// span, the loop guard): the name when it is one, else invalidTool.
func toolLabel(s string) string {
	if !toolNameChecked() {
		return clip(s)
	}
	if !isToolName(s) {
		return invalidTool
	}
	return s
}

// recordedTool is a called tool's name as decision records keep it: the
// name when it is one, else escapedTool.
func recordedTool(s string) string {
	if !toolNameChecked() || isToolName(s) {
		return clip(s)
	}
	return escapedTool(s)
}

// escapedTool shows a string that is not a tool name: its first 64 bytes,
// quoted with every byte outside printable ASCII escaped.
func escapedTool(s string) string {
	if len(s) > maxToolName {
		return strconv.QuoteToASCII(s[:maxToolName]) + "..."
	}
	return strconv.QuoteToASCII(s)
}

// checkTrace refuses trace ids the kernel would refuse.
func checkTrace(s string) error { return checkLen(s, 512) }

func checkLen(s string, limit int) error {
	switch {
	case s == "":
		return errors.New("empty name")
	case len(s) > limit:
		return fmt.Errorf("longer than %d bytes", limit)
	case !utf8.ValidString(s):
		return errors.New("name is not valid UTF-8")
	case strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return errors.New("name contains a control character")
	}
	return nil
}

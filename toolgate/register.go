package toolgate

import (
	"fmt"
	"maps"
	"slices"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store"
)

// register checks a tool and compiles what the gate needs of it.
func register(g *Gate, t Tool) (*entry, error) {
	bad := func(field, format string, a ...any) error {
		return configError(toolField(t.Name, field), format, a...)
	}
	if err := checkToolName(t.Name); err != nil {
		return nil, bad("Name", "%v", err)
	}
	if g.tools[t.Name] != nil {
		return nil, bad("Name", "registered twice")
	}
	if t.defErr != nil {
		return nil, bad("Definition", "%v", t.defErr)
	}
	switch rk := t.resultKind(); rk {
	case audit.KindAttempt, audit.KindFailed, audit.KindEscalated, audit.Kind, audit.KindApproval:
		return nil, bad("Result", "result kind %q is reserved", rk)
	}
	if slices.Contains(t.Requires, "") {
		return nil, bad("Requires", "empty belief kind in Requires")
	}
	if t.ResultTTL < 0 || t.ResultTTL > store.MaxTTL {
		return nil, bad("ResultTTL", "result TTL %v", t.ResultTTL)
	}
	r := t.Retry.withDefaults()
	if r.MaxAttempts < 1 || r.Backoff < 0 {
		return nil, bad("Retry", "retry policy %+v", t.Retry)
	}
	t.Retry = r
	t.Requires = slices.Clone(t.Requires)
	params := slices.Clone(t.Parameters)
	if len(params) == 0 {
		params = slices.Clone(defaultParameters)
	}
	t.Parameters = params
	s, err := parseSchema(params)
	if err != nil {
		return nil, bad("Parameters", "%v", err)
	}
	pol, err := compilePolicy(t.Approval, s)
	if err != nil {
		return nil, bad("Approval", "%v", err)
	}
	if err := checkBindings(&t, s); err != nil {
		return nil, bad("Bindings", "%v", err)
	}
	if err := checkMasked(&t); err != nil {
		return nil, bad("Masked", "%v", err)
	}
	if err := checkScope(&t, s); err != nil {
		return nil, bad("Scope", "%v", err)
	}
	t.Scope = maps.Clone(t.Scope)
	t.Masked = slices.Clone(t.Masked)
	t.Bindings = slices.Clone(t.Bindings)
	if o := t.Once; o != nil && (len(o.Fields) == 0 || slices.Contains(o.Fields, "") || o.Limit < 0) {
		return nil, bad("Once", "a once-key needs non-empty fields and a limit of zero or more")
	}
	if t.Once != nil {
		o := *t.Once
		o.Fields = slices.Clone(o.Fields)
		t.Once = &o
		for i, f := range o.Fields {
			// A misspelt field would leave every call without its key
			// (ONCE_KEY_MISSING): refuse it here instead.
			if _, declared := s.props[f]; o.Percept == "" && !declared && len(s.props) > 0 {
				return nil, bad(fmt.Sprintf("Once.Fields[%d]", i), "once-key field %q is not a declared argument: every call would lack its key (ONCE_KEY_MISSING)", f)
			}
		}
	}
	derives, err := compileDerives(t.Derives)
	if err != nil {
		return nil, bad("Derives", "%v", err)
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

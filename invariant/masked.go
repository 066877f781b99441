package invariant

import (
	"encoding/base64"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/mask"
)

// isMasked reports whether v is a masked value's stored form: the
// prefix and the unpadded URL-safe base64 of an HMAC-SHA256.
func isMasked(v any) bool {
	s, ok := v.(string)
	if !ok {
		return false
	}
	rest, ok := strings.CutPrefix(s, mask.Prefix)
	if !ok {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	return err == nil && len(b) == 32
}

// masked checks that no record of t holds the value of a masked field
// ([maskedValue]). The records of a tool (its actions, its decision
// records, its effects) are checked against the fields it masks: each
// such field of their arguments or output is in its masked form. Every
// other record is checked against every field a tool of its namespace
// masks. In both, any value under such a field's name, at any depth,
// that is a string must be masked, and so must a value that a string
// quotes after the field's name as JSON does ("email":"...") or as a
// refusal's detail does ("email" = "...").
func (c *checker) masked(t *trace) error {
	if mutMaskedValue {
		return nil
	}
	return c.maskedValues(t)
}

// maskedValues is masked's check: the mutation switch mutMaskedValue
// skips it.
func (c *checker) maskedValues(t *trace) error {
	for i := range t.recs {
		r := &t.recs[i]
		p := c.policy(r.Namespace)
		if len(p.masked) == 0 {
			continue
		}
		fields := c.fieldsOf(p, r)
		if len(fields) == 0 {
			continue
		}
		var places []string
		bad := func(where string) {
			if !slices.Contains(places, where) {
				places = append(places, where)
			}
		}
		top := r.Payload
		if d, ok := audit.Of(*r); ok && d.Context != nil {
			// A decision record's arguments are masked at their top level.
			if args, ok := d.Context["args"].(map[string]any); ok {
				for f := range fields {
					if v, has := args[f]; has && v != nil && !isMasked(v) {
						bad("context.args." + f)
					}
				}
			}
		}
		if r.Slot == blackboard.Actions || isEffect(r) {
			for f := range fields {
				if v, has := top[f]; has && v != nil && !isMasked(v) {
					bad(f)
				}
			}
		}
		scan(map[string]any(top), "", fields, bad)
		if len(places) > 0 {
			c.report(maskedValue, t.id, r.ID, "a masked field's value in the clear at "+strings.Join(places, ", "))
		}
	}
	return nil
}

// isEffect reports whether r is an effect record of the gate.
func isEffect(r *blackboard.Record) bool {
	_, ok := audit.EffectOf(*r)
	return ok
}

// fieldsOf returns the masked fields r is checked against: its tool's,
// when r is a record of one tool, else every tool's of the namespace.
func (c *checker) fieldsOf(p *nsPolicy, r *blackboard.Record) map[string]bool {
	if e, ok := audit.EffectOf(*r); ok {
		return p.masked[e.Tool]
	}
	if r.Slot == blackboard.Actions {
		if tp := p.actions[r.Kind]; tp != nil {
			return p.masked[tp.Name]
		}
	}
	if d, ok := audit.Of(*r); ok {
		if tool, _ := d.Context["tool"].(string); tool != "" && p.tools[tool] != nil {
			return p.masked[tool]
		}
	}
	if tool, ok := strings.CutPrefix(r.Provenance.Writer, deriverPrefix); ok && p.tools[tool] != nil {
		return p.masked[tool]
	}
	all := map[string]bool{}
	for _, fs := range p.masked {
		for f := range fs {
			all[f] = true
		}
	}
	return all
}

// scan walks a payload value: a string under a masked field's name must
// be masked, and so must any value a string quotes after one.
func scan(v any, path string, fields map[string]bool, bad func(string)) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			sub := k
			if path != "" {
				sub = path + "." + k
			}
			if s, ok := x[k].(string); ok && fields[k] && !isMasked(s) {
				bad(sub)
				continue
			}
			scan(x[k], sub, fields, bad)
		}
	case []any:
		for i, e := range x {
			scan(e, fmt.Sprintf("%s[%d]", path, i), fields, bad)
		}
	case string:
		if where := quoted(x, fields); where != "" {
			bad(path + " (" + where + ")")
		}
	}
}

// quoted returns the first masked field a string quotes a value of in
// the clear, as JSON ("f":"value") or a refusal's detail ("f" = "value")
// spell it, or "".
func quoted(s string, fields map[string]bool) string {
	if !strings.Contains(s, `"`) {
		return ""
	}
	for f := range fields {
		name := `"` + f + `"`
		for rest := s; ; {
			i := strings.Index(rest, name)
			if i < 0 {
				break
			}
			rest = rest[i+len(name):]
			after := strings.TrimLeft(rest, " \t\n\r")
			switch {
			case strings.HasPrefix(after, ":"):
				after = strings.TrimLeft(after[1:], " \t\n\r")
			case strings.HasPrefix(after, "="):
				after = strings.TrimLeft(after[1:], " \t\n\r")
			default:
				continue
			}
			if strings.HasPrefix(after, `"`) && !strings.HasPrefix(after[1:], mask.Prefix) {
				return f
			}
		}
	}
	return ""
}

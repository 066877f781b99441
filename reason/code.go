package reason

import "strings"

// Code is a machine-readable reason code. Codes are stable strings: compare
// them with ==, never parse error messages.
type Code string

// OK reports whether c records a positive decision ([Committed] or
// [PlanFeasible]).
func (c Code) OK() bool { return c == Committed || c == PlanFeasible }

// Blocked is the code an action gets when the named constraint blocks
// it: "<NAME>_BLOCKED". A plan step the constraint blocks gets it prefixed
// with "PLAN_": "PLAN_<NAME>_BLOCKED".
func Blocked(constraint string) Code {
	return Code(codeName(constraint) + "_BLOCKED")
}

// codeName upper-cases a constraint name and turns anything outside
// [A-Z0-9_] into '_' so that a code stays one token.
func codeName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			return r
		}
		return '_'
	}, name)
}

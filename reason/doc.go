// Package reason holds every reason code the library records: why the
// kernel committed or refused a proposal, why the gate refused, held or
// failed a tool call, why a budget, a rule, a finding's contract or a
// validator said no.
//
// A code is a [Code], a stable string: compare codes with ==, never parse
// an error message. A decision record keeps its code in the record's
// Reason field, a kernel decision in its Code and Causes, a tool call's
// result in its Code; whichever package emitted a code, it is declared
// here, so that a reader of a record finds every code in one list.
//
// Codes built from a name are the one exception: a constraint that blocks
// an action yields [Blocked] of the constraint's name ("<NAME>_BLOCKED",
// "PLAN_<NAME>_BLOCKED" for a plan step).
package reason

//go:build bkmutate

package toolgate

import "github.com/blackboardkernel/bk/internal/mutant"

// Mutation switches of the checks on tool definitions and what they
// derive (see kernel/mutate.go for the scheme); the default build declares
// them as false constants (nomutate_tools.go).
var (
	mutSchemaCheck bool
	mutDeriveOpen  bool
	mutDeriveExact bool
)

func init() {
	mutant.Register("github.com/blackboardkernel/bk/toolgate",
		mutant.Def{Name: "toolgate.schema_check", On: &mutSchemaCheck,
			Check: "a call whose arguments do not fit the tool's JSON Schema (bounds, patterns, nested objects, arrays) is INVALID_ARGUMENTS and never reaches the kernel"},
		mutant.Def{Name: "toolgate.derive_fail_closed", On: &mutDeriveOpen,
			Check: "a derived belief whose rule cannot be evaluated over a result (a missing field, a non-bool value) is not proposed: the derivation fails closed"},
		mutant.Def{Name: "toolgate.derive_exact", On: &mutDeriveExact, Also: []string{"github.com/blackboardkernel/bk/examples/support_desk"},
			Check: "a derived belief depends on the result record it was computed from, by id, never on the result kind's current observation (SUPERSEDED_EVIDENCE)"},
	)
}

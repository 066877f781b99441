//go:build bkmutate

package toolgate

import "github.com/blackboardkernel/bk/internal/mutant"

// Switches of what a refusal's record may hold (schema.go, oversize.go).
var (
	// mutSchemaQuote words a schema refusal in the JSON Schema library's
	// words, which quote the argument's value.
	mutSchemaQuote bool
	// mutOversize drops the size and digest that stand for arguments a
	// refusal's record does not hold, and the second, smaller record of a
	// refusal whose first was over the store's size limit.
	mutOversize bool
)

func init() {
	mutant.Register("github.com/blackboardkernel/bk/toolgate",
		mutant.Def{Name: "toolgate.schema_no_value", On: &mutSchemaQuote,
			Check: "a schema refusal names the argument and the rule it broke, never the value: no masked value in an INVALID_ARGUMENTS record"},
		mutant.Def{Name: "toolgate.oversize_refusal", On: &mutOversize,
			Check: "an argument too large to store is a refusal with a decision record holding its size and digest, never an error that ends the run"})
}

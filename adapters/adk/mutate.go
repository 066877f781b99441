//go:build bkmutate

package adk

import "github.com/blackboardkernel/bk/internal/mutant"

// mutForgedConfirmation disables the check that a confirmation approves
// the committed arguments' digest: the plugin then trusts the
// confirmation. BK_MUTATE=adk.forged_confirmation turns it on.
var mutForgedConfirmation bool

// mutNoEffect puts a call of the agent's own tool to the gate without
// the tool as its effect. BK_MUTATE=adk.call_effect turns it on.
var mutNoEffect bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/adapters/adk",
		mutant.Def{Name: "adk.forged_confirmation", Check: "an ADK tool confirmation whose digest is not the committed arguments' is refused as APPROVAL_MISMATCH and records nothing", On: &mutForgedConfirmation},
		mutant.Def{Name: "adk.call_effect", Check: "a call of the agent's own ADK tool goes to the gate with the tool as its effect, so it runs once when allowed and approved", On: &mutNoEffect})
}

//go:build bkmutate

package invariant

import "github.com/blackboardkernel/bk/internal/mutant"

// Mutation switches, one per invariant, each disabling its check (see
// kernel/mutate.go for the scheme); the default build declares them as
// false constants (nomutate.go).
var (
	mutEffectAction    bool
	mutEffectGrounding bool
	mutOnceHolder      bool
	mutApprovalBinding bool
	mutMaskedValue     bool
	mutDerivedSource   bool
	mutScopeHeld       bool
)

func init() {
	mutant.Register("github.com/blackboardkernel/bk/invariant",
		mutant.Def{Name: "invariant.effect_action", On: &mutEffectAction,
			Check: "the invariant checker reports an effect recorded as run that is not for a committed action of its tool the gate decided"},
		mutant.Def{Name: "invariant.effect_grounding", On: &mutEffectGrounding,
			Check: "the invariant checker reports an executed action whose beliefs or observations were superseded before it committed"},
		mutant.Def{Name: "invariant.once_holder", On: &mutOnceHolder,
			Check: "the invariant checker reports a once-key of a tool held by anything but an action the gate decided that ran or may still run"},
		mutant.Def{Name: "invariant.approval_binding", On: &mutApprovalBinding,
			Check: "the invariant checker reports an action that ran without an approval of the digest of its arguments, or under one another action used"},
		mutant.Def{Name: "invariant.masked_value", On: &mutMaskedValue,
			Check: "the invariant checker reports a value of a masked field held in the clear by any record"},
		mutant.Def{Name: "invariant.derived_source", On: &mutDerivedSource,
			Check: "the invariant checker reports a derived belief that does not name and rest on exactly the result of its tool it was computed from"},
		mutant.Def{Name: "invariant.scope_held", On: &mutScopeHeld,
			Check: "the invariant checker reports an action that ran outside its trace's one request (its scoped arguments, its principal) or under a policy with an undeclared effectful tool"},
	)
}

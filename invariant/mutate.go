//go:build bkmutate

package invariant

import "github.com/blackboardkernel/bk/internal/mutant"

// Mutation switches, one per invariant, each disabling its check (see
// kernel/mutate.go for the scheme); the default build declares them as
// false constants (nomutate.go).
var (
	mutEffectAction    bool
	mutEffectGrounding bool
)

func init() {
	mutant.Register("github.com/blackboardkernel/bk/invariant",
		mutant.Def{Name: "invariant.effect_action", On: &mutEffectAction,
			Check: "the invariant checker reports an effect recorded as run that is not for a committed action of its tool the gate decided"},
		mutant.Def{Name: "invariant.effect_grounding", On: &mutEffectGrounding,
			Check: "the invariant checker reports an executed action whose beliefs or observations were superseded before it committed"},
	)
}

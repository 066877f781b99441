//go:build bkmutate

package kernel

import "github.com/blackboardkernel/bk/internal/mutant"

// Mutation switches of the once-key and grounding checks of the second
// adversarial review (see mutate.go for the scheme). A file of their own,
// so that the registry's order in mutate.go stays the gate's.
var (
	mutUsedObservation bool
	mutOnceNamespace   bool
	mutOnceEncoding    bool
	mutOnceCanon       bool
	mutRetiredHolder   bool
	mutRetireFence     bool
	mutOnceLegacy      bool
)

func init() {
	mutant.Register("github.com/blackboardkernel/bk/kernel",
		mutant.Def{Name: "used_observation", Check: "an observation grounds at most one commit of an action type, through any belief that rests on it (DUPLICATE_ACTION)", On: &mutUsedObservation},
		mutant.Def{Name: "once_namespace", Check: "once-keys are claimed and looked up in the kernel's namespace only", On: &mutOnceNamespace, ByTests: true,
			Also: []string{"github.com/blackboardkernel/bk/toolgate"}},
		mutant.Def{Name: "once_encoding", Check: "a once-key encodes namespace, action type, values and slot unambiguously (canonical JSON array)", On: &mutOnceEncoding, ByTests: true},
		mutant.Def{Name: "once_legacy", Check: "once-keys claimed by a release before the canonical key stay in force (DUPLICATE_ACTION)", On: &mutOnceLegacy, ByTests: true},
		mutant.Def{Name: "once_canon", Check: "once-key values are canonical: 0 and -0, 2 and 2.0 are one value", On: &mutOnceCanon, ByTests: true},
		mutant.Def{Name: "retired_holder", Check: "a once-key slot held by a retired action (denied, expired, refused before any attempt) does not block a later action", On: &mutRetiredHolder, ByTests: true,
			Also: []string{"github.com/blackboardkernel/bk/toolgate"}},
		mutant.Def{Name: "retire_fence", Check: "an action is retired only if its first attempt never started: Retire claims the attempt's fence key in the same batch", On: &mutRetireFence, ByTests: true,
			Also: []string{"github.com/blackboardkernel/bk/toolgate"}},
	)
}

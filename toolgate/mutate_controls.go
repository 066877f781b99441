//go:build bkmutate

package toolgate

import "github.com/blackboardkernel/bk/internal/mutant"

// Mutation switches of the run controls and the references a call makes
// (see kernel/mutate.go for the scheme); the default build declares them
// as false constants (nomutate_controls.go).
var (
	mutControlsCall    bool
	mutControlsStart   bool
	mutControlsTighten bool
	mutContextRef      bool
)

func init() {
	mutant.Register("github.com/blackboardkernel/bk/toolgate",
		mutant.Def{Name: "toolgate.controls_call", On: &mutControlsCall,
			Check: "a call of an effectful tool in a read_only trace is READ_ONLY_MODE, and of a prohibited tool TOOL_PROHIBITED, before the kernel"},
		mutant.Def{Name: "toolgate.controls_start", On: &mutControlsStart,
			Check: "an action not yet started in a trace made read_only (or that prohibits its tool) is refused for good when executed, resumed or recovered: an earlier approval never runs it"},
		mutant.Def{Name: "toolgate.controls_tighten", On: &mutControlsTighten,
			Check: "run controls only tighten: a Restrict that would loosen them is ErrLoosened and records nothing"},
		mutant.Def{Name: "toolgate.context_ref", On: &mutContextRef,
			Check: "a call's compiled context is recorded only when it names a compiled_context record of the call's trace written by the kernel: a forged reference is CONTEXT_INVALID"},
	)
}

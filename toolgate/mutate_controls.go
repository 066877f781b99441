//go:build bkmutate

package toolgate

import "github.com/blackboardkernel/bk/internal/mutant"

// Mutation switches of the run controls and the references a call makes
// (see kernel/mutate.go for the scheme); the default build declares them
// as false constants (nomutate_controls.go).
var (
	mutControlsCall    bool
	mutControlsDecide  bool
	mutControlsTighten bool
	mutContextRef      bool
)

func init() {
	mutant.Register("github.com/blackboardkernel/bk/toolgate",
		mutant.Def{Name: "toolgate.controls_call", On: &mutControlsCall,
			Check: "a call of an effectful tool that the trace's run controls forbid (read_only, or the tool prohibited) is refused before the kernel, with READ_ONLY_MODE or TOOL_PROHIBITED: nothing is proposed"},
		mutant.Def{Name: "toolgate.controls_decide", On: &mutControlsDecide,
			Check: "the kernel decides every tool's action against the trace's run controls (failing closed on a controls record the gate did not write), and an action not yet started is refused for good when executed, resumed or recovered in a trace that now forbids it: an earlier approval never runs it"},
		mutant.Def{Name: "toolgate.controls_tighten", On: &mutControlsTighten,
			Check: "run controls only tighten: a Restrict that would loosen them is ErrLoosened and records nothing"},
		mutant.Def{Name: "toolgate.context_ref", On: &mutContextRef,
			Check: "a call's compiled context is recorded only when it names a compiled_context record of the call's trace written by the kernel: a forged reference is CONTEXT_INVALID"},
	)
}

//go:build bkmutate

package toolgate

import "github.com/blackboardkernel/bk/internal/mutant"

// mutCallerEffect drops the check that an action of a caller-driven tool
// starts only with the caller's effect: the gate then starts its attempt
// without one, which fails and uses up its approval and keys.
var mutCallerEffect bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/toolgate",
		mutant.Def{Name: "toolgate.caller_effect", On: &mutCallerEffect,
			Check: "an action of a caller-driven tool never starts without the caller's effect: Execute, Recover and Resolve answer EFFECT_UNAVAILABLE, record nothing and leave its approval and keys to the caller's retry"})
}

// Switches of the records of an effect's error or panic (effect_error.go).
var (
	// mutPanicFailed records an effect that panicked as EFFECT_FAILED,
	// with the panic's text, and logs nothing.
	mutPanicFailed bool
	// mutEffectErrorText stores the raw text of an effect's error.
	mutEffectErrorText bool
)

func init() {
	mutant.Register("github.com/blackboardkernel/bk/toolgate",
		mutant.Def{Name: "toolgate.effect_panic_unknown", On: &mutPanicFailed,
			Check: "an effect that panics is EFFECT_UNKNOWN (it may have acted), never EFFECT_FAILED; the operator's logger gets the panic and its stack, the store neither"},
		mutant.Def{Name: "toolgate.effect_error_text", On: &mutEffectErrorText,
			Check: "the raw text of an effect's error is never stored: a record keeps its kind, or the masked text of a Recordable error"})
}

// mutRetireOwnFence drops the retirement's own fence: an action refused
// for good before any attempt, whose refusal claimed the first attempt's
// key, is retired with that key as the fence, which its own refusal holds,
// so it keeps its once-key for ever although it never ran.
var mutRetireOwnFence bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/toolgate",
		mutant.Def{Name: "toolgate.retire_own_fence", On: &mutRetireOwnFence,
			Check: "an action refused for good by the recheck or the run controls before any attempt frees its once-key: a later call of the same order in another trace runs once"})
}

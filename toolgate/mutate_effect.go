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

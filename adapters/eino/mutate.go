//go:build bkmutate

package eino

import "github.com/blackboardkernel/bk/internal/mutant"

// mutNoEffect puts a call of a caller-driven tool to the gate without the
// Eino tool as its effect. BK_MUTATE=eino.call_effect turns it on.
var mutNoEffect bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/adapters/eino",
		mutant.Def{Name: "eino.call_effect", Check: "a call of the integrator's Eino tool goes to the gate with the tool as its effect, so it runs once when allowed and approved", On: &mutNoEffect})
}

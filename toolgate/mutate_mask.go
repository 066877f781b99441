//go:build bkmutate

package toolgate

import "github.com/blackboardkernel/bk/internal/mutant"

// mutMaskStore stores masked fields as they are, unhashed.
var mutMaskStore bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/toolgate",
		mutant.Def{Name: "toolgate.mask_store", On: &mutMaskStore,
			Check: "a masked field's value never reaches the store: actions, decision records and results hold its keyed hash"})
}

// mutMaskErase makes Keys.Erase keep the erased trace's key (marking the
// trace only).
var mutMaskErase bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/toolgate",
		mutant.Def{Name: "toolgate.mask_erase", On: &mutMaskErase,
			Check: "erasing a trace's mask key destroys it: no key the keyring keeps matches the trace's stored hashes"})
}

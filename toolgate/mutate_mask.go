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

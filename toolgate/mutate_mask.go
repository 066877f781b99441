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

// mutMaskKeyNamespace names every trace's mask key by its trace id alone,
// dropping the namespace: the same trace id in two namespaces shares a key.
var mutMaskKeyNamespace bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/toolgate",
		mutant.Def{Name: "toolgate.mask_key_namespace", On: &mutMaskKeyNamespace,
			Check: "a trace's mask key is its namespace's own: the same trace id in two namespaces has two keys, erased apart"})
}

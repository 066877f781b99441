//go:build bkmutate

package mask

import "github.com/blackboardkernel/bk/internal/mutant"

// The keyring's mutation switches (see internal/mutant for the scheme):
// each turns off one check, so that a test run shows which tests notice.
// The default build declares them as false constants (nomutate.go); each
// is read by one small function (checks.go).
var (
	mutErase        bool
	mutKeyNamespace bool
)

func init() {
	mutant.Register("github.com/blackboardkernel/bk/mask",
		mutant.Def{Name: "mask.erase", On: &mutErase, Also: []string{"github.com/blackboardkernel/bk/toolgate"},
			Check: "erasing a trace's mask key destroys it: no key the keyring keeps matches the trace's stored hashes"},
		mutant.Def{Name: "mask.key_namespace", On: &mutKeyNamespace, Also: []string{"github.com/blackboardkernel/bk/toolgate"},
			Check: "a trace's mask key is its namespace's own: the same trace id in two namespaces has two keys, erased apart"},
	)
}

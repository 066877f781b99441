//go:build bkmutate

package adaptive

import "github.com/blackboardkernel/bk/internal/mutant"

// mutLearnOnce disables the claim that makes a learned constraint's commit
// once per name and namespace (see kernel/mutate.go for the scheme).
var mutLearnOnce bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/adaptive",
		mutant.Def{Name: "adaptive.learn_once", Check: "two learners sharing a store commit a learned constraint once: the commit claims its name in the namespace", On: &mutLearnOnce},
	)
}

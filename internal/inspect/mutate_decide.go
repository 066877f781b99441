//go:build bkmutate

package inspect

import "github.com/blackboardkernel/bk/internal/mutant"

// Mutation switches of bk approve and bk deny (see kernel/mutate.go for
// the scheme).
var mutApprovePending bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/internal/inspect",
		mutant.Def{Name: "inspect.approve_pending", Check: "bk approve and bk deny decide only an action waiting for approval: one already decided, started or done is refused and nothing is written", On: &mutApprovePending},
	)
}

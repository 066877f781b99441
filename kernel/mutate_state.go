//go:build bkmutate

package kernel

import "github.com/blackboardkernel/bk/internal/mutant"

// Mutation switches of the per-trace decision state (see mutate.go for the
// scheme).
var (
	mutStateVersion bool
	mutStateFold    bool
	mutSharedCache  bool
)

func init() {
	mutant.Register("github.com/blackboardkernel/bk/kernel",
		mutant.Def{Name: "state_version", Check: "a batch's trace state is refused unless the trace is still at the version it was derived from (a change the state missed cannot be kept)", On: &mutStateVersion, ByTests: true, Also: []string{"github.com/blackboardkernel/bk/store/memstore"}},
		mutant.Def{Name: "shared_cache", Check: "the persistent constraints a decision enforces are listed again whenever any changed (TraceState.Shared), never taken from a stale cache", On: &mutSharedCache, ByTests: true, Also: []string{"github.com/blackboardkernel/bk/store/memstore"}},
		mutant.Def{Name: "state_fold", Check: "a stored trace state that misses a change (a write the kernel did not make) is not used: the kernel reads the trace", On: &mutStateFold, ByTests: true},
	)
}

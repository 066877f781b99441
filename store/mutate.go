//go:build bkmutate

package store

import "github.com/blackboardkernel/bk/internal/mutant"

// mutTrustAll makes every batch pass Batch.Check as the kernel's own do:
// a caller other than the kernel could then store a record no store may
// hold. The conformance suite's refusals catch it.
var mutTrustAll bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/store",
		mutant.Def{Name: "store_trusts_all", Check: "a store checks every batch but the kernel's own (vouched through a module-internal mark): invalid records from any other caller are refused", On: &mutTrustAll, ByTests: true,
			Also: []string{"github.com/blackboardkernel/bk/store/memstore"}},
	)
}

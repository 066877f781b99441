//go:build bkmutate

package chain

import "github.com/blackboardkernel/bk/internal/mutant"

// The switches of the chain's checks: each one on, a verifier misses the
// attack its test plays.
var mutGap, mutOrder, mutLink, mutStatus, mutHead, mutTail, mutSig, mutSeq, mutBundleBytes bool

func mutSkipGap() bool    { return mutGap }
func mutSkipOrder() bool  { return mutOrder }
func mutSkipLink() bool   { return mutLink }
func mutSkipStatus() bool { return mutStatus }
func mutSkipHead() bool   { return mutHead }
func mutSkipTail() bool   { return mutTail }
func mutSkipSig() bool    { return mutSig }
func mutSkipSeq() bool    { return mutSeq }

func mutSkipBundleBytes() bool { return mutBundleBytes }

func init() {
	const pkg = "github.com/blackboardkernel/bk/chain"
	const m = "github.com/blackboardkernel/bk/"
	// The stores' attack tests tamper with their rows; the ledger's with
	// a whole store's history.
	also := []string{m + "store/sqlitestore", m + "store/pgstore", m + "internal/ledger"}
	signed := []string{m + "internal/ledger", m + "internal/inspect"}
	mutant.Register(pkg,
		mutant.Def{Name: "chain.gap", Check: "a chain with a missing event is broken (a deleted record or status change)", On: &mutGap, ByTests: true, Also: also},
		mutant.Def{Name: "chain.order", Check: "an event out of its position is broken (reordered records)", On: &mutOrder, ByTests: true, Also: also},
		mutant.Def{Name: "chain.link", Check: "an event whose content does not give its recorded link is broken (an edited field)", On: &mutLink, ByTests: true, Also: also},
		mutant.Def{Name: "chain.status", Check: "a status change of a record that is not active in the trace is broken", On: &mutStatus, ByTests: true},
		mutant.Def{Name: "chain.head", Check: "a chain that does not end on a recorded head is broken (a re-chained tail)", On: &mutHead, ByTests: true, Also: also},
		mutant.Def{Name: "chain.tail", Check: "a chain shorter than a recorded head is broken (a truncated tail)", On: &mutTail, ByTests: true, Also: also},
		mutant.Def{Name: "chain.signature", Check: "a checkpoint verifies only under a trusted key's signature", On: &mutSig, ByTests: true, Also: signed},
		mutant.Def{Name: "chain.sequence", Check: "checkpoints follow one another: each names its predecessor's digest (an old checkpoint replayed)", On: &mutSeq, ByTests: true, Also: signed},
		mutant.Def{Name: "chain.bundle_bytes", Check: "a bundle verifies only as the bytes its encoding writes (a value respelled, a field added)", On: &mutBundleBytes, ByTests: true},
	)
}

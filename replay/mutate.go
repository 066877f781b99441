//go:build bkmutate

package replay

import "github.com/blackboardkernel/bk/internal/mutant"

// mutPolicyHash switches off the check of a policy record against its
// hash; see kernel/mutate.go for the scheme. The default build declares
// it as a false constant (nomutate.go).
var mutPolicyHash bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/replay",
		mutant.Def{Name: "replay.policy_hash", On: &mutPolicyHash,
			Check: "a trace is replayed only under a policy record whose snapshot hashes to the hash its decision records name: a record changed in the store is ErrTampered"},
	)
}

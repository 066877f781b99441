//go:build bkmutate

package kernel

import "github.com/blackboardkernel/bk/internal/mutant"

// Mutation switch of the traces reserved to a namespace (see mutate.go for
// the scheme). A file of its own, so that the registry's order in
// mutate.go stays the gate's.
var mutPolicyTraceOpen bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/kernel",
		mutant.Def{Name: "policy_trace_reserved", Check: "trace bk.policy.<namespace> is written only by kernels of that namespace: no other application can take a gate's policy trace (PERMISSION_DENIED)", On: &mutPolicyTraceOpen, ByTests: true,
			Also: []string{"github.com/blackboardkernel/bk/toolgate"}},
	)
}

//go:build bkmutate

package audit

import "github.com/blackboardkernel/bk/internal/mutant"

// mutKernelOnly lets the decoder accept a decision record any role wrote
// (see kernel/mutate.go for the scheme).
var mutKernelOnly bool

func init() {
	mutant.Register("github.com/blackboardkernel/bk/audit",
		mutant.Def{Name: "audit.kernel_only", Check: "a decision record is one only with the kernel's role: one a handle forged is not decoded", On: &mutKernelOnly,
			Also: []string{"github.com/blackboardkernel/bk/toolgate", "github.com/blackboardkernel/bk/kernel"}},
	)
}

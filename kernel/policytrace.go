package kernel

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/ledger"
	"github.com/blackboardkernel/bk/reason"
)

// policyTracePrefix begins the trace ids reserved to one namespace each:
// trace "bk.policy.<namespace>" is where the tool gate records the policy
// snapshots of that namespace (audit.PolicyTrace), and a trace belongs
// to the namespace of its first record. Were any kernel free to write it,
// another application sharing the store could take it with one record and
// stop every gate of that namespace from ever starting.
const policyTracePrefix = "bk.policy."

// checkTraceOwner refuses, with PERMISSION_DENIED, a write to the
// checkpoint trace (ledger.Trace), which only the kernel itself writes,
// and one to a trace reserved to another namespace: a trace id beginning "bk.policy." may be
// written only by a kernel of the namespace it names (the default
// namespace is "bk.policy.default").
func (k *Kernel) checkTraceOwner(op, traceID string) error {
	if traceID == ledger.Trace && !mutCheckpointTraceOpen {
		return newErr(op, "", reason.PermissionDenied, blackboard.ErrPermission,
			fmt.Sprintf("trace %q holds the kernel's signed checkpoints: no handle writes it", traceID))
	}
	if mutPolicyTraceOpen || !strings.HasPrefix(traceID, policyTracePrefix) {
		return nil
	}
	if owner := traceID[len(policyTracePrefix):]; owner != cmp.Or(k.namespace, blackboard.DefaultNamespace) {
		return newErr(op, "", reason.PermissionDenied, blackboard.ErrPermission,
			fmt.Sprintf("trace %q is reserved to namespace %q, not %q", traceID, owner, cmp.Or(k.namespace, blackboard.DefaultNamespace)))
	}
	return nil
}

package kernel_test

import (
	"context"
	"errors"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store/memstore"
)

// A trace "bk.policy.<namespace>" is reserved to that namespace: a kernel
// of any other namespace (the default one included) may not write it, by
// any handle, and the namespace's own kernel may.
func TestAttackPolicyTraceReserved(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	k := func(ns string) *kernel.Kernel {
		k, err := kernel.New(kernel.Config{Store: s, Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	evil, def, desk := k("evil"), k(""), k("desk")
	entry := func(trace string) kernel.Entry {
		return kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: "squat", Payload: blackboard.Payload{"x": true}}
	}
	for _, c := range []struct {
		k     *kernel.Kernel
		trace string
	}{{evil, "bk.policy.desk"}, {evil, "bk.policy.default"}, {def, "bk.policy.desk"}, {desk, "bk.policy.evil"}, {evil, "bk.policy."}} {
		if _, err := c.k.Handle(blackboard.RoleTool, "squat").Write(ctx, entry(c.trace)); !errors.Is(err, blackboard.ErrPermission) || kernel.CodeOf(err) != reason.PermissionDenied {
			t.Errorf("namespace %q wrote %s: %v, want PERMISSION_DENIED", c.k.Namespace(), c.trace, err)
		}
		if _, err := c.k.Proposer(blackboard.RolePlanner, "squat").Submit(ctx, kernel.Entry{TraceID: c.trace, Slot: blackboard.Beliefs, Kind: "b", Payload: blackboard.Payload{"depends_on": []any{}}}); !errors.Is(err, blackboard.ErrPermission) {
			t.Errorf("namespace %q proposed in %s: %v, want PERMISSION_DENIED", c.k.Namespace(), c.trace, err)
		}
	}
	for _, c := range []struct {
		k     *kernel.Kernel
		trace string
	}{{desk, "bk.policy.desk"}, {def, "bk.policy.default"}, {evil, "bk.policy.evil"}, {evil, "bk.policyX"}} {
		if _, err := c.k.Handle(blackboard.RoleTool, "own").Write(ctx, entry(c.trace)); err != nil {
			t.Errorf("namespace %q wrote %s: %v", c.k.Namespace(), c.trace, err)
		}
	}
}

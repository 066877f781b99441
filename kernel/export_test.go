package kernel

import (
	"context"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
)

// ViewFromState and ViewFromRecords are the two ways [Reader.View] reads a
// trace, for the test that they agree (ok false: the state does not hold
// the view).
func (k *Kernel) ViewFromState(ctx context.Context, traceID string, persistent bool) (v View, ok bool, err error) {
	return k.viewFromState(ctx, traceID, persistent, k.nowMS())
}

func (k *Kernel) ViewFromRecords(ctx context.Context, traceID string, persistent bool) (View, error) {
	return k.viewFromRecords(ctx, traceID, persistent, k.nowMS())
}

// getRecord reads the record with that id through r, for the package's
// own tests.
func getRecord(t testing.TB, r Reader, id string) blackboard.Record {
	t.Helper()
	rec, err := r.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return rec
}

// Error is the kernel's typed error, for tests that read its fields.
type Error = opError

// Allowed is the permission table as the kernel reads it, for the test
// that it is the paper's Table 1.
var Allowed = allowed

// Spec is the action spec the kernel holds for a type, for the test that
// New keeps its own copy.
func (k *Kernel) Spec(actionType string) (ActionSpec, bool) { return k.spec(actionType) }

// Namespace is the namespace the kernel works in.
func (k *Kernel) Namespace() string { return k.namespace }

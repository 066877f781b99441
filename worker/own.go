package worker

import (
	"context"
	"iter"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
)

// Own streams, in append order, the records of the trace that h itself
// wrote: same writer name and same role. Proposals appear with their current
// status and reason, so a worker can tell whether it already proposed
// something in this trace and what the kernel decided, even when the
// proposal was rejected and no longer shows in a [kernel.View].
//
// Errors from the store are passed through; a cancelled ctx yields the
// context's error.
func Own(ctx context.Context, h kernel.Handle, traceID string) iter.Seq2[blackboard.Record, error] {
	return func(yield func(blackboard.Record, error) bool) {
		name, role := h.Name(), h.Role()
		for r, err := range h.Trace(ctx, traceID) {
			if err != nil {
				yield(blackboard.Record{}, err)
				return
			}
			if r.Provenance.Writer != name || r.Provenance.Role != role {
				continue
			}
			if !yield(r, nil) {
				return
			}
		}
	}
}

// LastOwn returns the latest record of kind in slot that h wrote in the
// trace, and whether there is one.
func LastOwn(ctx context.Context, h kernel.Handle, traceID string, slot blackboard.Slot, kind string) (blackboard.Record, bool, error) {
	var (
		last  blackboard.Record
		found bool
	)
	for r, err := range Own(ctx, h, traceID) {
		if err != nil {
			return blackboard.Record{}, false, err
		}
		if r.Slot == slot && r.Kind == kind {
			last, found = r, true
		}
	}
	return last, found, nil
}

package storetest

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
)

// faultyStore is a Store whose Apply a test can make fail, either before
// the batch reaches the store or inside the store.
type faultyStore struct {
	blackboard.Store
	fault func(blackboard.Batch) (blackboard.Batch, error)
}

func (f *faultyStore) Apply(ctx context.Context, b blackboard.Batch) error {
	if f.fault != nil {
		var err error
		if b, err = f.fault(b); err != nil {
			return err
		}
	}
	return f.Store.Apply(ctx, b)
}

var errInjected = errors.New("storetest: injected Apply failure")

// runKernel drives a kernel on the store and checks that a belief commit
// is one atomic unit: when the store's Apply fails, neither the evidence
// artifact nor the committed belief exists and the proposal is still
// ACTIVE.
func runKernel(t *testing.T, newStore func(t *testing.T) blackboard.Store) {
	faults := []struct {
		name  string
		fault func(blackboard.Batch) (blackboard.Batch, error)
		want  error
	}{
		{"ApplyFails", func(b blackboard.Batch) (blackboard.Batch, error) { return b, errInjected }, errInjected},
		// The store receives the whole commit followed by an invalidation
		// it must refuse, so it has to undo the parts it already applied.
		{"StoreRefusesTail", func(b blackboard.Batch) (blackboard.Batch, error) {
			b.Invalidations = append(slices.Clip(b.Invalidations), blackboard.Invalidation{
				ID: "beliefs:nowhere:1", Status: blackboard.StatusInvalidated, Reason: blackboard.CodeStaleEvidence,
			})
			return b, nil
		}, blackboard.ErrNotFound},
	}
	for _, f := range faults {
		t.Run("FailedCommitLeavesNoEvidence/"+f.name, func(t *testing.T) {
			ctx := t.Context()
			fs := &faultyStore{Store: open(t, newStore)}
			k, err := kernel.New(kernel.Config{Store: fs, Clock: func() time.Time { return time.UnixMilli(baseTS) }})
			if err != nil {
				t.Fatalf("kernel.New: %v", err)
			}
			t.Cleanup(func() { _ = k.Close() }) // the kernel does not own the store: nothing to report
			const trace = "kernel"
			percept, err := k.Tool("sensor").Write(ctx, kernel.Entry{
				TraceID: trace, Slot: blackboard.Percepts, Kind: "door",
				Payload: blackboard.Payload{"open": true}, Confidence: kernel.Confidence(0.9),
			})
			if err != nil {
				t.Fatalf("percept: %v", err)
			}
			planner := k.Planner("planner")
			proposalID, err := planner.Write(ctx, kernel.Entry{
				TraceID: trace, Slot: blackboard.Beliefs, Kind: "door_open",
				Payload: blackboard.Payload{kernel.KeyValue: true, kernel.KeyDependsOn: []any{"door"}},
			})
			if err != nil {
				t.Fatalf("belief proposal: %v", err)
			}
			proposal := mustGet(t, fs, proposalID)

			fs.fault = f.fault
			d, err := planner.Commit(ctx, trace, proposal.ID)
			if err == nil {
				t.Fatalf("Commit succeeded although the store's Apply failed: %s", show(d))
			}
			wantErr(t, err, f.want, "Commit reports the failure of the store's Apply")
			wantSame(t, len(collect(t, "ListSlot", fs.ListSlot(ctx, blackboard.Evidence, blackboard.Filter{}))), 0,
				"a failed commit leaves no evidence artifact without its belief")
			wantSame(t, ids(collect(t, "ListTrace", fs.ListTrace(ctx, "", trace))), []string{percept, proposal.ID},
				"a failed commit adds no record")
			wantSame(t, mustGet(t, fs, proposal.ID), proposal, "a failed commit leaves the proposal ACTIVE and unchanged")

			fs.fault = nil
			d, err = planner.Commit(ctx, trace, proposal.ID)
			if err != nil || d.Code != blackboard.CodeCommitted {
				t.Fatalf("Commit once the store works: %v, code %s", err, d.Code)
			}
			belief := mustGet(t, fs, d.CommittedID)
			if belief.Slot != blackboard.Beliefs || belief.Mode != blackboard.ModeCommit || belief.Kind != proposal.Kind ||
				belief.Status != blackboard.StatusActive || !reflect.DeepEqual(belief.Payload, proposal.Payload) {
				t.Errorf("a commit stores its belief: %+v", belief)
			}
			if ev := mustGet(t, fs, d.EvidenceID); ev.Slot != blackboard.Evidence || !slices.Contains(belief.EvidenceRefs, ev.ID) {
				t.Errorf("a commit stores its evidence artifact and links the belief to it: artifact %+v, belief refs %v", ev, belief.EvidenceRefs)
			}
			wantSame(t, mustGet(t, fs, proposal.ID).Reason, blackboard.CodeSupersededByCommit, "a commit supersedes its proposal")
		})
	}
}

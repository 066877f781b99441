package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// faultyStore is a Store whose Apply a test can make fail, either before
// the batch reaches the store or inside the store.
type faultyStore struct {
	store.Store
	fault func(store.Batch) (store.Batch, error)
}

func (f *faultyStore) Apply(ctx context.Context, b store.Batch) error {
	if f.fault != nil {
		var err error
		if b, err = f.fault(b); err != nil {
			return err
		}
	}
	return f.Store.Apply(ctx, b)
}

var errInjected = errors.New("storeflow: injected Apply failure")

// faultTS is the time of the kernel of runKernel.
const faultTS = 1_736_000_000_000

// runKernel drives a kernel on the store and checks that a belief commit
// is one atomic unit: when the store's Apply fails, neither the evidence
// artifact nor the committed belief exists and the proposal is still
// ACTIVE.
func runKernel(t *testing.T, newStore func(t *testing.T) store.Store) {
	faults := []struct {
		name  string
		fault func(store.Batch) (store.Batch, error)
		want  error
	}{
		{"ApplyFails", func(b store.Batch) (store.Batch, error) { return b, errInjected }, errInjected},
		// The store receives the whole commit followed by an invalidation
		// it must refuse, so it has to undo the parts it already applied.
		{"StoreRefusesTail", func(b store.Batch) (store.Batch, error) {
			b.Invalidations = append(slices.Clip(b.Invalidations), store.Invalidation{
				ID: "beliefs:nowhere:1", Status: blackboard.StatusInvalidated, Reason: reason.StaleEvidence,
			})
			return b, nil
		}, blackboard.ErrNotFound},
	}
	for _, f := range faults {
		t.Run("FailedCommitLeavesNoEvidence/"+f.name, func(t *testing.T) {
			ctx := t.Context()
			fs := &faultyStore{Store: openStore(t, newStore)}
			k, err := kernel.New(kernel.Config{Store: fs, Clock: func() time.Time { return time.UnixMilli(faultTS) }})
			if err != nil {
				t.Fatalf("kernel.New: %v", err)
			}
			t.Cleanup(func() { _ = k.Close() }) // the kernel does not own the store: nothing to report
			const trace = "kernel"
			percept, err := k.Handle(blackboard.RoleTool, "sensor").Write(ctx, kernel.Entry{
				TraceID: trace, Slot: blackboard.Percepts, Kind: "door",
				Payload: blackboard.Payload{"open": true}, Confidence: new(0.9),
			})
			if err != nil {
				t.Fatalf("percept: %v", err)
			}
			planner := k.Proposer(blackboard.RolePlanner, "planner")
			proposalID, err := planner.Write(ctx, kernel.Entry{
				TraceID: trace, Slot: blackboard.Beliefs, Kind: "door_open",
				Payload: blackboard.Payload{"value": true, "depends_on": []any{"door"}},
			})
			if err != nil {
				t.Fatalf("belief proposal: %v", err)
			}
			proposal := storeGet(t, fs, proposalID)

			fs.fault = f.fault
			d, err := planner.Commit(ctx, trace, proposal.ID)
			if err == nil {
				t.Fatalf("Commit succeeded although the store's Apply failed: %s", show(d))
			}
			wantWraps(t, err, f.want, "Commit reports the failure of the store's Apply")
			wantSame(t, len(collect(t, "ListSlot", fs.ListSlot(ctx, blackboard.Evidence, store.Filter{}))), 0,
				"a failed commit leaves no evidence artifact without its belief")
			wantSame(t, ids(collect(t, "ListTrace", fs.ListTrace(ctx, "", trace))), []string{percept, proposal.ID},
				"a failed commit adds no record")
			wantSame(t, storeGet(t, fs, proposal.ID), proposal, "a failed commit leaves the proposal ACTIVE and unchanged")

			fs.fault = nil
			d, err = planner.Commit(ctx, trace, proposal.ID)
			if err != nil || d.Code != reason.Committed {
				t.Fatalf("Commit once the store works: %v, code %s", err, d.Code)
			}
			belief := storeGet(t, fs, d.CommittedID)
			if belief.Slot != blackboard.Beliefs || belief.Mode != blackboard.ModeCommit || belief.Kind != proposal.Kind ||
				belief.Status != blackboard.StatusActive || !reflect.DeepEqual(belief.Payload, proposal.Payload) {
				t.Errorf("a commit stores its belief: %+v", belief)
			}
			if ev := storeGet(t, fs, d.EvidenceID); ev.Slot != blackboard.Evidence || !slices.Contains(belief.EvidenceRefs, ev.ID) {
				t.Errorf("a commit stores its evidence artifact and links the belief to it: artifact %+v, belief refs %v", ev, belief.EvidenceRefs)
			}
			wantSame(t, storeGet(t, fs, proposal.ID).Reason, reason.SupersededByCommit, "a commit supersedes its proposal")
		})
	}
}

// storeGet returns the record of s with that id, or fails t.
func storeGet(t *testing.T, s store.Store, id string) blackboard.Record {
	t.Helper()
	r, err := s.Get(t.Context(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return r
}

// show renders v as JSON for a failure message.
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

// wantSame reports unless got equals want, naming the contract.
func wantSame(t *testing.T, got, want any, contract string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got  %s\n want %s", contract, show(got), show(want))
	}
}

// collect drains a listing; what names it in a failure.
func collect(t *testing.T, what string, seq iter.Seq2[blackboard.Record, error]) []blackboard.Record {
	t.Helper()
	var out []blackboard.Record
	for r, err := range seq {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		out = append(out, r)
	}
	return out
}

// ids returns the ids of recs.
func ids(recs []blackboard.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}

// wantWraps reports unless err wraps target; contract names the rule.
func wantWraps(t *testing.T, err, target error, contract string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got error %v, want one wrapping %q", contract, err, target)
	}
}

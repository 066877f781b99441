package storetest

import (
	"context"
	"iter"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// firstErr returns the error a listing yields first, or nil if it yields a
// record first or nothing.
func firstErr(seq iter.Seq2[blackboard.Record, error]) error {
	for _, err := range seq {
		return err
	}
	return nil
}

// everyMethod calls each Store method except Close with ctx on a store that
// holds the records of a commitScene of trace "life", and reports each
// result unless it wraps want.
func everyMethod(t *testing.T, s store.Store, ctx context.Context, c commitScene, want error, contract string) {
	t.Helper()
	fresh := record("life", blackboard.Actions, "move", 9)
	_, err := s.Get(ctx, c.percept.ID)
	wantErr(t, err, want, contract+": Get")
	_, err = s.FindActive(ctx, "", "life", blackboard.Percepts, "door")
	wantErr(t, err, want, contract+": FindActive")
	wantErr(t, appendOne(ctx, s, fresh), want, contract+": Apply of one record")
	wantErr(t, setStatus(ctx, s, c.percept.ID, blackboard.StatusInvalidated, reason.StaleEvidence), want, contract+": Apply of one status change")
	wantErr(t, s.Apply(ctx, c.batch), want, contract+": Apply")
	wantErr(t, firstErr(s.ListTrace(ctx, "", "life")), want, contract+": ListTrace yields the error first")
	wantErr(t, firstErr(s.ListSlot(ctx, blackboard.Percepts, store.Filter{})), want, contract+": ListSlot yields the error first")
	_, err = s.ClaimedBy(ctx, "", "refund:ch_1")
	wantErr(t, err, want, contract+": ClaimedBy")
	claimed := c.batch
	claimed.Claims = []store.Claim{{Key: "refund:ch_2", RecordID: c.belief.ID}}
	wantErr(t, s.Apply(ctx, claimed), want, contract+": Apply of a batch with claims")
	if ss, ok := s.(store.StateStore); ok {
		_, err = ss.ReadState(ctx, "", "life")
		wantErr(t, err, want, contract+": ReadState")
		stated := c.batch
		stated.Trace, stated.TraceLen, stated.State = "life", len(c.batch.Appends), testState("s")
		wantErr(t, s.Apply(ctx, stated), want, contract+": Apply of a batch with a state")
	}
}

func testCancelledContext(t *testing.T, s store.Store) {
	c := newCommitScene(t, s, "life")
	before := dump(t, s)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	everyMethod(t, s, ctx, c, context.Canceled, "a method called with a cancelled context returns the context's error")
	unchanged(t, s, before, "a method called with a cancelled context changes nothing")
}

func testClosed(t *testing.T, s store.Store) {
	c := newCommitScene(t, s, "life")
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	everyMethod(t, s, t.Context(), c, blackboard.ErrClosed, "after Close every method returns ErrClosed")
	wantErr(t, s.Close(), blackboard.ErrClosed, "after Close every method returns ErrClosed: Close")
}

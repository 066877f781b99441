package storetest

import (
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// commitScene is the shape of a belief commit: a percept, a belief
// proposal, a percept whose TTL has run out, a record already invalidated,
// and the batch the kernel would apply (evidence artifact + committed
// belief, expiry + superseded proposal).
type commitScene struct {
	percept, proposal, ttl, dead blackboard.Record
	evidence, belief             blackboard.Record
	batch                        store.Batch
}

func newCommitScene(t *testing.T, s store.Store, trace string) commitScene {
	var c commitScene
	c.percept = record(trace, blackboard.Percepts, "door", 1)
	c.proposal = record(trace, blackboard.Beliefs, "door_open", 2)
	c.proposal.Mode, c.proposal.Reason = blackboard.ModePropose, ""
	c.ttl = record(trace, blackboard.Percepts, "battery", 3)
	c.ttl.Provenance.TTLMS = 10
	c.dead = record(trace, blackboard.Percepts, "camera", 4)
	mustAppend(t, s, c.percept, c.proposal, c.ttl, c.dead)
	mustInvalidate(t, s, c.dead.ID, blackboard.StatusInvalidated, reason.StaleEvidence)
	c.dead = invalidated(c.dead, blackboard.StatusInvalidated, reason.StaleEvidence)

	c.evidence = record(trace, blackboard.Evidence, "belief_validation", 5)
	c.evidence.Provenance.InputRefs = []string{c.percept.ID}
	c.belief = record(trace, blackboard.Beliefs, "door_open", 6)
	c.belief.Provenance.InputRefs = []string{c.proposal.ID, c.percept.ID}
	c.belief.EvidenceRefs = []string{c.evidence.ID}
	c.batch = store.Batch{
		Appends: []blackboard.Record{c.evidence, c.belief},
		Invalidations: []store.Invalidation{
			{ID: c.ttl.ID, Status: blackboard.StatusExpired, Reason: reason.TTLExpired},
			{ID: c.proposal.ID, Status: blackboard.StatusInvalidated, Reason: reason.SupersededByCommit},
		},
	}
	return c
}

func testApply(t *testing.T, s store.Store) {
	c := newCommitScene(t, s, "apply")
	before := dump(t, s)
	if err := s.Apply(t.Context(), store.Batch{}); err != nil {
		t.Errorf("Apply of an empty batch: %v", err)
	}
	unchanged(t, s, before, "an empty batch changes nothing")

	if err := s.Apply(t.Context(), c.batch); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	want := []blackboard.Record{
		c.percept,
		invalidated(c.proposal, blackboard.StatusInvalidated, reason.SupersededByCommit),
		invalidated(c.ttl, blackboard.StatusExpired, reason.TTLExpired),
		c.dead,
		c.evidence,
		c.belief,
	}
	wantSame(t, collect(t, "ListTrace", s.ListTrace(t.Context(), "", "apply")), want,
		"Apply lands every append (in batch order) and every status change")
}

func testApplyAtomic(t *testing.T, s store.Store) {
	c := newCommitScene(t, s, "atomic")
	with := func(appends []blackboard.Record, invs []store.Invalidation) store.Batch {
		return store.Batch{Appends: appends, Invalidations: invs}
	}
	dupOfStored := c.belief
	dupOfStored.ID = c.percept.ID
	dupInBatch := c.evidence
	dupInBatch.Payload = blackboard.Payload{"other": true}
	malformed := c.belief
	malformed.ID, malformed.Kind = "beliefs:atomic:7", ""
	expire, supersede := c.batch.Invalidations[0], c.batch.Invalidations[1]
	inv := func(id string, st blackboard.Status, why reason.Code) store.Invalidation {
		return store.Invalidation{ID: id, Status: st, Reason: why}
	}
	failing := []struct {
		name  string
		batch store.Batch
		want  error
	}{
		{"an append of a stored id in the middle",
			with([]blackboard.Record{c.evidence, dupOfStored, c.belief}, c.batch.Invalidations), store.ErrDuplicateID},
		{"two appends of one id",
			with([]blackboard.Record{c.evidence, c.belief, dupInBatch}, c.batch.Invalidations), store.ErrDuplicateID},
		{"an invalidation of a non-active record in the middle",
			with(c.batch.Appends, []store.Invalidation{expire, inv(c.dead.ID, blackboard.StatusInvalidated, reason.StaleEvidence), supersede}), store.ErrNotActive},
		{"two invalidations of one record",
			with(c.batch.Appends, []store.Invalidation{expire, supersede, inv(c.ttl.ID, blackboard.StatusInvalidated, reason.StaleEvidence)}), store.ErrNotActive},
		{"an invalidation of an unknown id in the middle",
			with(c.batch.Appends, []store.Invalidation{expire, inv("beliefs:atomic:99", blackboard.StatusInvalidated, reason.StaleEvidence), supersede}), blackboard.ErrNotFound},
		{"an invalidation of a record the batch itself appends",
			with(c.batch.Appends, []store.Invalidation{expire, inv(c.evidence.ID, blackboard.StatusInvalidated, reason.StaleEvidence), supersede}), blackboard.ErrNotFound},
		{"a malformed record in the middle",
			with([]blackboard.Record{c.evidence, malformed, c.belief}, c.batch.Invalidations), blackboard.ErrInvalidInput},
		{"an invalidation to ACTIVE",
			with(c.batch.Appends, []store.Invalidation{expire, inv(c.proposal.ID, blackboard.StatusActive, reason.Committed)}), blackboard.ErrInvalidInput},
		{"an invalidation without a reason",
			with(c.batch.Appends, []store.Invalidation{expire, inv(c.proposal.ID, blackboard.StatusInvalidated, "")}), blackboard.ErrInvalidInput},
	}
	before := dump(t, s)
	for _, f := range failing {
		wantErr(t, s.Apply(t.Context(), f.batch), f.want, "Apply refuses a batch with "+f.name)
		if _, err := s.Get(t.Context(), c.evidence.ID); err == nil {
			t.Errorf("Apply is all or nothing: a batch with %s left an evidence artifact without its belief", f.name)
		}
		unchanged(t, s, before, "Apply is all or nothing: a batch with "+f.name+" changes nothing")
	}

	if err := s.Apply(t.Context(), c.batch); err != nil {
		t.Fatalf("Apply of the batch without the fault: %v", err)
	}
	wantSame(t, mustGet(t, s, c.belief.ID), c.belief, "the batch without the fault commits its belief")
	wantSame(t, mustGet(t, s, c.evidence.ID), c.evidence, "the batch without the fault commits its evidence")
}

// testApplyConditional checks Batch.Trace/TraceLen: a batch whose author
// read a trace that has since grown is refused whole with ErrConflict.
func testApplyConditional(t *testing.T, s store.Store) {
	c := newCommitScene(t, s, "cond")
	before := dump(t, s)
	stale := c.batch
	stale.Trace, stale.TraceLen = "cond", 3 // the scene holds 4 records
	wantErr(t, s.Apply(t.Context(), stale), blackboard.ErrConflict, "a batch conditional on a stale trace length is refused")
	unchanged(t, s, before, "a refused conditional batch changes nothing")

	other := record("cond-other", blackboard.Percepts, "door", 1)
	fresh := c.batch
	fresh.Appends = append(fresh.Appends[:len(fresh.Appends):len(fresh.Appends)], other)
	fresh.Trace, fresh.TraceLen = "cond", 4
	if err := s.Apply(t.Context(), fresh); err != nil {
		t.Fatalf("a batch conditional on the current trace length (appending to another trace too) must apply: %v", err)
	}
	if got := len(collect(t, "ListTrace", s.ListTrace(t.Context(), "", "cond"))); got != 6 {
		t.Errorf("after the conditional batch the trace holds %d records, want 6", got)
	}
	empty := store.Batch{Trace: "never-written", TraceLen: 1}
	wantErr(t, s.Apply(t.Context(), empty), blackboard.ErrConflict, "a condition on an unknown trace's length is checked even with nothing to write")
}

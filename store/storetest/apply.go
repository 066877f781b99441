package storetest

import (
	"testing"

	"github.com/blackboardkernel/bk/kernel"
)

// commitScene is the shape of a belief commit: a percept, a belief
// proposal, a percept whose TTL has run out, a record already invalidated,
// and the batch the kernel would apply (evidence artifact + committed
// belief, expiry + superseded proposal).
type commitScene struct {
	percept, proposal, ttl, dead kernel.Record
	evidence, belief             kernel.Record
	batch                        kernel.Batch
}

func newCommitScene(t *testing.T, s kernel.Store, trace string) commitScene {
	var c commitScene
	c.percept = record(trace, kernel.Percepts, "door", 1)
	c.proposal = record(trace, kernel.Beliefs, "door_open", 2)
	c.proposal.Mode, c.proposal.Reason = kernel.ModePropose, ""
	c.ttl = record(trace, kernel.Percepts, "battery", 3)
	c.ttl.Provenance.TTLMS = 10
	c.dead = record(trace, kernel.Percepts, "camera", 4)
	mustAppend(t, s, c.percept, c.proposal, c.ttl, c.dead)
	mustInvalidate(t, s, c.dead.ID, kernel.StatusInvalidated, kernel.CodeStaleEvidence)
	c.dead = invalidated(c.dead, kernel.StatusInvalidated, kernel.CodeStaleEvidence)

	c.evidence = record(trace, kernel.Evidence, "belief_validation", 5)
	c.evidence.Provenance.InputRefs = []string{c.percept.ID}
	c.belief = record(trace, kernel.Beliefs, "door_open", 6)
	c.belief.Provenance.InputRefs = []string{c.proposal.ID, c.percept.ID}
	c.belief.EvidenceRefs = []string{c.evidence.ID}
	c.batch = kernel.Batch{
		Appends: []kernel.Record{c.evidence, c.belief},
		Invalidations: []kernel.Invalidation{
			{ID: c.ttl.ID, Status: kernel.StatusExpired, Reason: kernel.CodeTTLExpired},
			{ID: c.proposal.ID, Status: kernel.StatusInvalidated, Reason: kernel.CodeSupersededByCommit},
		},
	}
	return c
}

func testApply(t *testing.T, s kernel.Store) {
	c := newCommitScene(t, s, "apply")
	before := dump(t, s)
	if err := s.Apply(t.Context(), kernel.Batch{}); err != nil {
		t.Errorf("Apply of an empty batch: %v", err)
	}
	unchanged(t, s, before, "an empty batch changes nothing")

	if err := s.Apply(t.Context(), c.batch); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	want := []kernel.Record{
		c.percept,
		invalidated(c.proposal, kernel.StatusInvalidated, kernel.CodeSupersededByCommit),
		invalidated(c.ttl, kernel.StatusExpired, kernel.CodeTTLExpired),
		c.dead,
		c.evidence,
		c.belief,
	}
	wantSame(t, collect(t, "ListTrace", s.ListTrace(t.Context(), "apply")), want,
		"Apply lands every append (in batch order) and every status change")
}

func testApplyAtomic(t *testing.T, s kernel.Store) {
	c := newCommitScene(t, s, "atomic")
	with := func(appends []kernel.Record, invs []kernel.Invalidation) kernel.Batch {
		return kernel.Batch{Appends: appends, Invalidations: invs}
	}
	dupOfStored := c.belief
	dupOfStored.ID = c.percept.ID
	dupInBatch := c.evidence
	dupInBatch.Payload = kernel.Payload{"other": true}
	malformed := c.belief
	malformed.ID, malformed.Kind = "beliefs:atomic:7", ""
	expire, supersede := c.batch.Invalidations[0], c.batch.Invalidations[1]
	inv := func(id string, st kernel.Status, reason kernel.Code) kernel.Invalidation {
		return kernel.Invalidation{ID: id, Status: st, Reason: reason}
	}
	failing := []struct {
		name  string
		batch kernel.Batch
		want  error
	}{
		{"an append of a stored id in the middle",
			with([]kernel.Record{c.evidence, dupOfStored, c.belief}, c.batch.Invalidations), kernel.ErrDuplicateID},
		{"two appends of one id",
			with([]kernel.Record{c.evidence, c.belief, dupInBatch}, c.batch.Invalidations), kernel.ErrDuplicateID},
		{"an invalidation of a non-active record in the middle",
			with(c.batch.Appends, []kernel.Invalidation{expire, inv(c.dead.ID, kernel.StatusInvalidated, kernel.CodeStaleEvidence), supersede}), kernel.ErrNotActive},
		{"two invalidations of one record",
			with(c.batch.Appends, []kernel.Invalidation{expire, supersede, inv(c.ttl.ID, kernel.StatusInvalidated, kernel.CodeStaleEvidence)}), kernel.ErrNotActive},
		{"an invalidation of an unknown id in the middle",
			with(c.batch.Appends, []kernel.Invalidation{expire, inv("beliefs:atomic:99", kernel.StatusInvalidated, kernel.CodeStaleEvidence), supersede}), kernel.ErrNotFound},
		{"an invalidation of a record the batch itself appends",
			with(c.batch.Appends, []kernel.Invalidation{expire, inv(c.evidence.ID, kernel.StatusInvalidated, kernel.CodeStaleEvidence), supersede}), kernel.ErrNotFound},
		{"a malformed record in the middle",
			with([]kernel.Record{c.evidence, malformed, c.belief}, c.batch.Invalidations), kernel.ErrInvalidInput},
		{"an invalidation to ACTIVE",
			with(c.batch.Appends, []kernel.Invalidation{expire, inv(c.proposal.ID, kernel.StatusActive, kernel.CodeCommitted)}), kernel.ErrInvalidInput},
		{"an invalidation without a reason",
			with(c.batch.Appends, []kernel.Invalidation{expire, inv(c.proposal.ID, kernel.StatusInvalidated, "")}), kernel.ErrInvalidInput},
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
func testApplyConditional(t *testing.T, s kernel.Store) {
	c := newCommitScene(t, s, "cond")
	before := dump(t, s)
	stale := c.batch
	stale.Trace, stale.TraceLen = "cond", 3 // the scene holds 4 records
	wantErr(t, s.Apply(t.Context(), stale), kernel.ErrConflict, "a batch conditional on a stale trace length is refused")
	unchanged(t, s, before, "a refused conditional batch changes nothing")

	other := record("cond-other", kernel.Percepts, "door", 1)
	fresh := c.batch
	fresh.Appends = append(fresh.Appends[:len(fresh.Appends):len(fresh.Appends)], other)
	fresh.Trace, fresh.TraceLen = "cond", 4
	if err := s.Apply(t.Context(), fresh); err != nil {
		t.Fatalf("a batch conditional on the current trace length (appending to another trace too) must apply: %v", err)
	}
	if got := len(collect(t, "ListTrace", s.ListTrace(t.Context(), "cond"))); got != 6 {
		t.Errorf("after the conditional batch the trace holds %d records, want 6", got)
	}
	empty := kernel.Batch{Trace: "never-written", TraceLen: 1}
	wantErr(t, s.Apply(t.Context(), empty), kernel.ErrConflict, "a condition on an unknown trace's length is checked even with nothing to write")
}

package kernel

import (
	"context"

	"github.com/blackboardkernel/bk/blackboard"
)

// Validator is a custom check that runs after the kernel's built-in
// validation has passed a proposal and before it is committed. It returns
// the zero [Cause] to let the proposal through, or a Cause with a code
// (and, if it likes, the record at fault, the rule's name and a detail) to
// reject it. Validators
// are called concurrently and must be safe for that; they must not call
// back into the kernel.
type Validator interface {
	Validate(ctx context.Context, c Candidate) Cause
}

// ValidatorFunc adapts a function to [Validator].
type ValidatorFunc func(ctx context.Context, c Candidate) Cause

// Validate calls f.
func (f ValidatorFunc) Validate(ctx context.Context, c Candidate) Cause { return f(ctx, c) }

// Candidate is a proposal that passed the built-in checks, with read access
// to its trace as the kernel saw it when deciding. Its methods return data
// the validator must not modify.
type Candidate struct {
	snap     *snapshot
	proposal *blackboard.Record
	// beliefs are the committed beliefs a plan or action rests on.
	beliefs []*blackboard.Record
}

// Proposal returns the proposal being decided: its slot, kind, payload,
// provenance and references. Its payload and reference lists are the
// kernel's and must not be modified (Clone gives a copy).
func (c Candidate) Proposal() blackboard.Record { return *c.proposal }

// Committed returns a copy of the latest committed record of kind in slot
// of the trace, if it is active.
func (c Candidate) Committed(slot blackboard.Slot, kind string) (blackboard.Record, bool) {
	r := c.snap.latest(slot, kind, committedActive)
	if r == nil {
		return blackboard.Record{}, false
	}
	return r.Clone(), true
}

// Percepts returns the current observation of every percept kind in the
// trace (the latest committed one that is not invalidated), by kind. The
// payloads must not be modified.
func (c Candidate) Percepts() map[string]blackboard.Payload {
	return c.snap.heads(blackboard.Percepts, isObservation)
}

// Beliefs returns the payload of every committed, active belief of the
// trace, by kind. The payloads must not be modified.
func (c Candidate) Beliefs() map[string]blackboard.Payload {
	return c.snap.heads(blackboard.Beliefs, committedActive)
}

// Grounds returns copies of the committed beliefs a plan or action rests
// on, in the order it declares them (none for beliefs and predictions), so
// that a validator can check them again against the current percepts.
func (c Candidate) Grounds() []blackboard.Record {
	out := make([]blackboard.Record, len(c.beliefs))
	for i, b := range c.beliefs {
		out[i] = b.Clone()
	}
	return out
}

// heads returns the payloads of the heads of slot that keep accepts, by
// kind.
func (s *snapshot) heads(slot blackboard.Slot, keep func(*blackboard.Record) bool) map[string]blackboard.Payload {
	out := make(map[string]blackboard.Payload)
	for i := range s.st.heads {
		if r := s.st.heads[i].rec; r.Slot == slot && keep(r) {
			out[r.Kind] = r.Payload
		}
	}
	return out
}

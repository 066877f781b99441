package kernel

import "github.com/blackboardkernel/bk/reason"

// Decision is the kernel's answer to a commit request. A refusal says why
// as data: the code, the constraint or rule that decided, the record that
// failed, and the chain of causes down to the root.
type Decision struct {
	// ID identifies the decision: "decision:" + the proposal id (a
	// proposal is decided once).
	ID string `json:"id"`
	// Code is COMMITTED (PLAN_FEASIBLE for plans) or the rejection code.
	Code reason.Code `json:"code"`
	// ProposalID is the proposal decided. After the decision it is
	// INVALIDATED: with SUPERSEDED_BY_COMMIT when committed, else with Code.
	ProposalID string `json:"proposal_id"`
	// CommittedID is the id of the committed record; empty when the
	// proposal was rejected. [Reader.Get] reads the record (a copy); the
	// kernel hands back ids, not copies, so that a caller that needs no
	// more than the id pays for no more.
	CommittedID string `json:"committed_id,omitempty"`
	// EvidenceID is the artifact the kernel wrote for a committed belief.
	EvidenceID string `json:"evidence_id,omitempty"`
	// Appended holds the ids of the records that followed the decision in
	// its batch ([Governor.Submit]), in order. With ProposalID, CommittedID
	// and EvidenceID it names every record the decision appended, so that
	// no caller searches the trace for them.
	Appended []string `json:"appended,omitempty"`
	// Constraints names the constraints in force when a plan or an action
	// was decided by a [Governor.Submit] with entries to follow it (what a
	// decision record lists); empty otherwise, so that a plain decision
	// does not pay for the list.
	Constraints []string `json:"constraints,omitempty"`
	// Rule names the constraint or rule that decided a refusal, if one did.
	Rule string `json:"rule,omitempty"`
	// Failed is the id of the record that failed the check: the percept
	// for an evidence code, the constraint, the rejected belief proposal
	// behind NO_COMMITTED_BELIEF, the action that used up a once-key or,
	// for a used-up observation, the earliest committed action of the type
	// that rests on one the proposal rests on.
	Failed string `json:"failed,omitempty"`
	// Detail is a short human-readable explanation (a validator's own).
	Detail string `json:"detail,omitempty"`
	// Causes is the chain below Code, outermost first, root cause last:
	// for NO_COMMITTED_BELIEF it holds the belief's rejection
	// (STALE_EVIDENCE on the percept). Empty when Code is the root cause.
	Causes []Cause `json:"causes,omitempty"`
}

// Cause is one link of a refusal's causal chain. It is also a
// [Validator]'s answer: the zero Cause (or an OK code) lets the proposal
// through; any other code rejects it, and Record (as [Decision.Failed]),
// Rule and Detail join the [Decision].
type Cause struct {
	Code   reason.Code `json:"code"`
	Record string      `json:"record,omitempty"` // the record the code is about
	Rule   string      `json:"rule,omitempty"`   // the constraint or rule, if one decided
	Detail string      `json:"detail,omitempty"`
}

// Committed reports whether the proposal was committed.
func (d Decision) Committed() bool { return d.Code.OK() }

// RootCause returns the deepest cause of the decision: the last of Causes,
// or the decision's own code, rule and failed record when it has none.
func (d Decision) RootCause() Cause {
	if n := len(d.Causes); n > 0 {
		return d.Causes[n-1]
	}
	return Cause{Code: d.Code, Record: d.Failed, Rule: d.Rule, Detail: d.Detail}
}

// rejects reports whether a validator's answer c objects to the proposal.
func (c Cause) rejects() bool { return c.Code != "" && !c.Code.OK() }

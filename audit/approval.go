package audit

import (
	"fmt"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
)

// KindApproval is the evidence kind of an approval record.
const KindApproval = "approval"

// Verdict is an approver's answer: [Approved] or [Denied]. Its values are
// stable strings, stored as they are in an approval record.
type Verdict string

// The two answers an approver gives.
const (
	Approved Verdict = "approved"
	Denied   Verdict = "denied"
)

// MaxApprovalTTL bounds how long an approval stays valid ([Approval.TTL]).
const MaxApprovalTTL = 30 * 24 * time.Hour

// The payload keys of an approval record.
const (
	keyActionID = "action_id"
	keyDigest   = "digest"
	keyDecision = "decision"
	keyApprover = "approver"
	keyNote     = "note"
)

// Approval is an approver's answer about a committed action: it binds the
// action, the digest of its arguments, the approver's identity and an
// expiry. The tool gate checks it before it writes one and again before
// the action runs.
type Approval struct {
	// ID is the evidence record holding it (set by [ApprovalOf]).
	ID       string
	TraceID  string
	ActionID string
	// Digest is the digest of the action's arguments the answer binds.
	Digest string
	// Decision is [Approved] or [Denied].
	Decision Verdict
	Approver string
	Note     string
	// TTL is how long the answer stays valid: at most [MaxApprovalTTL].
	TTL time.Duration
	// TimeMS is when it was written (set by [ApprovalOf]).
	TimeMS int64
}

// Follow encodes a as the evidence record the Governor appends with the
// approver's role, naming the action. It fails with
// [blackboard.ErrInvalidInput] when a has no trace, action, approver or a
// decision other than [Approved] and [Denied].
func (a Approval) Follow() (kernel.Follow, error) {
	if a.TraceID == "" || a.ActionID == "" || a.Approver == "" || (a.Decision != Approved && a.Decision != Denied) {
		return kernel.Follow{}, fmt.Errorf("%w: audit: an approval needs a trace, an action, an approver and a decision", blackboard.ErrInvalidInput)
	}
	return kernel.Follow{Role: blackboard.RoleApprover, Writer: a.Approver, Entry: kernel.Entry{
		TraceID: a.TraceID, Slot: blackboard.Evidence, Kind: KindApproval, InputRefs: []string{a.ActionID}, TTL: a.TTL,
		Payload: blackboard.Payload{keyActionID: a.ActionID, keyDigest: a.Digest, keyDecision: string(a.Decision), keyApprover: a.Approver, keyNote: a.Note},
	}}, nil
}

// ApprovalOf decodes the approval held by rec. ok is false unless rec is
// an evidence record of kind [KindApproval] written with the approver's
// role (which only the Governor writes).
func ApprovalOf(rec blackboard.Record) (a Approval, ok bool) {
	if rec.Slot != blackboard.Evidence || rec.Kind != KindApproval || rec.Provenance.Role != blackboard.RoleApprover {
		return Approval{}, false
	}
	str := func(key string) string { s, _ := rec.Payload[key].(string); return s }
	return Approval{
		ID: rec.ID, TraceID: rec.Provenance.TraceID, ActionID: str(keyActionID), Digest: str(keyDigest), Decision: Verdict(str(keyDecision)),
		Approver: str(keyApprover), Note: str(keyNote), TTL: time.Duration(rec.Provenance.TTLMS) * time.Millisecond,
		TimeMS: rec.Provenance.TimestampMS,
	}, true
}

// Pending is a committed action that waits for an approver, as the tool
// gate lists it (toolgate's Gate.Pending): what the person needs to
// decide it, and what their answer (an [Approval]) names.
type Pending struct {
	ActionID string // the committed action, to approve
	TraceID  string // its trace, to approve in
	Tool     string // the tool called
	// Caller is the caller that made the call; its writer ([audit.CallerWriter]) may
	// not approve it.
	Caller string
	CallID string // the framework's call id, when it gave one
	// Args are the committed arguments; Digest their digest
	// (toolgate's ArgsDigest), which an approval binds.
	Args   blackboard.Payload
	Digest string
	// Reason says why the call needs approval: "always", or the rule.
	Reason string
	// Decision is the latest answer recorded on the action, nil while
	// none is: an approval it waits to run under, a denial it waits to be
	// escalated for, or an approval that expired unused (past
	// Decision.TimeMS + Decision.TTL), which a new answer may supersede.
	Decision *Approval
}

package toolgate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/kernelhook"
)

// ErrDecided: an [Approver] was asked to decide an action that a decision
// or its outcome already settles. Nothing is written. The error is a
// *decidedError, which says what settles the action.
var ErrDecided = errors.New("toolgate: action already decided")

// settled says what settles an action that a new decision is refused on
// (decidedError). The values are stable strings.
type settled string

// What settles an action. Only an approval that expired before any attempt
// used it, on an action with no attempt and no result, leaves room for a
// new decision.
const (
	// settledConcurrent: another decision on the action, made at the same
	// moment (another console, bk approve, another process), was written
	// first.
	settledConcurrent settled = "concurrent"
	// settledDenied: the action was denied; a denial is final.
	settledDenied settled = "denied"
	// settledApproved: an approval of the action is in force; a new
	// decision is possible only once it expires unused.
	settledApproved settled = "approved"
	// settledUsed: the action's approval was used by its first attempt.
	settledUsed settled = "used"
	// settledFallback: the action was escalated (denied or its approval
	// expired) and the safe fallback follows it.
	settledFallback settled = "fallback"
	// settledClosed: the action has an attempt or a result without an
	// approval of its own (it ran without one, or was refused for good).
	settledClosed settled = "closed"
)

// decidedError is the error of a decision refused because the action is
// settled. It wraps [ErrDecided] for errors.Is; a console shows Error() or
// words Why itself.
type decidedError struct {
	ActionID string
	// Record is the record that settles the action: the decision in
	// force or written first, the attempt that used the approval, or the
	// action's escalation or result.
	Record string
	Why    settled
}

func (e *decidedError) Error() string {
	why := map[settled]string{
		settledConcurrent: "another decision was recorded first",
		settledDenied:     "it was denied",
		settledApproved:   "an approval is in force (a new decision is possible once it expires unused)",
		settledUsed:       "its approval was used",
		settledFallback:   "it was escalated to the safe fallback",
		settledClosed:     "it has an attempt or a result",
	}[e.Why]
	if why == "" {
		why = string(e.Why)
	}
	return fmt.Sprintf("toolgate: decide %s: already decided: %s (record %s)", e.ActionID, why, e.Record)
}

// Unwrap returns [ErrDecided].
func (e *decidedError) Unwrap() error { return ErrDecided }

// decisionKeys are the once-keys a decision on actionID claims: the key of
// (action, the decision it supersedes, "" for none), and the superseded
// approval's use, the key the first attempt claims to consume it.
func decisionKeys(actionID, supersedes string) []string {
	sum := sha256.Sum256([]byte(actionID + "\n" + supersedes)) // record ids hold no newline
	keys := []string{"toolgate/decision/" + hex.EncodeToString(sum[:])}
	if supersedes != "" {
		keys = append(keys, approvalKey(supersedes))
	}
	return keys
}

// settled reads what the committed action act has come to and returns the
// approval a new decision supersedes ("" for the first decision), or a
// *decidedError when no new decision may be given: the latest decision
// is a denial or an approval in force or used, or the action has an
// attempt or a result (an escalation to the safe fallback among them).
// Only an approval that expired unused on an action with neither may be
// superseded. Attempts and results are found by the once-keys their
// writes claim, which only the gate can claim, never by records a tool
// could write.
func (x *executor) settled(ctx context.Context, act blackboard.Record) (string, error) {
	refuse := func(rec string, why settled) (string, error) {
		return "", &decidedError{ActionID: act.ID, Record: rec, Why: why}
	}
	var latest *blackboard.Record
	for r, err := range x.approvals(ctx, act.Provenance.TraceID, act.ID) {
		if err != nil {
			return "", err
		}
		latest = &r
	}
	var a audit.Approval
	if latest != nil {
		a, _ = audit.ApprovalOf(*latest)
	}
	if a.Decision == audit.Approved {
		switch used, err := x.gov.ClaimedBy(ctx, approvalKey(a.ID)); {
		case err == nil:
			return refuse(used, x.usedBy(ctx, used))
		case !isNotFound(err):
			return "", err
		}
	}
	// The keys of the job that runs the action: an entry with a once-key
	// takes the action's own once-key when it has one, and the action id
	// otherwise, which is the key of a tool without one.
	j, err := x.newJob(ctx, &entry{once: true}, act, nil)
	if err != nil {
		return "", err
	}
	if id, done, err := x.resultOf(ctx, j); err != nil || done {
		if err != nil {
			return "", err
		}
		res, err := x.reader.Get(ctx, id)
		if err != nil {
			return "", err
		}
		if res.Kind == audit.KindEscalated {
			return refuse(id, settledFallback)
		}
		return refuse(id, settledClosed)
	}
	if n, first, err := x.lastAttempt(ctx, j, 1); err != nil || n > 0 {
		if err != nil {
			return "", err
		}
		return refuse(first.ID, settledClosed)
	}
	switch {
	case latest == nil:
		return "", nil
	case a.Decision != audit.Approved:
		return refuse(a.ID, settledDenied)
	case !expired(latest, kernelhook.Now(x.k)):
		return refuse(a.ID, settledApproved)
	}
	return a.ID, nil
}

// lostClaim is the error of a decision whose write found one of its keys
// claimed: by a concurrent decision, or by the attempt that used the
// approval it was to supersede.
func (x *executor) lostClaim(ctx context.Context, actionID string, keys []string, err error) error {
	whys := []settled{settledConcurrent, settledUsed}
	for i, key := range keys {
		holder, cerr := x.gov.ClaimedBy(ctx, key)
		if cerr == nil {
			why := whys[i]
			if why == settledUsed {
				why = x.usedBy(ctx, holder)
			}
			return &decidedError{ActionID: actionID, Record: holder, Why: why}
		}
		if !isNotFound(cerr) {
			return cerr
		}
	}
	return err
}

// usedBy says what took an approval's use, the record holder: its first
// attempt (used), or the escalation of the approval once it expired
// (the safe fallback).
func (x *executor) usedBy(ctx context.Context, holder string) settled {
	if rec, err := x.reader.Get(ctx, holder); err == nil && rec.Kind == audit.KindEscalated {
		return settledFallback
	}
	return settledUsed
}

// expired reports whether the record r (an approval) has expired: marked
// so, or past its time to live at now.
func expired(r *blackboard.Record, now time.Time) bool {
	return r.Status == blackboard.StatusExpired || r.ExpiredAt(now.UnixMilli())
}

package toolgate

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/canon"
	"github.com/blackboardkernel/bk/internal/kernelhook"
	"github.com/blackboardkernel/bk/internal/telemetry"
	"github.com/blackboardkernel/bk/kernel"
)

// ArgsDigest is the digest an approval binds: [canon.Digest] of an
// action's arguments (numbers by value: 0 and -0, 2 and 2.0 are one
// argument), that is its payload without the keys the kernel derives or
// reads for gating (requires_beliefs, require_prediction, type and the
// derived flags). Any change to an argument changes it. It fails with
// [blackboard.ErrInvalidPayload] for a value without a canonical form.
func ArgsDigest(p blackboard.Payload) (string, error) {
	args := map[string]any(p)
	if slices.ContainsFunc(reservedArgs, func(key string) bool { _, ok := p[key]; return ok }) {
		// Only an action's payload holds them: the parsed arguments of a
		// call are digested as they are.
		args = argsOf(p)
	}
	d, err := canon.Digest(args)
	if err != nil {
		return "", fmt.Errorf("%w: %v", blackboard.ErrInvalidPayload, err)
	}
	return d, nil
}

// Approver approves or denies committed actions that wait for approval,
// as one identity the gate's owner has verified ([Gate.Approver]): whoever
// holds it acts as that identity. It writes nothing but approvals, which
// the gate appends through the kernel's Governor with the approver's role,
// and it cannot approve an action its identity proposed. Safe for
// concurrent use.
//
// No agent framework says who approved a call (an MCP elicitation answer,
// an ADK tool confirmation or an Eino resume carries no verified
// identity), so an adapter never builds one from the framework's payload:
// the application that owns the gate authenticates the person (its login
// session, the OAuth subject of the client) and hands the adapter the
// Approver of that identity, or a function that returns it for a request's
// context. The adapter then turns the person's answer into one
// [Approver.Resolve], with the person's answer as an [audit.Approval].
type Approver struct {
	g        *Gate
	identity string
}

// Approver returns the approver handle of a verified identity.
func (g *Gate) Approver(identity string) *Approver { return &Approver{g, identity} }

// defaultApprovalTTL is the TTL of an answer that gives none.
const defaultApprovalTTL = time.Hour

// Decide records a person's answer (ans) on the committed action it
// names, without carrying it out. ans names the action waiting for
// approval (TraceID and ActionID, as a [audit.Pending] gives them), the
// [ArgsDigest] of the arguments the person was shown (Digest: the answer
// binds them), the Decision ([audit.Approved] or [audit.Denied]), the
// person's reason (Note, a denial's root cause) and how long the answer
// stays valid (TTL: zero is an hour, at most [audit.MaxApprovalTTL]; an
// approval unused within it expires, and the action may then be decided
// again). Its Approver is the handle's identity (another is refused with
// [blackboard.ErrPermission]); its ID and TimeMS are the record's. The
// approval record binds the action, the digest, the approver's identity
// and its expiry. It fails with [blackboard.ErrInvalidInput] for an empty
// identity, a decision other than approved or denied, a bad TTL or a
// digest that does not match the action's arguments, [kernel.ErrInvalidReference] when the action is not
// a committed, active action of the trace, and [blackboard.ErrPermission]
// when the approver proposed the action (its identity is the proposal's
// writer, or the name of the gate caller whose call it is). The action
// takes one decision at a time: a decision settled before, or written
// first by a concurrent approver, is [ErrDecided] (a *decidedError), and
// only an approval that expired unused may be superseded (see the package
// doc). Nothing is written when it fails. A denied action does not run:
// [Gate.Execute] escalates it and takes the safe fallback instead; an
// approved one runs at the next Execute (a supervisor's, or the caller's),
// which checks the approval again.
func (a *Approver) Decide(ctx context.Context, ans audit.Approval) (blackboard.Record, error) {
	if err := check(a, &ans); err != nil {
		return blackboard.Record{}, err
	}
	return a.decide(ctx, ans)
}

// check refuses an answer no approval record can hold.
func check(a *Approver, ans *audit.Approval) error {
	if ans.Decision != audit.Approved && ans.Decision != audit.Denied {
		return fmt.Errorf("%w: toolgate: approve %s: decision %q is neither %q nor %q",
			blackboard.ErrInvalidInput, ans.ActionID, ans.Decision, audit.Approved, audit.Denied)
	}
	if a.identity == "" {
		return fmt.Errorf("%w: toolgate: approve %s: empty approver identity", blackboard.ErrInvalidInput, ans.ActionID)
	}
	if ans.Approver != "" && ans.Approver != a.identity {
		return fmt.Errorf("%w: toolgate: approve %s: the answer names approver %q, the handle is %q", blackboard.ErrPermission, ans.ActionID, ans.Approver, a.identity)
	}
	if ans.TTL == 0 {
		ans.TTL = defaultApprovalTTL
	}
	return nil
}

// Resolve records the answer, as [Approver.Decide] does, and carries it
// out with [Gate.Execute]: an approval runs the action, once; a denial
// escalates it, commits the safe fallback and returns Refused
// (APPROVAL_DENIED) with the note as root cause. It is how an adapter
// resumes a call after the framework's pause.
//
// A digest that does not match the action's committed arguments is
// [blackboard.ErrInvalidInput]: nothing is recorded and nothing runs.
// Resolve is safe to retry: on an action that no longer waits for
// approval (it ran, was escalated, or an earlier Resolve already started
// it), or that another decision already settles ([ErrDecided]: an earlier
// Resolve cut short before it ran the action, a concurrent one), it
// records nothing and returns what came of the action under the decision
// in force, whatever the verdict given. After an approval that expired
// unused it records the new answer. Its other errors are those of
// [Approver.Decide] and [Gate.Execute].
func (a *Approver) Resolve(ctx context.Context, ans audit.Approval) (Result, error) {
	if err := check(a, &ans); err != nil {
		return Result{}, err
	}
	pending, err := a.g.x.pendingApprovals(ctx, ans.TraceID)
	if err != nil {
		return Result{}, err
	}
	if !slices.ContainsFunc(pending, func(p audit.Pending) bool { return p.ActionID == ans.ActionID }) {
		// Decided and carried out before (a retried Resolve): the same
		// checks as a decision, on an action that may since be retired,
		// then what came of it.
		if _, err := a.g.x.decidable(ctx, ans.TraceID, ans.ActionID, ans.Digest, false); err != nil {
			return Result{}, err
		}
		return a.g.Execute(ctx, ans.ActionID)
	}
	if _, err := a.decide(ctx, ans); err != nil && !errors.Is(err, ErrDecided) {
		return Result{}, err
	}
	// Decided now, or by another decision first (a retried Resolve whose
	// Execute was cut short, a concurrent one): what came of the decision
	// in force.
	return a.g.Execute(ctx, ans.ActionID)
}

func (a *Approver) decide(ctx context.Context, ans audit.Approval) (rec blackboard.Record, err error) {
	g := a.g
	traceID, actionID, digest, decision, ttl := ans.TraceID, ans.ActionID, ans.Digest, ans.Decision, ans.TTL
	ctx, sp := g.tracer.Start(ctx, "toolgate.approve")
	defer func() {
		if sp != nil {
			sp.SetAttributes(attribute.String("bk.approval.decision", string(decision)), attribute.String("bk.approval.action_id", actionID),
				attribute.String(telemetry.AttrRole, string(blackboard.RoleApprover)), attribute.String(telemetry.AttrWriter, a.identity),
				attribute.String(telemetry.AttrRecordID, rec.ID))
			if err != nil {
				sp.RecordError(err)
				sp.SetStatus(codes.Error, err.Error())
			}
			sp.End()
		}
		if err == nil && g.metrics != nil && g.metrics.approvals.Enabled(ctx) {
			g.metrics.approvals.Add(ctx, 1, metric.WithAttributes(attribute.String(telemetry.AttrNamespace, kernelhook.Namespace(g.k)),
				attribute.String("bk.approval.decision", string(decision))))
		}
	}()
	bad := func(sentinel error, detail string) (blackboard.Record, error) {
		return blackboard.Record{}, fmt.Errorf("%w: toolgate: approve %s: %s", sentinel, actionID, detail)
	}
	if a.identity == "" {
		return bad(blackboard.ErrInvalidInput, "empty approver identity")
	}
	if ttl <= 0 || ttl > audit.MaxApprovalTTL {
		return bad(blackboard.ErrInvalidInput, fmt.Sprintf("approval TTL %v outside (0, %v]", ttl, audit.MaxApprovalTTL))
	}
	// A retired action is read too, so that one escalated to the safe
	// fallback is refused as decided, not as unknown.
	act, err := g.x.decidable(ctx, traceID, actionID, digest, false)
	if err != nil {
		return blackboard.Record{}, err
	}
	// The committed action names its proposal first. Its writer is the
	// proposer itself or, for a gate call, audit.CallerWriter of the caller's
	// name: an identity that is either proposed it.
	proposal, err := g.reader.Get(ctx, act.Provenance.InputRefs[0])
	switch {
	case err != nil && !isNotFound(err):
		return blackboard.Record{}, err
	case err != nil || proposal.Provenance.Writer == a.identity:
		return bad(blackboard.ErrPermission, "an approver cannot decide an action it proposed")
	case proposal.Provenance.Writer == audit.CallerWriter(a.identity) && approverNotCaller():
		return bad(blackboard.ErrPermission, fmt.Sprintf("%q is the caller that proposed it and cannot decide it", a.identity))
	}
	supersedes, err := g.x.settled(ctx, act)
	if err != nil {
		return blackboard.Record{}, err
	}
	if act.Status != blackboard.StatusActive {
		return bad(kernel.ErrInvalidReference, "not a committed, active action of trace "+traceID)
	}
	f, err := audit.Approval{TraceID: traceID, ActionID: actionID, Digest: digest, Decision: decision, Approver: a.identity,
		Note: ans.Note, TTL: ttl}.Follow()
	if err != nil {
		return blackboard.Record{}, err
	}
	// The decision claims its place in the action's chain of decisions in
	// its own batch: the key of (action, the decision it supersedes), and
	// when it supersedes an expired approval that approval's use, so that
	// of two decisions made at once, or of a new decision and an attempt
	// that uses the old approval, exactly one is written.
	keys := decisionKeys(actionID, supersedes)
	if supersedes != "" {
		f.Entry.InputRefs = append(f.Entry.InputRefs, supersedes)
	}
	if approvalClaimed() {
		f.Entry.OnceKeys = keys
	}
	rec, err = g.planner.gov.Append(ctx, f)
	if errors.Is(err, blackboard.ErrDuplicateKey) {
		return blackboard.Record{}, g.x.lostClaim(ctx, actionID, keys, err)
	}
	return rec, err
}

// decidable reads the committed action actionID of the trace, active
// unless it may be retired (!active), and checks that digest is the
// [ArgsDigest] of its arguments: an approval binds what the person was
// shown, never arguments they did not see.
func (x *executor) decidable(ctx context.Context, traceID, actionID, digest string, active bool) (blackboard.Record, error) {
	bad := func(sentinel error, detail string) (blackboard.Record, error) {
		return blackboard.Record{}, fmt.Errorf("%w: toolgate: approve %s: %s", sentinel, actionID, detail)
	}
	act, err := x.reader.Get(ctx, actionID)
	if err != nil || act.Slot != blackboard.Actions || act.Mode != blackboard.ModeCommit || (active && act.Status != blackboard.StatusActive) ||
		act.Provenance.TraceID != traceID || len(act.Provenance.InputRefs) == 0 {
		if err != nil && !isNotFound(err) {
			return blackboard.Record{}, err
		}
		return bad(kernel.ErrInvalidReference, "not a committed action of trace "+traceID)
	}
	want, err := ArgsDigest(act.Payload)
	if err != nil {
		return blackboard.Record{}, err
	}
	if digest != want && approvalDigestBound() {
		return bad(blackboard.ErrInvalidInput, "digest does not match the action's arguments")
	}
	return act, nil
}

func isNotFound(err error) bool { return errors.Is(err, blackboard.ErrNotFound) }

// Pending lists the actions of the trace that wait for approval, or of
// every trace when traceID is "" (each entry names its own trace), each
// with the latest answer recorded on it: committed by the gate with a
// policy that needs one, not started and with no result (a denied or
// expired one is listed until an Execute escalates it). They come in
// commit order. It is the one listing of what waits for a person.
//
// What an approver is shown comes from the committed action itself: the
// tool is the one whose action type it is, the arguments and digest are
// its payload's. A decision record only points at candidates: one that is
// not the record the gate wrote when it committed a gate action of this
// trace (see [Gate.Execute]) is passed over, whatever its context says.
func (g *Gate) Pending(ctx context.Context, traceID string) ([]audit.Pending, error) {
	pending, err := g.x.pendingApprovals(ctx, traceID)
	if err != nil {
		return nil, err
	}
	for i := range pending {
		for r, err := range g.x.approvals(ctx, pending[i].TraceID, pending[i].ActionID) {
			if err != nil {
				return nil, err
			}
			if a, ok := audit.ApprovalOf(r); ok {
				pending[i].Decision = &a
			}
		}
	}
	return pending, nil
}

// approvals streams the approval records of an action, oldest first, with
// their current status (an expired approval is EXPIRED or past its TTL:
// [expired]). It reads the action's trace.
func (x *executor) approvals(ctx context.Context, traceID, actionID string) iter.Seq2[blackboard.Record, error] {
	return func(yield func(blackboard.Record, error) bool) {
		for r, err := range x.reader.Trace(ctx, traceID) {
			if err != nil {
				yield(blackboard.Record{}, err)
				return
			}
			if a, ok := audit.ApprovalOf(r); !ok || a.ActionID != actionID {
				continue
			}
			if !yield(r, nil) {
				return
			}
		}
	}
}

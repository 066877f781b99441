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
	"github.com/blackboardkernel/bk/internal/telemetry"
	"github.com/blackboardkernel/bk/kernel"
)

// MaxApprovalTTL bounds how long an approval stays valid.
const MaxApprovalTTL = 30 * 24 * time.Hour

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
// [Approver.Resolve].
type Approver struct {
	g        *Gate
	identity string
}

// Approver returns the approver handle of a verified identity.
func (g *Gate) Approver(identity string) *Approver { return &Approver{g, identity} }

// Identity returns the identity the approver records.
func (a *Approver) Identity() string { return a.identity }

// Approve approves the committed action actionID of the trace for the
// arguments whose [ArgsDigest] is digest, for ttl (at most
// [MaxApprovalTTL]). The approval ([audit.Approval]) binds the action, the
// digest, the approver's identity and its expiry. It fails with
// [blackboard.ErrInvalidInput] for an empty identity, a bad ttl or a digest
// that does not match the action's arguments,
// [kernel.ErrInvalidReference] when actionID is not a committed, active
// action of the trace, and [blackboard.ErrPermission] when the approver
// proposed the action (its identity is the proposal's writer, or the name
// of the gate caller whose call it is). The action takes one decision at
// a time: a decision settled before, or written first by a concurrent
// approver, is [ErrDecided] (a [*DecidedError]), and only an approval
// that expired unused may be superseded (see docs/effects.md, "Approvals"). Nothing is
// written when it fails. The gate checks the approval again before the
// action runs ([Gate.Execute]).
func (a *Approver) Approve(ctx context.Context, traceID, actionID, digest, note string, ttl time.Duration) (blackboard.Record, error) {
	return a.decide(ctx, traceID, actionID, digest, audit.Approved, note, ttl)
}

// Deny records that the approver refused the action; its errors are those
// of [Approver.Approve]. A denied action does not run: Execute escalates
// it and takes the safe fallback instead.
func (a *Approver) Deny(ctx context.Context, traceID, actionID, digest, note string, ttl time.Duration) (blackboard.Record, error) {
	return a.decide(ctx, traceID, actionID, digest, audit.Denied, note, ttl)
}

// ResolveTTL is how long the approval [Approver.Resolve] records stays
// valid. Resolve runs the action at once; the TTL bounds how long a later
// [Gate.Execute] may still use the approval when that run was cut short.
const ResolveTTL = time.Hour

// Resolve records the approver's decision, [audit.Approved] or
// [audit.Denied], on the action actionID of the trace for the arguments
// whose [ArgsDigest] is digest (the digest the person was shown, as
// [Gate.PendingApprovals] lists it), and carries it out with
// [Gate.Execute]: an approval (valid for [ResolveTTL]) runs the action,
// once; a denial escalates it, commits the safe fallback and returns
// Refused (APPROVAL_DENIED) with the note as root cause. It is how an
// adapter resumes a call after the framework's pause.
//
// A digest that does not match the action's committed arguments is
// [blackboard.ErrInvalidInput]: nothing is recorded and nothing runs.
// Resolve is safe to retry: on an action that no longer waits for
// approval (it ran, was escalated, or an earlier Resolve already started
// it), or that another decision already settles ([ErrDecided]: an earlier
// Resolve cut short before it ran the action, a concurrent one), it
// records nothing and returns what came of the action under the decision
// in force, whatever the decision given. After an approval that expired
// unused it records the new decision. Its other errors are those of [Approver.Approve] and
// [Gate.Execute]: a decision other than approved or denied is
// [blackboard.ErrInvalidInput], an action that is not a committed action
// of the trace [kernel.ErrInvalidReference], and an approver deciding an
// action it proposed [blackboard.ErrPermission].
func (a *Approver) Resolve(ctx context.Context, traceID, actionID, digest, decision, note string) (Result, error) {
	if decision != audit.Approved && decision != audit.Denied {
		return Result{}, fmt.Errorf("%w: toolgate: resolve %s: decision %q is neither %q nor %q",
			blackboard.ErrInvalidInput, actionID, decision, audit.Approved, audit.Denied)
	}
	if a.identity == "" {
		return Result{}, fmt.Errorf("%w: toolgate: resolve %s: empty approver identity", blackboard.ErrInvalidInput, actionID)
	}
	pending, err := a.g.PendingApprovals(ctx, traceID)
	if err != nil {
		return Result{}, err
	}
	if !slices.ContainsFunc(pending, func(p Pending) bool { return p.ActionID == actionID }) {
		// Decided and carried out before (a retried Resolve): the same
		// checks as a decision, on an action that may since be retired,
		// then what came of it.
		if _, err := a.g.decidable(ctx, traceID, actionID, digest, false); err != nil {
			return Result{}, err
		}
		return a.g.Execute(ctx, actionID)
	}
	if _, err := a.decide(ctx, traceID, actionID, digest, decision, note, ResolveTTL); err != nil && !errors.Is(err, ErrDecided) {
		return Result{}, err
	}
	// Decided now, or by another decision first (a retried Resolve whose
	// Execute was cut short, a concurrent one): what came of the decision
	// in force.
	return a.g.Execute(ctx, actionID)
}

func (a *Approver) decide(ctx context.Context, traceID, actionID, digest, decision, note string, ttl time.Duration) (rec blackboard.Record, err error) {
	g := a.g
	ctx, sp := g.tracer.Start(ctx, "toolgate.approve")
	defer func() {
		if sp != nil {
			sp.SetAttributes(attribute.String("bk.approval.decision", decision), attribute.String("bk.approval.action_id", actionID),
				attribute.String(telemetry.AttrRole, blackboard.RoleApprover.String()), attribute.String(telemetry.AttrWriter, a.identity),
				attribute.String(telemetry.AttrRecordID, rec.ID))
			if err != nil {
				sp.RecordError(err)
				sp.SetStatus(codes.Error, err.Error())
			}
			sp.End()
		}
		if err == nil && g.metrics != nil && g.metrics.approvals.Enabled(ctx) {
			g.metrics.approvals.Add(ctx, 1, metric.WithAttributes(attribute.String(telemetry.AttrNamespace, g.k.Namespace()),
				attribute.String("bk.approval.decision", decision)))
		}
	}()
	bad := func(sentinel error, detail string) (blackboard.Record, error) {
		return blackboard.Record{}, fmt.Errorf("%w: toolgate: approve %s: %s", sentinel, actionID, detail)
	}
	if a.identity == "" {
		return bad(blackboard.ErrInvalidInput, "empty approver identity")
	}
	if ttl <= 0 || ttl > MaxApprovalTTL {
		return bad(blackboard.ErrInvalidInput, fmt.Sprintf("approval TTL %v outside (0, %v]", ttl, MaxApprovalTTL))
	}
	// A retired action is read too, so that one escalated to the safe
	// fallback is refused as decided, not as unknown.
	act, err := g.decidable(ctx, traceID, actionID, digest, false)
	if err != nil {
		return blackboard.Record{}, err
	}
	// The committed action names its proposal first. Its writer is the
	// proposer itself or, for a gate call, CallerWriter of the caller's
	// name: an identity that is either proposed it.
	proposal, err := g.reader.Get(ctx, act.Provenance.InputRefs[0])
	switch {
	case err != nil && !isNotFound(err):
		return blackboard.Record{}, err
	case err != nil || proposal.Provenance.Writer == a.identity:
		return bad(blackboard.ErrPermission, "an approver cannot decide an action it proposed")
	case proposal.Provenance.Writer == CallerWriter(a.identity) && approverNotCaller():
		return bad(blackboard.ErrPermission, fmt.Sprintf("%q is the caller that proposed it and cannot decide it", a.identity))
	}
	supersedes, err := g.settled(ctx, act)
	if err != nil {
		return blackboard.Record{}, err
	}
	if act.Status != blackboard.StatusActive {
		return bad(kernel.ErrInvalidReference, "not a committed, active action of trace "+traceID)
	}
	f, err := audit.Approval{TraceID: traceID, ActionID: actionID, Digest: digest, Decision: decision, Approver: a.identity,
		Note: note, TTL: ttl}.Follow()
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
		return blackboard.Record{}, g.lostClaim(ctx, actionID, keys, err)
	}
	return rec, err
}

// decidable reads the committed action actionID of the trace, active
// unless it may be retired (!active), and checks that digest is the
// [ArgsDigest] of its arguments: an approval binds what the person was
// shown, never arguments they did not see.
func (g *Gate) decidable(ctx context.Context, traceID, actionID, digest string, active bool) (blackboard.Record, error) {
	bad := func(sentinel error, detail string) (blackboard.Record, error) {
		return blackboard.Record{}, fmt.Errorf("%w: toolgate: approve %s: %s", sentinel, actionID, detail)
	}
	act, err := g.reader.Get(ctx, actionID)
	if err != nil || act.Slot != blackboard.Actions || act.Mode != blackboard.ModeCommit || (active && act.Status != blackboard.StatusActive) ||
		act.TraceID() != traceID || len(act.Provenance.InputRefs) == 0 {
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

// Approvals streams the approval records of an action, oldest first, with
// their current status (an expired approval is EXPIRED or past its TTL:
// [blackboard.Record.Expired]); [audit.ApprovalOf] decodes them. It reads the
// action's trace.
func (g *Gate) Approvals(ctx context.Context, traceID, actionID string) iter.Seq2[blackboard.Record, error] {
	return func(yield func(blackboard.Record, error) bool) {
		for r, err := range g.reader.Trace(ctx, traceID) {
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

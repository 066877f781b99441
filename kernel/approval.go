package kernel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/blackboardkernel/bk/canon"
	"go.opentelemetry.io/otel/metric"
)

// Approval records: the evidence kind, and the payload keys the kernel
// writes and reads.
const (
	KindApproval = "approval"

	KeyActionID = "action_id" // approval: the committed action it decides
	KeyDigest   = "digest"    // approval: ArgsDigest of that action's arguments
	KeyDecision = "decision"  // approval: DecisionApproved or DecisionDenied
	KeyApprover = "approver"  // approval: the approver's identity
	KeyNote     = "note"      // approval: the approver's note
)

// The two answers an approver gives.
const (
	DecisionApproved = "approved"
	DecisionDenied   = "denied"
)

// MaxApprovalTTL bounds how long an approval stays valid.
const MaxApprovalTTL = 30 * 24 * time.Hour

// ArgsDigest is the digest an approval binds: [canon.Digest] of an
// action's arguments (numbers by value: 0 and -0, 2 and 2.0 are one
// argument), that is its payload without the keys the
// kernel derives or reads for gating (requires_beliefs, require_prediction,
// type and the derived flags). Any change to an argument changes it.
func ArgsDigest(p Payload) (string, error) {
	args := make(map[string]any, len(p))
	for key, v := range p {
		switch key {
		case KeyRequiresBeliefs, KeyRequirePrediction, KeyType,
			KeyUsesStaleData, KeyUsesConflictedData, KeyUsesLowConfidenceData, KeyHasNegativePrediction:
			continue
		}
		args[key] = v
	}
	norm, err := normalizePayload(args, DefaultMaxPayloadBytes)
	if err != nil {
		return "", err
	}
	if mutOnceCanon {
		enc, _ := json.Marshal(map[string]any(norm))
		sum := sha256.Sum256(enc)
		return "sha256:" + hex.EncodeToString(sum[:]), nil
	}
	d, err := canon.Digest(map[string]any(norm))
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalidPayload, err)
	}
	return d, nil
}

// Approver is the handle of a person (or a system) who approves or denies
// committed actions that need approval. The kernel's owner mints it with
// the identity it has verified ([Kernel.Approver]); the identity is
// recorded on every decision. An approver writes nothing but approvals, and
// cannot approve an action it proposed itself. Safe for concurrent use.
type Approver struct{ handle }

// Approver returns an approver handle for a verified identity. The owner
// is responsible for the verification: whoever holds the handle acts as
// that identity.
func (k *Kernel) Approver(identity string) *Approver {
	return &Approver{handle{k, RoleApprover, identity}}
}

var _ Handle = (*Approver)(nil)

// Write always fails with [ErrPermission]: an approver records decisions
// only through [Approver.Approve] and [Approver.Deny].
func (a *Approver) Write(context.Context, Entry) (Record, error) {
	return Record{}, newErr("write", "", CodePermissionDenied, ErrPermission, "an approver writes only approvals")
}

// Approve approves the committed action actionID of the trace for the
// arguments whose [ArgsDigest] is digest, for ttl (at most
// [MaxApprovalTTL]). The approval binds the action, the digest, the
// approver's identity and its expiry; it is evidence with kind
// [KindApproval]. It fails with [ErrInvalidInput] for an empty identity, a
// bad ttl or a digest that does not match the action's arguments,
// [ErrInvalidReference] when actionID is not a committed action of the
// trace, and [ErrPermission] when the approver proposed the action.
func (a *Approver) Approve(ctx context.Context, traceID, actionID, digest, note string, ttl time.Duration) (Record, error) {
	return a.decide(ctx, traceID, actionID, digest, DecisionApproved, note, ttl)
}

// Deny records that the approver refused the action; its errors are those
// of [Approver.Approve]. A denied action must not run: the executor takes
// the safe fallback instead.
func (a *Approver) Deny(ctx context.Context, traceID, actionID, digest, note string, ttl time.Duration) (Record, error) {
	return a.decide(ctx, traceID, actionID, digest, DecisionDenied, note, ttl)
}

func (a *Approver) decide(ctx context.Context, traceID, actionID, digest, decision, note string, ttl time.Duration) (rec Record, err error) {
	const op = "approve"
	k := a.k
	ctx, sp := k.span(ctx, "kernel.approve", traceID, Evidence)
	defer func() {
		if sp != nil {
			sp.SetAttributes(attribute.String(AttrKind, KindApproval), attribute.String("bk.approval.decision", decision),
				attribute.String("bk.approval.action_id", actionID), attribute.String(AttrRole, RoleApprover.String()),
				attribute.String(AttrWriter, a.name), attribute.String(AttrRecordID, rec.ID))
			endSpan(sp, "", err)
		}
		if err == nil && k.metrics != nil && k.metrics.approvals.Enabled(ctx) {
			k.metrics.approvals.Add(ctx, 1, metric.WithAttributes(attribute.String(AttrNamespace, k.namespace),
				attribute.String("bk.approval.decision", decision)))
		}
	}()
	bad := func(code Code, sentinel error, detail string) (Record, error) {
		return Record{}, newErr(op, actionID, code, sentinel, detail)
	}
	if err := checkName("approver identity", a.name); err != nil {
		return bad(CodeInvalidInput, ErrInvalidInput, err.Error())
	}
	if ttl <= 0 || ttl > MaxApprovalTTL {
		return bad(CodeInvalidInput, ErrInvalidInput, fmt.Sprintf("approval TTL %v outside (0, %v]", ttl, MaxApprovalTTL))
	}
	if err := checkName("trace id", traceID); err != nil {
		return bad(CodeInvalidInput, ErrInvalidInput, err.Error())
	}
	payload, err := normalizePayload(Payload{
		KeyActionID: actionID, KeyDigest: digest, KeyDecision: decision, KeyApprover: a.name, KeyNote: note,
	}, k.maxPayload)
	if err != nil {
		return bad(CodeInvalidInput, ErrInvalidPayload, err.Error())
	}
	for attempt := 0; attempt < maxAttempts; attempt++ {
		snap, err := k.load(ctx, traceID, false)
		if err != nil {
			return Record{}, err
		}
		act := snap.byID(actionID)
		if act == nil || act.Slot != Actions || !committedActive(act) {
			snap.release()
			return bad(CodeInvalidReference, ErrInvalidReference, "not a committed action of trace "+traceID)
		}
		want, err := ArgsDigest(act.Payload)
		if err != nil {
			snap.release()
			return Record{}, err
		}
		if digest != want {
			snap.release()
			return bad(CodeInvalidInput, ErrInvalidInput, "digest does not match the action's arguments")
		}
		if proposal := snap.byID(act.Provenance.InputRefs[0]); proposal == nil || proposal.Provenance.Writer == a.name {
			snap.release()
			return bad(CodePermissionDenied, ErrPermission, "an approver cannot decide an action it proposed")
		}
		rec = Record{
			ID: snap.nextID(Evidence, 0), Slot: Evidence, Mode: ModeCommit, Kind: KindApproval, Payload: payload,
			Provenance: Provenance{Role: RoleApprover, Writer: a.name, TraceID: traceID, TimestampMS: snap.nowMS,
				InputRefs: []string{actionID}, TTLMS: int64((ttl + time.Millisecond - 1) / time.Millisecond), Span: snap.span},
			Status: StatusActive, Reason: CodeCommitted, Scope: ScopeEpisode, Namespace: k.namespace,
		}
		err = snap.apply(ctx, Batch{Appends: []Record{rec}})
		snap.release()
		if raced(err) {
			continue
		}
		if err != nil {
			return Record{}, err
		}
		return rec.Clone(), nil
	}
	return Record{}, newErr(op, actionID, "", ErrConflict, "too much contention on the trace")
}

// Approvals streams the approval records of an action, oldest first, with
// their current status (an expired approval is EXPIRED or past its TTL).
func (k *Kernel) Approvals(ctx context.Context, traceID, actionID string) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		for r, err := range k.scoped(k.store.ListTrace(ctx, traceID)) {
			if err != nil {
				yield(Record{}, err)
				return
			}
			if r.Slot != Evidence || r.Kind != KindApproval || r.Provenance.Role != RoleApprover {
				continue
			}
			if id, _ := r.Payload.String(KeyActionID); id != actionID {
				continue
			}
			if !yield(r, nil) {
				return
			}
		}
	}
}

// Now returns the kernel's clock reading, so that code deciding on records
// (an approval's expiry, say) uses the same time as the kernel.
func (k *Kernel) Now() time.Time { return k.now() }

// Expired reports whether r's time to live has run out at now.
func (r Record) Expired(now time.Time) bool {
	return r.Status == StatusExpired || r.expired(now.UnixMilli())
}

// RecheckAction decides the committed action actionID again as of now,
// without writing anything: its beliefs must be the ones it rests on,
// still committed and true; every observation they rest on must still be
// the current one of its kind and pass the evidence checks (not stale, not
// past its TTL, not conflicted, confident); the action must still hold
// its once-key (when its spec has one); and its plan, its prediction gate,
// the constraints in force and the custom validators (the owner's rules)
// must still admit it. Code is COMMITTED when the action may still run,
// else the refusal code with the record that failed, as a [Decision]
// names them.
//
// An executor calls it before an action that waited (for an approval, or
// for a recovery) runs its effect: an approval decides the arguments, not
// the evidence, which may have changed in the hours it took. It fails
// with [ErrInvalidReference] when actionID is not a committed action of
// the kernel's namespace. Safe for concurrent use.
func (k *Kernel) RecheckAction(ctx context.Context, actionID string) (Decision, error) {
	const op = "recheck"
	act, err := k.store.Get(ctx, actionID)
	if errors.Is(err, ErrNotFound) || err == nil && (act.Namespace != k.namespace || act.Slot != Actions || act.Mode != ModeCommit) {
		return Decision{}, newErr(op, actionID, CodeInvalidReference, ErrInvalidReference, "not a committed action")
	}
	if err != nil {
		return Decision{}, err
	}
	snap, err := k.load(ctx, act.TraceID(), true)
	if err != nil {
		return Decision{}, err
	}
	defer snap.release()
	snap.markExpired() // in the snapshot only: a recheck writes nothing
	a := snap.byID(actionID)
	if a == nil || len(a.Provenance.InputRefs) == 0 {
		return Decision{}, newErr(op, actionID, CodeInvalidReference, ErrInvalidReference, "not a committed action")
	}
	out, err := k.recheckAction(ctx, snap, a)
	if err != nil {
		return Decision{}, err
	}
	if out.code == "" {
		out.code = CodeCommitted
	}
	return Decision{ID: "recheck:" + a.ID, Code: out.code, ProposalID: a.Provenance.InputRefs[0], Record: a.Clone(),
		Rule: out.rule, Failed: out.failed, Detail: out.detail, Causes: out.causes}, nil
}

// recheckAction runs the action gate's checks on the committed action a
// against the snapshot, through the gate's own code, plus what only
// matters for an action already committed: that its beliefs and their
// observations are still the ones it was decided on. A zero code passes.
func (k *Kernel) recheckAction(ctx context.Context, s *snapshot, a *Record) (outcome, error) {
	p := s.byID(a.Provenance.InputRefs[0]) // the committed twin names its proposal first
	if a.Status != StatusActive || p == nil || p.Slot != Actions {
		return outcome{code: CodeInvalidProposal, failed: a.ID, detail: "the action is " + a.Status.String() + " or has no proposal"}, nil
	}
	g := k.newGate(s, a.Kind, p.Payload.list(KeyRequiresBeliefs), p.Payload)
	if code := g.grounded(false); code != "" {
		return outcome{code: code}, nil
	}
	if !mutRequirePlan && g.spec.RequirePlan && s.planFor(a.Kind) == nil {
		return outcome{code: CodeNoFeasiblePlan}, nil
	}
	if out := g.satisfied(CodeNoCommittedBelief, CodeBeliefNotSatisfied); out.code != "" {
		return out, nil
	}
	for _, b := range g.beliefs {
		if !mutRecheckCurrent && !slices.Contains(a.Provenance.InputRefs, b.ID) {
			return outcome{code: CodeSupersededEvidence, failed: b.ID, detail: "belief " + b.ID + " replaced the one the action rests on"}, nil
		}
	}
	out, flags := g.recheck()
	if out.code != "" {
		return out, nil
	}
	// recheck lets a newer observation pass when it passes the checks
	// itself; an action decided on the older one does not.
	for _, b := range g.beliefs {
		for _, evID := range b.EvidenceRefs {
			ev := s.byID(evID)
			if ev == nil {
				continue // only when the recheck switch is on: it refuses a missing artifact
			}
			for _, pid := range ev.Provenance.InputRefs {
				r := s.byID(pid)
				if r == nil {
					continue // likewise
				}
				if cur := s.current(r.Kind); !mutRecheckCurrent && cur != r {
					return outcome{code: CodeSupersededEvidence, failed: r.ID, detail: "observation " + r.ID + " is superseded by " + cur.ID}, nil
				}
			}
		}
	}
	if o := g.spec.Once; o != nil && !mutOnceKey {
		if _, err := k.OnceKeyOf(ctx, a.ID); errors.Is(err, ErrNotFound) {
			return outcome{code: CodeOnceKeyMissing, failed: a.ID, detail: "the action no longer holds its once-key"}, nil
		} else if err != nil {
			return outcome{}, err
		}
	}
	preds := g.predictions()
	flags[3] = negative(preds)
	if !mutPredictionGate && (g.spec.RequirePrediction || p.Payload.Bool(KeyRequirePrediction)) {
		if len(preds) == 0 {
			return outcome{code: CodeNoPrediction}, nil
		}
		if flags[3] {
			return outcome{code: CodeNegativePrediction}, nil
		}
	}
	if out := g.constrained(flags, BlockedCode); out.code != "" {
		return out, nil
	}
	if !mutValidators {
		c := Candidate{snap: s, proposal: p, beliefs: g.beliefs}
		for _, v := range k.validators {
			if vd := v.Validate(ctx, c); vd.rejects() {
				if err := ctx.Err(); err != nil {
					return outcome{}, err // cut short: not decided
				}
				return outcome{code: vd.Code, rule: vd.Rule, detail: vd.Detail}, nil
			}
		}
	}
	return outcome{}, nil
}

package kernel

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
)

// write stores one record written by a handle.
func (k *Kernel) write(ctx context.Context, role Role, writer string, e Entry) (Record, error) {
	rec, err := k.checkEntry(role, writer, &e)
	if err != nil {
		return Record{}, err
	}
	var deps []string
	if rec.Slot == Beliefs {
		all, _ := rec.Payload.Strings(KeyDependsOn)
		for _, d := range all {
			if looksLikeID(d) {
				deps = append(deps, d)
			}
		}
	}
	if rec.Slot == Constraints {
		if _, ok := rec.Payload[KeyName]; !ok {
			rec.Payload[KeyName] = rec.Kind
		}
		if _, ok := rec.Payload[KeyEnabled]; !ok {
			rec.Payload[KeyEnabled] = true
		}
	}
	for attempt := 0; attempt < maxAttempts; attempt++ {
		snap, err := k.load(ctx, e.TraceID, false)
		if err != nil {
			return Record{}, err
		}
		if err := snap.checkRefs(ctx, "input ref", rec.Provenance.InputRefs); err != nil {
			return Record{}, err
		}
		if err := snap.checkRefs(ctx, "evidence ref", rec.EvidenceRefs); err != nil {
			return Record{}, err
		}
		// A dependency named by id must be a percept of this very trace: it
		// is what the belief will be validated against.
		for _, d := range deps {
			if r := snap.byID(d); r == nil || r.Slot != Percepts {
				return Record{}, newErr("write", "", CodeInvalidReference, ErrInvalidReference,
					fmt.Sprintf("dependency %q is not a percept of trace %q", d, e.TraceID))
			}
		}
		rec.ID = snap.nextID(rec.Slot, 0)
		err = k.store.Append(ctx, rec)
		if errors.Is(err, ErrDuplicateID) {
			continue
		}
		if err != nil {
			return Record{}, err
		}
		k.log.DebugContext(ctx, "write", "id", rec.ID, "role", role.String(), "kind", rec.Kind)
		return rec, nil
	}
	return Record{}, newErr("write", rec.ID, "", ErrDuplicateID, "no free record id after retries")
}

// Decision is the kernel's answer to a commit request.
type Decision struct {
	// Code is COMMITTED (PLAN_FEASIBLE for plans) or the rejection code.
	Code Code
	// Proposal is the proposal as it stands after the decision: superseded
	// by its committed record, or invalidated with Code.
	Proposal Record
	// Record is the committed record; its ID is empty when rejected.
	Record Record
	// Evidence is the artifact the kernel wrote for a committed belief.
	Evidence Record
}

// Committed reports whether the proposal was committed.
func (d Decision) Committed() bool { return d.Code.OK() }

// outcome is what deciding a proposal produced, before it is applied.
type outcome struct {
	code     Code
	record   *Record // committed record
	evidence *Record // belief evidence artifact
}

func (k *Kernel) commit(ctx context.Context, role Role, traceID, proposalID string) (Decision, error) {
	const op = "commit"
	for attempt := 0; attempt < maxAttempts; attempt++ {
		snap, err := k.load(ctx, traceID, true)
		if err != nil {
			return Decision{}, err
		}
		// Expire first, so that nothing past its TTL (the proposal itself,
		// a belief, a prediction, a constraint) takes part in the decision.
		if err := k.expire(ctx, snap); err != nil {
			return Decision{}, err
		}
		p := snap.byID(proposalID)
		if p == nil {
			detail := "no such proposal"
			if _, err := k.store.Get(ctx, proposalID); err == nil {
				detail = "proposal belongs to another trace"
			}
			return Decision{Code: CodeInvalidProposal}, newErr(op, proposalID, CodeInvalidProposal, ErrInvalidProposal, detail)
		}
		if p.Mode != ModePropose {
			return Decision{Code: CodeInvalidProposal}, newErr(op, proposalID, CodeInvalidProposal, ErrInvalidProposal, "not a proposal")
		}
		if !Allowed(role, p.Slot, ModePropose) {
			return Decision{}, newErr(op, proposalID, CodePermissionDenied, ErrPermission,
				fmt.Sprintf("role %s may not decide %s", role, p.Slot))
		}
		if p.Status != StatusActive {
			return Decision{Code: CodeInvalidProposal, Proposal: p.Clone()}, newErr(op, proposalID, CodeInvalidProposal, ErrInvalidProposal,
				fmt.Sprintf("proposal is %s (%s)", p.Status, p.Reason))
		}
		out := k.decide(ctx, snap, p)
		batch := Batch{Trace: traceID, TraceLen: len(snap.recs)}
		if out.code.OK() {
			if out.evidence != nil {
				batch.Appends = append(batch.Appends, *out.evidence)
			}
			batch.Appends = append(batch.Appends, *out.record)
			batch.Invalidations = append(batch.Invalidations, Invalidation{ID: p.ID, Status: StatusInvalidated, Reason: CodeSupersededByCommit})
		} else {
			batch.Invalidations = append(batch.Invalidations, Invalidation{ID: p.ID, Status: StatusInvalidated, Reason: out.code})
		}
		err = k.store.Apply(ctx, batch)
		if errors.Is(err, ErrDuplicateID) || errors.Is(err, ErrNotActive) || errors.Is(err, ErrConflict) {
			continue // a concurrent writer got there first: read again
		}
		if err != nil {
			return Decision{}, err
		}
		d := Decision{Code: out.code, Proposal: p.Clone()}
		d.Proposal.Status = StatusInvalidated
		d.Proposal.Reason = CodeSupersededByCommit
		if !out.code.OK() {
			d.Proposal.Reason = out.code
		}
		if out.record != nil {
			d.Record = out.record.Clone()
		}
		if out.evidence != nil {
			d.Evidence = out.evidence.Clone()
		}
		k.log.DebugContext(ctx, "decide", "proposal", p.ID, "slot", p.Slot.String(), "code", string(out.code))
		return d, nil
	}
	return Decision{}, newErr(op, proposalID, "", ErrNotActive, "too much contention on the trace")
}

// decide runs the slot's validation on a proposal and, if it passes, builds
// the records to commit.
func (k *Kernel) decide(ctx context.Context, s *snapshot, p *Record) outcome {
	var out outcome
	switch p.Slot {
	case Beliefs:
		out = k.decideBelief(s, p)
	case Plans:
		out = k.decidePlan(s, p)
	case Actions:
		out = k.decideAction(s, p)
	case Predictions:
		out = k.decidePrediction(s, p)
	}
	if out.code.OK() && len(k.validators) > 0 {
		c := Candidate{snap: s, proposal: p}
		for _, v := range k.validators {
			// An OK code is no objection: only the built-in checks build
			// the records a commit writes.
			if code := v.Validate(ctx, c); code != "" && !code.OK() {
				return outcome{code: code}
			}
		}
	}
	return out
}

// commitRecord builds the committed twin of a proposal.
func (s *snapshot) commitRecord(p *Record, idIndex int, code Code, payload Payload, inputs, evidence []string) *Record {
	refs := make([]string, 0, 1+len(p.Provenance.InputRefs)+len(inputs))
	refs = append(refs, p.ID)
	refs = append(refs, p.Provenance.InputRefs...)
	for _, in := range inputs {
		if !slices.Contains(refs, in) {
			refs = append(refs, in)
		}
	}
	return &Record{
		ID:      s.nextID(p.Slot, idIndex),
		Slot:    p.Slot,
		Mode:    ModeCommit,
		Kind:    p.Kind,
		Payload: payload,
		Provenance: Provenance{
			Role:        RoleKernel,
			Writer:      RoleKernel.String(),
			TraceID:     s.traceID,
			TimestampMS: s.nowMS,
			InputRefs:   refs,
			Confidence:  p.Provenance.Confidence,
			TTLMS:       p.Provenance.TTLMS,
		},
		EvidenceRefs: evidence,
		Status:       StatusActive,
		Reason:       code,
		Scope:        p.Scope,
	}
}

// Names of the checks an evidence artifact records.
const (
	checkPresent    = "evidence_present"
	checkFresh      = "fresh"
	checkConflict   = "conflict_free"
	checkArbitrated = "conflict_arbitrated"
	checkConfidence = "confidence"
)

// decideBelief is evidence validation (paper t3–t5): for each dependency in
// order, missing → stale → conflict (with arbitration) → confidence.
func (k *Kernel) decideBelief(s *snapshot, p *Record) outcome {
	deps, _ := p.Payload.Strings(KeyDependsOn)
	if len(deps) == 0 {
		return outcome{code: CodeMissingEvidence}
	}
	var percepts []string
	var checks []any
	arbitrated := false
	for _, dep := range deps {
		r := s.perceptFor(dep)
		if r == nil {
			return outcome{code: CodeMissingEvidence}
		}
		if s.stale(r) {
			return outcome{code: CodeStaleEvidence}
		}
		conf := r.Provenance.Confidence
		check := checkConflict
		if r.Payload.Bool(KeyConflict) {
			if conf == nil || *conf < k.conflictThreshold {
				return outcome{code: CodeUnresolvedConflict}
			}
			check, arbitrated = checkArbitrated, true
		}
		if conf != nil && *conf < k.minConfidence {
			return outcome{code: CodeLowConfidence}
		}
		percepts = append(percepts, r.ID)
		checks = append(checks, map[string]any{
			"percept": r.ID,
			"checks":  []any{checkPresent, checkFresh, check, checkConfidence},
		})
	}
	artifact := &Record{
		ID:   s.nextID(Evidence, 0),
		Slot: Evidence,
		Mode: ModeCommit,
		Kind: "belief_validation",
		Payload: Payload{
			"belief":             p.Kind,
			"proposal_id":        p.ID,
			"passed":             true,
			"arbitrated":         arbitrated,
			"min_confidence":     k.minConfidence,
			"conflict_threshold": k.conflictThreshold,
			"dependencies":       checks,
		},
		Provenance: Provenance{
			Role:        RoleKernel,
			Writer:      RoleKernel.String(),
			TraceID:     s.traceID,
			TimestampMS: s.nowMS,
			InputRefs:   percepts,
		},
		Status: StatusActive,
		Reason: CodeCommitted,
		Scope:  ScopeEpisode,
	}
	rec := s.commitRecord(p, 1, CodeCommitted, p.Payload, percepts, []string{artifact.ID})
	return outcome{code: CodeCommitted, record: rec, evidence: artifact}
}

// gate holds the checks a plan step and an action share.
type gate struct {
	k       *Kernel
	s       *snapshot
	action  string
	reqs    []string
	payload Payload
	// beliefs are the committed beliefs the step or action rests on.
	beliefs []*Record
}

// grounded checks the registry and the declared beliefs against the spec.
// It returns "" or a code; plan selects the plan-flavoured code.
func (g *gate) grounded(plan bool) Code {
	spec, registered := g.k.specs[g.action]
	if g.k.strictActions && !registered {
		return CodeUnknownActionType
	}
	ungrounded := CodeUngroundedAction
	if plan {
		ungrounded = CodePlanUngrounded
	}
	if len(g.reqs) == 0 && !spec.SafeFallback {
		return ungrounded
	}
	for _, need := range spec.MinBeliefs {
		if !slices.Contains(g.reqs, need) {
			return ungrounded
		}
	}
	return ""
}

// satisfied checks that every required belief is committed and truthy.
func (g *gate) satisfied(missing, unsatisfied Code) Code {
	for _, kind := range g.reqs {
		b := g.s.belief(kind)
		if b == nil {
			return missing
		}
		if !b.Payload.Bool(KeyValue) {
			return unsatisfied
		}
		g.beliefs = append(g.beliefs, b)
	}
	return ""
}

// derived computes the flags the kernel owns from the evidence chain of
// the gate's beliefs and the predictions for its action.
func (g *gate) derived() map[string]bool {
	flags := map[string]bool{
		KeyUsesStaleData:         false,
		KeyUsesConflictedData:    false,
		KeyUsesLowConfidenceData: false,
		KeyHasNegativePrediction: false,
	}
	for _, b := range g.beliefs {
		for _, evID := range b.EvidenceRefs {
			ev := g.s.byID(evID)
			if ev == nil {
				continue
			}
			for _, pid := range ev.Provenance.InputRefs {
				pr := g.s.byID(pid)
				if pr == nil || pr.Slot != Percepts {
					continue
				}
				if g.s.stale(pr) {
					flags[KeyUsesStaleData] = true
				}
				if pr.Payload.Bool(KeyConflict) {
					flags[KeyUsesConflictedData] = true
				}
				if c := pr.Provenance.Confidence; pr.Payload.Bool(KeyLowConfidence) || (c != nil && *c < g.k.minConfidence) {
					flags[KeyUsesLowConfidenceData] = true
				}
			}
		}
	}
	for _, pred := range g.s.predictions(g.action) {
		if v, _ := pred.Payload.Float(KeyExpectedOutcome); v < 0 {
			flags[KeyHasNegativePrediction] = true
		}
	}
	return flags
}

// constrained checks derived flags, bound fields and every enabled
// constraint. It returns "" or a code; blocked builds the blocked code.
func (g *gate) constrained(flags map[string]bool, blocked func(string) Code) Code {
	for key, v := range flags {
		if given, ok := g.payload[key]; ok && Truthy(given) != v {
			return CodeFieldMismatch
		}
	}
	for _, c := range g.s.constraints() {
		var value any
		if d, isDerived := flags[c.field]; isDerived {
			value = d
		} else if c.bind != "" {
			pr := g.s.latest(Percepts, c.bind, func(r *Record) bool { return r.Mode == ModeCommit && r.Status != StatusInvalidated })
			if pr == nil {
				return blocked(c.name) // cannot verify: fail closed
			}
			observed, has := pr.Payload[c.field]
			if given, ok := g.payload[c.field]; ok && (!has || !reflect.DeepEqual(given, observed)) {
				return CodeFieldMismatch
			}
			value = observed
		} else {
			value = g.payload[c.field]
		}
		if Truthy(value) {
			return blocked(c.name)
		}
	}
	return ""
}

// decidePlan is plan feasibility (t7): each step's action grounded, its
// beliefs committed and truthy, and no enabled constraint blocking it.
func (k *Kernel) decidePlan(s *snapshot, p *Record) outcome {
	steps := p.Payload[KeySteps].([]any)
	var used []string
	for _, st := range steps {
		step := Payload(st.(map[string]any))
		action, _ := step.String(KeyAction)
		reqs, _ := step.Strings(KeyRequiresBeliefs)
		g := gate{k: k, s: s, action: action, reqs: reqs, payload: step}
		if code := g.grounded(true); code != "" {
			return outcome{code: code}
		}
		if code := g.satisfied(CodePlanMissingBelief, CodePlanBeliefNotSatisfied); code != "" {
			return outcome{code: code}
		}
		if code := g.constrained(g.derived(), PlanBlockedCode); code != "" {
			return outcome{code: code}
		}
		for _, b := range g.beliefs {
			used = append(used, b.ID)
		}
	}
	return outcome{code: CodePlanFeasible, record: s.commitRecord(p, 0, CodePlanFeasible, p.Payload, used, nil)}
}

// decideAction is action gating (t9): grounded in its spec, beliefs
// committed and truthy, the prediction gate, then constraints on the
// payload and on the flags the kernel derives.
func (k *Kernel) decideAction(s *snapshot, p *Record) outcome {
	reqs, _ := p.Payload.Strings(KeyRequiresBeliefs)
	g := gate{k: k, s: s, action: p.Kind, reqs: reqs, payload: p.Payload}
	if code := g.grounded(false); code != "" {
		return outcome{code: code}
	}
	var plan *Record
	if k.specs[p.Kind].RequirePlan {
		if plan = s.planFor(p.Kind); plan == nil {
			return outcome{code: CodeNoFeasiblePlan}
		}
	}
	if code := g.satisfied(CodeNoCommittedBelief, CodeBeliefNotSatisfied); code != "" {
		return outcome{code: code}
	}
	preds := s.predictions(p.Kind)
	if k.specs[p.Kind].RequirePrediction || p.Payload.Bool(KeyRequirePrediction) {
		if len(preds) == 0 {
			return outcome{code: CodeNoPrediction}
		}
		for _, pr := range preds {
			if v, _ := pr.Payload.Float(KeyExpectedOutcome); v < 0 {
				return outcome{code: CodeNegativePrediction}
			}
		}
	}
	flags := g.derived()
	if code := g.constrained(flags, BlockedCode); code != "" {
		return outcome{code: code}
	}
	payload := make(Payload, len(p.Payload)+len(flags))
	for key, v := range p.Payload {
		payload[key] = v
	}
	for key, v := range flags {
		payload[key] = v
	}
	var inputs, evidence []string
	if plan != nil {
		inputs = append(inputs, plan.ID)
	}
	for _, b := range g.beliefs {
		inputs = append(inputs, b.ID)
		for _, ev := range b.EvidenceRefs {
			if !slices.Contains(evidence, ev) {
				evidence = append(evidence, ev)
			}
		}
	}
	for _, pr := range preds {
		inputs = append(inputs, pr.ID)
	}
	return outcome{code: CodeCommitted, record: s.commitRecord(p, 0, CodeCommitted, payload, inputs, evidence)}
}

// planFor returns the latest committed plan with a step for actionType.
func (s *snapshot) planFor(actionType string) *Record {
	for i := len(s.recs) - 1; i >= 0; i-- {
		r := &s.recs[i]
		if r.Slot != Plans || !committedActive(r) {
			continue
		}
		steps, _ := r.Payload[KeySteps].([]any)
		for _, st := range steps {
			if step, ok := st.(map[string]any); ok && step[KeyAction] == actionType {
				return r
			}
		}
	}
	return nil
}

// predictions returns the committed, active predictions for an action type.
func (s *snapshot) predictions(actionType string) []*Record {
	var out []*Record
	for i := range s.recs {
		r := &s.recs[i]
		if r.Slot == Predictions && committedActive(r) {
			if t, _ := r.Payload.String(KeyActionType); t == actionType {
				out = append(out, r)
			}
		}
	}
	return out
}

// decidePrediction commits a prediction only when the beliefs it rests on
// are committed.
func (k *Kernel) decidePrediction(s *snapshot, p *Record) outcome {
	reqs, _ := p.Payload.Strings(KeyRequiresBeliefs)
	var inputs []string
	for _, kind := range reqs {
		b := s.belief(kind)
		if b == nil {
			return outcome{code: CodePredictionMissingBelief}
		}
		inputs = append(inputs, b.ID)
	}
	return outcome{code: CodeCommitted, record: s.commitRecord(p, 0, CodeCommitted, p.Payload, inputs, nil)}
}

package kernel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
)

// write stores one record written by a handle.
func (k *Kernel) write(ctx context.Context, role Role, writer string, e Entry) (rec Record, err error) {
	ctx, sp := k.span(ctx, "kernel.write", e.TraceID, e.Slot)
	defer func() { endSpan(sp, rec.Reason, err) }()
	rec, deps, err := k.prepare(role, writer, &e)
	if err != nil {
		return Record{}, err
	}
	for attempt := 0; attempt < maxAttempts; attempt++ {
		done, err := k.writeOnce(ctx, &rec, deps)
		if err != nil {
			return Record{}, err
		}
		if done {
			if k.log.Enabled(ctx, slog.LevelDebug) {
				k.log.DebugContext(ctx, "write", "id", rec.ID, "role", role.String(), "kind", rec.Kind)
			}
			return rec, nil
		}
	}
	return Record{}, newErr("write", rec.ID, "", ErrConflict, "no free record id after retries")
}

// prepare validates an entry into the record to write (without its id)
// and lists the belief dependencies it names by record id.
func (k *Kernel) prepare(role Role, writer string, e *Entry) (rec Record, idDeps []string, err error) {
	rec, err = k.checkEntry(role, writer, e)
	if err != nil {
		return Record{}, nil, err
	}
	switch rec.Slot {
	case Beliefs:
		for _, d := range rec.Payload.list(KeyDependsOn) {
			if d := d.(string); looksLikeID(d) {
				idDeps = append(idDeps, d)
			}
		}
	case Constraints:
		if _, ok := rec.Payload[KeyName]; !ok {
			rec.Payload[KeyName] = rec.Kind
		}
		if _, ok := rec.Payload[KeyEnabled]; !ok {
			rec.Payload[KeyEnabled] = true
		}
	}
	return rec, idDeps, nil
}

// checkRecordRefs verifies rec's references against the snapshot of its trace:
// input and evidence refs in the trace or in persistent scope, and belief
// dependencies named by id among the trace's own percepts (they are what
// the belief will be validated against).
func (s *snapshot) checkRecordRefs(ctx context.Context, rec *Record, idDeps []string) error {
	if err := s.checkRefs(ctx, "input ref", rec.Provenance.InputRefs); err != nil {
		return err
	}
	if err := s.checkRefs(ctx, "evidence ref", rec.EvidenceRefs); err != nil {
		return err
	}
	for _, d := range idDeps {
		if r := s.byID(d); r == nil || r.Slot != Percepts {
			return newErr("write", "", CodeInvalidReference, ErrInvalidReference,
				fmt.Sprintf("dependency %q is not a percept of trace %q", d, rec.Provenance.TraceID))
		}
	}
	return nil
}

// writeOnce checks references against a fresh read of the trace and appends
// rec under the next free id. done is false when a concurrent writer
// changed the trace first.
func (k *Kernel) writeOnce(ctx context.Context, rec *Record, idDeps []string) (done bool, err error) {
	n, err := k.readForWrite(ctx, rec, idDeps)
	if err != nil {
		return false, err
	}
	rec.ID = recordID(rec.Slot, rec.Provenance.TraceID, n+1)
	// Conditional on the trace as read, so that n is always the record's
	// position in its trace, even with concurrent writers.
	err = k.store.Apply(ctx, Batch{Appends: []Record{*rec}, Trace: rec.Provenance.TraceID, TraceLen: n})
	if raced(err) {
		return false, nil
	}
	return err == nil, err
}

// readForWrite returns how many records rec's trace holds, checking rec's
// references against the trace on the way. A write that references nothing
// needs only the count, which a [TraceCounter] store gives without reading
// the records.
func (k *Kernel) readForWrite(ctx context.Context, rec *Record, idDeps []string) (int, error) {
	if c, ok := k.store.(TraceCounter); ok && len(rec.Provenance.InputRefs)+len(rec.EvidenceRefs)+len(idDeps) == 0 {
		return c.CountTrace(ctx, rec.Provenance.TraceID)
	}
	snap, err := k.load(ctx, rec.Provenance.TraceID, false)
	if err != nil {
		return 0, err
	}
	defer snap.release()
	if err := snap.checkRecordRefs(ctx, rec, idDeps); err != nil {
		return 0, err
	}
	return len(snap.recs), nil
}

// raced reports whether a store refused a batch because a concurrent writer
// changed the trace first: the caller reads again and retries.
func raced(err error) bool {
	return errors.Is(err, ErrConflict) || errors.Is(err, ErrDuplicateID) || errors.Is(err, ErrNotActive)
}

// submit proposes and decides in one step: the proposal is validated as if
// it had been written, and lands in the same conditional batch as its
// outcome (already superseded or invalidated), so a Submit costs one read
// and one write of the store instead of two each.
func (k *Kernel) submit(ctx context.Context, role Role, writer string, e Entry) (d Decision, err error) {
	ctx, sp := k.span(ctx, "kernel.submit", e.TraceID, e.Slot)
	defer func() { endSpan(sp, d.Code, err) }()
	if e.Mode == 0 {
		e.Mode = ModePropose
	}
	rec, idDeps, err := k.prepare(role, writer, &e)
	if err != nil {
		return Decision{}, err
	}
	if rec.Mode != ModePropose {
		return Decision{}, newErr("submit", "", CodeInvalidProposal, ErrInvalidProposal, "only proposals can be submitted")
	}
	for attempt := 0; attempt < maxAttempts; attempt++ {
		var done bool
		d, done, err = k.submitOnce(ctx, &rec, idDeps)
		if err != nil || done {
			return d, err
		}
	}
	return Decision{}, newErr("submit", rec.ID, "", ErrConflict, "too much contention on the trace")
}

func (k *Kernel) submitOnce(ctx context.Context, rec *Record, idDeps []string) (Decision, bool, error) {
	// Only plans and actions are gated by constraints.
	gated := rec.Slot == Plans || rec.Slot == Actions
	snap, err := k.load(ctx, rec.Provenance.TraceID, gated)
	if err != nil {
		return Decision{}, false, err
	}
	defer snap.release()
	if err := k.expire(ctx, snap); err != nil {
		return Decision{}, false, err
	}
	if err := snap.checkRecordRefs(ctx, rec, idDeps); err != nil {
		return Decision{}, false, err
	}
	readLen := len(snap.recs)
	rec.ID = snap.nextID(rec.Slot, 0)
	snap.recs = append(snap.recs, *rec) // decided as if already written
	p := &snap.recs[readLen]
	return k.applyOutcome(ctx, snap, readLen, p, true)
}

// outcome is what deciding a proposal produced, before it is applied.
type outcome struct {
	grounds  []*Record // the committed beliefs a plan or action rests on
	code     Code
	record   Record // committed record (zero ID when rejected)
	evidence Record // belief evidence artifact (zero ID when none)
}

func (k *Kernel) commit(ctx context.Context, role Role, traceID, proposalID string) (d Decision, err error) {
	const op = "commit"
	ctx, sp := k.span(ctx, "kernel.commit", traceID, 0)
	defer func() { endSpan(sp, d.Code, err) }()
	for attempt := 0; attempt < maxAttempts; attempt++ {
		var done bool
		d, done, err = k.commitOnce(ctx, role, traceID, proposalID)
		if err != nil || done {
			return d, err
		}
	}
	return Decision{}, newErr(op, proposalID, "", ErrConflict, "too much contention on the trace")
}

// commitOnce decides a proposal on a fresh read of its trace and applies the
// outcome as one conditional batch. done is false when a concurrent writer
// changed the trace first.
func (k *Kernel) commitOnce(ctx context.Context, role Role, traceID, proposalID string) (d Decision, done bool, err error) {
	const op = "commit"
	snap, err := k.load(ctx, traceID, true)
	if err != nil {
		return Decision{}, false, err
	}
	defer snap.release()
	// Expire first, so that nothing past its TTL (the proposal itself, a
	// belief, a prediction, a constraint) takes part in the decision.
	if err := k.expire(ctx, snap); err != nil {
		return Decision{}, false, err
	}
	p := snap.byID(proposalID)
	if p == nil {
		detail := "no such proposal"
		if _, err := k.store.Get(ctx, proposalID); err == nil {
			detail = "proposal belongs to another trace"
		}
		return Decision{Code: CodeInvalidProposal}, false, newErr(op, proposalID, CodeInvalidProposal, ErrInvalidProposal, detail)
	}
	if p.Mode != ModePropose {
		return Decision{Code: CodeInvalidProposal}, false, newErr(op, proposalID, CodeInvalidProposal, ErrInvalidProposal, "not a proposal")
	}
	if !Allowed(role, p.Slot, ModePropose) {
		return Decision{}, false, newErr(op, proposalID, CodePermissionDenied, ErrPermission,
			fmt.Sprintf("role %s may not decide %s", role, p.Slot))
	}
	if p.Status != StatusActive {
		return Decision{Code: CodeInvalidProposal, ProposalID: p.ID}, false, newErr(op, proposalID, CodeInvalidProposal, ErrInvalidProposal,
			fmt.Sprintf("proposal is %s (%s)", p.Status, p.Reason))
	}
	return k.applyOutcome(ctx, snap, len(snap.recs), p, false)
}

// applyOutcome decides p on snap and writes the outcome as one batch
// conditional on the trace still holding readLen records. A stored proposal
// is invalidated; a submitted one (not yet stored) is appended already in
// its final state, ahead of the artifact and the committed record. done is
// false when a concurrent writer changed the trace first.
func (k *Kernel) applyOutcome(ctx context.Context, snap *snapshot, readLen int, p *Record, submitted bool) (Decision, bool, error) {
	out := k.decide(ctx, snap, p)
	reason := out.code
	if out.code.OK() {
		reason = CodeSupersededByCommit
	}
	batch := Batch{Trace: snap.traceID, TraceLen: readLen, Appends: snap.appends[:0]}
	if submitted {
		final := *p
		final.Status, final.Reason = StatusInvalidated, reason
		batch.Appends = append(batch.Appends, final)
	} else {
		batch.Invalidations = snap.invs[:1]
		batch.Invalidations[0] = Invalidation{ID: p.ID, Status: StatusInvalidated, Reason: reason}
	}
	if out.code.OK() {
		if out.evidence.ID != "" {
			batch.Appends = append(batch.Appends, out.evidence)
		}
		batch.Appends = append(batch.Appends, out.record)
	}
	err := k.store.Apply(ctx, batch)
	if raced(err) {
		return Decision{}, false, nil
	}
	if err != nil {
		return Decision{}, false, err
	}
	d := Decision{Code: out.code, ProposalID: p.ID, EvidenceID: out.evidence.ID}
	if out.record.ID != "" {
		d.Record = out.record.Clone()
	}
	if k.log.Enabled(ctx, slog.LevelDebug) {
		k.log.DebugContext(ctx, "decide", "proposal", p.ID, "slot", p.Slot.String(), "code", string(out.code))
	}
	return d, true, nil
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
		c := Candidate{snap: s, proposal: p, beliefs: out.grounds}
		for _, v := range k.validators {
			// An OK code is no objection: only the built-in checks build
			// the records a commit writes.
			if vd := v.Validate(ctx, c); vd.rejects() {
				return outcome{code: vd.Code}
			}
		}
	}
	return out
}

// commitRecord builds the committed twin of a proposal.
func (s *snapshot) commitRecord(p *Record, idIndex int, code Code, payload Payload, inputs, evidence []string) Record {
	refs := make([]string, 0, 1+len(p.Provenance.InputRefs)+len(inputs))
	refs = append(refs, p.ID)
	refs = append(refs, p.Provenance.InputRefs...)
	for _, in := range inputs {
		if !slices.Contains(refs, in) {
			refs = append(refs, in)
		}
	}
	return Record{
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

// The checks an evidence artifact records for each dependency: presence,
// freshness, conflict (free, or arbitrated above the threshold) and
// confidence. Constants, so building an artifact allocates no strings.
const (
	checksPassed     = "present,fresh,conflict_free,confident"
	checksArbitrated = "present,fresh,conflict_arbitrated,confident"
)

// decideBelief is evidence validation (paper t3–t5): for each dependency in
// order, missing → stale → conflict (with arbitration) → confidence.
func (k *Kernel) decideBelief(s *snapshot, p *Record) outcome {
	deps := p.Payload.list(KeyDependsOn)
	if len(deps) == 0 {
		return outcome{code: CodeMissingEvidence}
	}
	for _, need := range k.beliefSpecs[p.Kind].DependsOn {
		if !s.dependsOn(deps, need) {
			return outcome{code: CodeMissingEvidence}
		}
	}
	percepts := make([]string, 0, len(deps))
	checks := make([]any, 0, len(deps))
	arbitrated := false
	for _, dep := range deps {
		r := s.perceptFor(dep.(string))
		if r == nil {
			return outcome{code: CodeMissingEvidence}
		}
		if s.stale(r) {
			return outcome{code: CodeStaleEvidence}
		}
		conf := r.Provenance.Confidence
		check := checksPassed
		if r.Payload.Bool(KeyConflict) {
			if conf == nil || *conf < k.conflictThreshold {
				return outcome{code: CodeUnresolvedConflict}
			}
			check, arbitrated = checksArbitrated, true
		}
		if conf != nil && *conf < k.minConfidence {
			return outcome{code: CodeLowConfidence}
		}
		percepts = append(percepts, r.ID)
		checks = append(checks, check)
	}
	// The artifact names, per dependency in order, the checks that passed;
	// its input refs are the percepts they ran on.
	artifact := Record{
		ID:   s.nextID(Evidence, 0),
		Slot: Evidence,
		Mode: ModeCommit,
		Kind: "belief_validation",
		Payload: Payload{
			"belief":      p.Kind,
			"proposal_id": p.ID,
			"checks":      checks,
			"arbitrated":  arbitrated,
			"passed":      true,
			// the thresholds that decided, so an audit need not trust today's config
			"min_confidence":     k.minConfidence,
			"conflict_threshold": k.conflictThreshold,
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

// dependsOn reports whether a belief's declared dependencies name the
// percept kind need, directly or through a percept id.
func (s *snapshot) dependsOn(deps []any, need string) bool {
	for _, d := range deps {
		if d == any(need) {
			return true
		}
		if r := s.perceptFor(d.(string)); r != nil && r.Kind == need {
			return true
		}
	}
	return false
}

// gate holds the checks a plan step and an action share.
type gate struct {
	k       *Kernel
	s       *snapshot
	action  string
	reqs    []any // belief kinds: strings, as checkShape made sure at write
	payload Payload
	// beliefs are the committed beliefs the step or action rests on.
	beliefs []*Record
	buf     [4]*Record // backs beliefs for the usual handful
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
		if !slices.Contains(g.reqs, any(need)) {
			return ungrounded
		}
	}
	return ""
}

// satisfied checks that every required belief is committed and truthy.
func (g *gate) satisfied(missing, unsatisfied Code) Code {
	g.beliefs = g.buf[:0]
	for _, kind := range g.reqs {
		b := g.s.belief(kind.(string))
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

// derivedKeys are the flags the kernel owns, in a fixed order.
var derivedKeys = [...]string{KeyUsesStaleData, KeyUsesConflictedData, KeyUsesLowConfidenceData, KeyHasNegativePrediction}

// flags holds the derived flags, indexed like derivedKeys.
type flags [len(derivedKeys)]bool

// get returns the flag named key, and whether key is a derived flag.
func (f *flags) get(key string) (value, derived bool) {
	for i, k := range derivedKeys {
		if k == key {
			return f[i], true
		}
	}
	return false, false
}

// derived computes the flags the kernel owns from the evidence chain of
// the gate's beliefs and the predictions for its action.
func (g *gate) derived() (f flags) {
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
				f[0] = f[0] || g.s.stale(pr)
				f[1] = f[1] || pr.Payload.Bool(KeyConflict)
				c := pr.Provenance.Confidence
				f[2] = f[2] || pr.Payload.Bool(KeyLowConfidence) || (c != nil && *c < g.k.minConfidence)
			}
		}
	}
	for i := range g.s.recs {
		if pred := &g.s.recs[i]; g.s.isPrediction(pred, g.action) {
			if v, _ := pred.Payload.Float(KeyExpectedOutcome); v < 0 {
				f[3] = true
			}
		}
	}
	return f
}

// constrained checks derived flags, bound fields and every enabled
// constraint. It returns "" or a code; blocked builds the blocked code.
func (g *gate) constrained(f flags, blocked func(string) Code) Code {
	for i, key := range derivedKeys {
		if given, ok := g.payload[key]; ok && Truthy(given) != f[i] {
			return CodeFieldMismatch
		}
	}
	for _, c := range g.s.constraints() {
		var value any
		if d, isDerived := f.get(c.field); isDerived {
			value = d
		} else if c.bind != "" {
			if g.k.specs[g.action].SafeFallback {
				// A bound constraint guards the effect the observed fact
				// makes unsafe; a safe fallback has no such effect.
				continue
			}
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
	var grounds []*Record
	for _, st := range steps {
		step := Payload(st.(map[string]any))
		action, _ := step.String(KeyAction)
		reqs := step.list(KeyRequiresBeliefs)
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
			if !slices.Contains(grounds, b) {
				grounds = append(grounds, b)
			}
		}
	}
	return outcome{code: CodePlanFeasible, grounds: grounds, record: s.commitRecord(p, 0, CodePlanFeasible, p.Payload, used, nil)}
}

// decideAction is action gating (t9): grounded in its spec, beliefs
// committed and truthy, the prediction gate, then constraints on the
// payload and on the flags the kernel derives.
func (k *Kernel) decideAction(s *snapshot, p *Record) outcome {
	reqs := p.Payload.list(KeyRequiresBeliefs)
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
	if t, ok := p.Payload[KeyType]; ok && t != any(p.Kind) {
		// An executor that dispatched on the payload's type would run
		// something the kernel never gated.
		return outcome{code: CodeFieldMismatch}
	}
	flags := g.derived()
	if code := g.constrained(flags, BlockedCode); code != "" {
		return outcome{code: code}
	}
	payload := make(Payload, len(p.Payload)+len(derivedKeys))
	for key, v := range p.Payload {
		payload[key] = v
	}
	for i, key := range derivedKeys {
		payload[key] = flags[i]
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
	return outcome{code: CodeCommitted, grounds: slices.Clone(g.beliefs), record: s.commitRecord(p, 0, CodeCommitted, payload, inputs, evidence)}
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

// isPrediction reports whether r is a committed, active prediction for
// actionType.
func (s *snapshot) isPrediction(r *Record, actionType string) bool {
	if r.Slot != Predictions || !committedActive(r) {
		return false
	}
	t, _ := r.Payload.String(KeyActionType)
	return t == actionType
}

// predictions returns the committed, active predictions for an action type.
func (s *snapshot) predictions(actionType string) []*Record {
	var out []*Record
	for i := range s.recs {
		if r := &s.recs[i]; s.isPrediction(r, actionType) {
			out = append(out, r)
		}
	}
	return out
}

// decidePrediction commits a prediction only when the beliefs it rests on
// are committed.
func (k *Kernel) decidePrediction(s *snapshot, p *Record) outcome {
	reqs := p.Payload.list(KeyRequiresBeliefs)
	inputs := make([]string, 0, len(reqs))
	for _, kind := range reqs {
		b := s.belief(kind.(string))
		if b == nil {
			return outcome{code: CodePredictionMissingBelief}
		}
		inputs = append(inputs, b.ID)
	}
	return outcome{code: CodeCommitted, record: s.commitRecord(p, 0, CodeCommitted, p.Payload, inputs, nil)}
}

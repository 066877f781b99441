package kernel

import (
	"reflect"
	"slices"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/jsonval"
	"github.com/blackboardkernel/bk/reason"
)

// The checks an evidence artifact records for each dependency: presence,
// freshness, conflict (free, or arbitrated above the threshold) and
// confidence. Constants, so building an artifact allocates no strings.
const (
	checksPassed     = "present,current,fresh,conflict_free,confident"
	checksArbitrated = "present,current,fresh,conflict_arbitrated,confident"
)

// The checks boxed once: an artifact's list holds them as values.
var checksPassedV, checksArbitratedV any = checksPassed, checksArbitrated

// beliefRefs backs, for a belief on one or two observations, its
// artifact's percepts (input refs) and checks and the committed belief's
// refs, in one allocation: the two records keep them, and nothing else
// holds any.
type beliefRefs struct {
	percepts [2]string
	checks   [2]any
	refs     [6]string
}

// checkEvidence runs the evidence checks on one observation: fresh (not
// flagged stale, not past its TTL), conflict-free or arbitrated by
// confidence, and confident (not below the minimum, not flagged
// low_confidence by its source). It returns "" or the failing code, and
// whether a conflict was arbitrated.
func (k *Kernel) checkEvidence(s *snapshot, r *blackboard.Record) (code reason.Code, arbitrated bool) {
	if s.stale(r) {
		return reason.StaleEvidence, false
	}
	conf := r.Provenance.Confidence
	if !mutConflict && r.Payload.Bool(keyConflict) {
		if conf == nil || *conf < k.conflictThreshold {
			return reason.UnresolvedConflict, false
		}
		arbitrated = true
	}
	if !mutLowConfidence && (r.Payload.Bool(keyLowConfidence) || conf != nil && *conf < k.minConfidence) {
		return reason.LowConfidence, false
	}
	return "", arbitrated
}

// kindBeliefValidation is the kind of the artifact the kernel writes for
// each committed belief.
const kindBeliefValidation = "belief_validation"

// decideBelief is evidence validation (paper t3–t5): for each dependency in
// order, missing → superseded → stale → conflict (with arbitration) →
// confidence.
func (k *Kernel) decideBelief(s *snapshot, p *blackboard.Record) outcome {
	deps := list(p.Payload, keyDependsOn)
	if !mutMissingEvidence && len(deps) == 0 {
		return outcome{code: reason.MissingEvidence, detail: "the belief names no evidence"}
	}
	for _, need := range k.beliefSpecs[p.Kind].DependsOn {
		if !mutBeliefSpec && !s.dependsOn(deps, need) {
			return outcome{code: reason.MissingEvidence, detail: "the belief spec requires percept " + need}
		}
	}
	// Collected on the stack while they fit, and copied to the heap only
	// for a commit: most refusals (and the re-decision that explains a
	// missing belief) allocate nothing here.
	var (
		pbuf   [4]string
		cbuf   [4]any
		passed = pbuf[:0]
		ran    = cbuf[:0]
	)
	arbitrated := false
	for _, dep := range deps {
		r := s.perceptFor(dep.(string))
		if r == nil {
			if mutMissingEvidence {
				continue
			}
			return outcome{code: reason.MissingEvidence, detail: "no observation " + dep.(string)}
		}
		if cur := s.current(r.Kind); !mutSuperseded && (cur == nil || cur.ID != r.ID) {
			detail := "no current observation " + r.Kind
			if cur != nil {
				detail = "superseded by " + cur.ID
			}
			return outcome{code: reason.SupersededEvidence, failed: r.ID, detail: detail}
		}
		code, arb := k.checkEvidence(s, r)
		if code != "" {
			return refuse(code, r.ID)
		}
		check := checksPassedV
		if arb {
			check, arbitrated = checksArbitratedV, true
		}
		passed = append(passed, r.ID)
		ran = append(ran, check)
	}
	var (
		percepts []string
		checks   []any
		refs     []string // for commitRecord
	)
	if len(passed) <= 2 {
		b := new(beliefRefs)
		percepts = append(b.percepts[:0:len(passed)], passed...)
		checks = append(b.checks[:0:len(ran)], ran...)
		refs = b.refs[:0]
	} else {
		percepts, checks = slices.Clone(passed), slices.Clone(ran)
	}
	// The artifact names, per dependency in order, the checks that passed;
	// its input refs are the percepts they ran on.
	artifact := blackboard.Record{
		ID:   s.nextID(blackboard.Evidence, 0),
		Slot: blackboard.Evidence,
		Mode: blackboard.ModeCommit,
		Kind: kindBeliefValidation,
		Payload: blackboard.Payload{
			"belief":      p.Kind,
			"proposal_id": p.ID,
			"checks":      checks,
			"arbitrated":  arbitrated,
			"passed":      true,
			// the thresholds that decided, so an audit need not trust today's config
			"min_confidence":     k.thresholds[0],
			"conflict_threshold": k.thresholds[1],
		},
		Provenance: blackboard.Provenance{
			Role:        blackboard.RoleKernel,
			Writer:      string(blackboard.RoleKernel),
			TraceID:     s.traceID,
			TimestampMS: s.nowMS,
			InputRefs:   percepts,
			Span:        s.span,
		},
		Status:    blackboard.StatusActive,
		Reason:    reason.Committed,
		Scope:     blackboard.ScopeEpisode,
		Namespace: k.namespace,
	}
	evidence := [1]string{artifact.ID}
	rec := s.commitRecord(p, 1, reason.Committed, p.Payload, percepts, evidence[:], refs)
	return outcome{code: reason.Committed, record: rec, evidence: artifact}
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
	k      *Kernel
	s      *snapshot
	action string
	spec   ActionSpec
	// registered: spec is the owner's (or the default fallback's), not zero
	registered bool
	reqs       []any // belief kinds: strings, as checkShape made sure at write
	payload    blackboard.Payload
	// beliefs are the committed beliefs the step or action rests on,
	// backed by the caller's buffer (on its stack: a gate that pointed
	// into itself would be moved to the heap).
	beliefs []*blackboard.Record
}

// beliefBuf backs a gate's beliefs for the usual handful.
type beliefBuf [4]*blackboard.Record

func (k *Kernel) newGate(s *snapshot, action string, reqs []any, payload blackboard.Payload, buf *beliefBuf) gate {
	spec, registered := k.spec(action)
	return gate{k: k, s: s, action: action, spec: spec, registered: registered, reqs: reqs, payload: payload, beliefs: buf[:0]}
}

// grounded checks the registry and the declared beliefs against the spec.
// It returns "" or a code; plan selects the plan-flavoured code.
func (g *gate) grounded(plan bool) reason.Code {
	if !mutStrictActions && g.k.strictActions && !g.registered {
		return reason.UnknownActionType
	}
	ungrounded := reason.UngroundedAction
	if plan {
		ungrounded = reason.PlanUngrounded
	}
	if !mutGrounding && len(g.reqs) == 0 && !g.spec.SafeFallback {
		return ungrounded
	}
	for _, need := range g.spec.MinBeliefs {
		if !mutMinBeliefs && !slices.Contains(g.reqs, any(need)) {
			return ungrounded
		}
	}
	return ""
}

// satisfied checks that every required belief is committed and truthy,
// and returns them (in g.beliefs' buffer: the caller sets g.beliefs, as an
// append through g would move the buffer to the heap). A missing belief's
// refusal carries the causes of its absence.
func (g *gate) satisfied(missing, unsatisfied reason.Code) ([]*blackboard.Record, outcome) {
	beliefs := g.beliefs[:0]
	for _, kind := range g.reqs {
		b := g.s.belief(kind.(string))
		if b == nil {
			if mutCommittedBelief {
				continue
			}
			return nil, g.s.missingBelief(missing, kind.(string))
		}
		if !mutCommittedBelief && !b.Payload.Bool(keyValue) {
			return nil, refuse(unsatisfied, b.ID)
		}
		beliefs = append(beliefs, b)
	}
	return beliefs, outcome{}
}

// missingBelief explains why no belief of kind is committed: the latest
// proposal of that kind was rejected (and, for an evidence code, which
// percept failed), or a committed one expired.
func (s *snapshot) missingBelief(code reason.Code, kind string) outcome {
	out := outcome{code: code, detail: "no committed belief " + kind}
	if r := s.st.rejectedBelief(kind, s.nowMS); r != nil {
		out.failed = r.ID
		// Room for the cause beneath, which a rejection usually has.
		out.causes = append(make([]Cause, 0, 2), Cause{Code: r.Reason, Record: r.ID})
		if r.Mode == blackboard.ModePropose {
			// Decided again on the trace as it is now, the rejected proposal
			// names the record that failed, when the reason still holds.
			if again := s.k.decideBelief(s, r); again.code == r.Reason && again.failed != "" {
				out.causes = append(out.causes, Cause{Code: again.code, Record: again.failed, Detail: again.detail})
			}
		}
	}
	return out
}

// recheck validates the evidence chain of the gate's beliefs against the
// trace as it is now: each percept an artifact names, and every newer
// observation of its kind, must still pass the evidence checks. It returns
// a refusal (or a zero outcome) and the derived flags.
func (g *gate) recheck() (outcome, flags) {
	var f flags
	for _, b := range g.beliefs {
		for _, evID := range b.EvidenceRefs {
			ev := g.s.byID(evID)
			if ev == nil || ev.Slot != blackboard.Evidence {
				if mutRecheck {
					continue
				}
				out := refuse(reason.MissingEvidence, b.ID)
				out.detail = "evidence artifact " + evID + " is not in the trace"
				return out, f
			}
			for _, pid := range ev.Provenance.InputRefs {
				p := g.s.byID(pid)
				if p == nil || !isObservation(p) {
					if mutRecheck {
						continue
					}
					out := refuse(reason.MissingEvidence, b.ID)
					out.detail = "percept " + pid + " is no longer an observation"
					return out, f
				}
				// The observation itself, and every newer one of its kind:
				// what the world said since must pass too.
				check := func(r *blackboard.Record) (outcome, bool) {
					code, arb := g.k.checkEvidence(g.s, r)
					if !mutRecheck && code != "" {
						out := refuse(code, r.ID)
						out.causes = []Cause{{Code: code, Record: r.ID, Detail: "evidence of belief " + b.ID}}
						return out, true
					}
					f[1] = f[1] || arb
					return outcome{}, false
				}
				if out, failed := check(p); failed {
					return out, f
				}
				if mutSuperseded {
					continue
				}
				seq := seqOf(p.ID)
				for i := range g.s.st.since {
					if o := &g.s.st.since[i]; o.rec.Kind == p.Kind && o.seq >= seq && o.rec.ID != p.ID {
						if out, failed := check(o.rec); failed {
							return out, f
						}
					}
				}
			}
		}
		// Last, so that a newer observation that fails the checks is
		// refused with its own code.
		if out := g.s.exactGrounding(b); out.code != "" {
			return out, f
		}
	}
	return outcome{}, f
}

// exactGrounding refuses a belief that names its evidence by record id
// (a derived belief names the very result it was computed from) once any
// such record is no longer the current observation of its kind: what the
// belief says was computed from that record, and a newer observation,
// however clean, is not what it was computed from (SUPERSEDED_EVIDENCE).
// A belief that names percept kinds rests on the current observation of
// each: [gate.recheck]'s loop over newer observations checks it, and runs
// before this check, so that a newer observation that fails the evidence
// checks is refused with its own code.
func (s *snapshot) exactGrounding(b *blackboard.Record) outcome {
	if mutExactGrounding {
		return outcome{}
	}
	for _, d := range list(b.Payload, keyDependsOn) {
		id, _ := d.(string)
		if !looksLikeID(id) {
			continue
		}
		r := s.byID(id)
		if r == nil || !isObservation(r) {
			continue // the artifact names it too: the evidence checks refuse it
		}
		if cur := s.current(r.Kind); cur != nil && cur.ID != r.ID {
			out := refuse(reason.SupersededEvidence, r.ID)
			out.detail = "belief " + b.ID + " was computed from " + r.ID + ", superseded by " + cur.ID
			out.causes = []Cause{{Code: reason.SupersededEvidence, Record: r.ID, Detail: "evidence of belief " + b.ID}}
			return out
		}
	}
	return outcome{}
}

// derivedKeys are the flags the kernel owns, in a fixed order.
var derivedKeys = [...]string{keyUsesStaleData, keyUsesConflictedData, keyUsesLowConfidenceData, keyHasNegativePrediction}

// flags holds the derived flags, indexed like derivedKeys. Stale and
// low-confidence evidence is refused by [gate.recheck] before flags are
// read, so only an arbitrated conflict and a negative prediction can be
// set; the stale and low-confidence flags stay for constraints that name
// them.
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

// predictions returns the predictions for the gate's action that count:
// committed and active, proposed by a writer the spec trusts, resting on
// declared beliefs that are all still committed.
func (g *gate) predictions() []*blackboard.Record {
	var out []*blackboard.Record
	for i := range g.s.st.preds {
		h := &g.s.st.preds[i]
		r := h.rec
		if !committedActive(r) || h.action != g.action {
			continue
		}
		if mutTrustedPredictions || mutGroundedPredictions {
			if (mutTrustedPredictions || g.trusted(h)) && (mutGroundedPredictions || g.s.grounded(list(r.Payload, keyRequiresBeliefs))) {
				out = append(out, r)
			}
			continue
		}
		if g.trusted(h) && g.s.grounded(list(r.Payload, keyRequiresBeliefs)) {
			out = append(out, r)
		}
	}
	return out
}

// trusted reports whether the proposer of a committed prediction is one the
// spec trusts: a simulator handle, or a writer the spec names.
func (g *gate) trusted(pred *head) bool {
	if pred.propWriter == "" {
		return false
	}
	if len(g.spec.Predictors) == 0 {
		return pred.propRole == blackboard.RoleSimulator
	}
	return slices.Contains(g.spec.Predictors, pred.propWriter)
}

// grounded reports whether reqs names at least one belief and every one is
// committed and active.
func (s *snapshot) grounded(reqs []any) bool {
	if len(reqs) == 0 {
		return false
	}
	for _, kind := range reqs {
		if s.belief(kind.(string)) == nil {
			return false
		}
	}
	return true
}

// constrained checks derived flags, bound fields and every enabled
// constraint that applies to the gate's action. It returns a zero outcome
// or the refusal; blocked builds the blocked code.
func (g *gate) constrained(f flags, blocked func(string) reason.Code) outcome {
	for i, key := range derivedKeys {
		if given, ok := g.payload[key]; !mutDerivedFlags && ok && jsonval.Truthy(given) != f[i] {
			return outcome{code: reason.FieldMismatch, detail: key + " is derived by the kernel"}
		}
	}
	for _, c := range g.s.constraints() {
		if !mutAppliesTo && !c.appliesTo(g.action, g.spec.SafeFallback) {
			continue
		}
		block := func(detail string) outcome {
			return outcome{code: blocked(c.name), rule: c.name, failed: c.rec.ID, detail: detail}
		}
		var value any
		if d, isDerived := f.get(c.field); isDerived && !mutDerivedFlags {
			value = d
		} else if c.bind != "" {
			pr := g.s.current(c.bind)
			if pr == nil {
				if mutFailClosed {
					continue
				}
				return block("no observation " + c.bind + " to read " + c.field + " from") // fail closed
			}
			if code, _ := g.k.checkEvidence(g.s, pr); !mutBoundPercept && code != "" {
				out := block("bound percept " + pr.ID + " fails " + string(code))
				out.causes = []Cause{{Code: code, Record: pr.ID}}
				return out
			}
			observed, has := pr.Payload[c.field]
			if !has {
				if mutFailClosed {
					continue
				}
				return block("bound percept " + pr.ID + " has no " + c.field)
			}
			if given, ok := g.payload[c.field]; !mutBoundPercept && ok && !reflect.DeepEqual(given, observed) {
				return outcome{code: reason.FieldMismatch, rule: c.name, failed: pr.ID, detail: c.field + " disagrees with the bound percept"}
			}
			value = observed
		} else {
			v, has := g.payload[c.field]
			if !has {
				if mutFailClosed {
					continue
				}
				return block("the proposal has no " + c.field) // fail closed
			}
			value = v
		}
		if !mutConstraints && jsonval.Truthy(value) {
			return block(c.field + " is set")
		}
	}
	return outcome{}
}

// decidePlan is plan feasibility (t7): each step's action grounded, its
// beliefs committed and truthy, its evidence still current, and no enabled
// constraint blocking it.
func (k *Kernel) decidePlan(s *snapshot, p *blackboard.Record) outcome {
	steps := p.Payload[keySteps].([]any)
	var ubuf [4]string // commitRecord copies used
	used := ubuf[:0]
	var grounds []*blackboard.Record
	for _, st := range steps {
		step := blackboard.Payload(st.(map[string]any))
		action, _ := step[keyAction].(string)
		var bbuf beliefBuf
		g := k.newGate(s, action, list(step, keyRequiresBeliefs), step, &bbuf)
		if code := g.grounded(true); code != "" {
			return outcome{code: code}
		}
		var out outcome
		if g.beliefs, out = g.satisfied(reason.PlanMissingBelief, reason.PlanBeliefNotSatisfied); out.code != "" {
			return out
		}
		out, f := g.recheck()
		if out.code != "" {
			return out
		}
		f[3] = negative(g.predictions())
		if out := g.constrained(f, planBlockedCode); out.code != "" {
			return out
		}
		for _, b := range g.beliefs {
			used = append(used, b.ID)
			if len(k.validators) > 0 && !slices.Contains(grounds, b) { // only the custom validators read them
				grounds = append(grounds, b)
			}
		}
	}
	return outcome{code: reason.PlanFeasible, grounds: grounds, record: s.commitRecord(p, 0, reason.PlanFeasible, p.Payload, used, nil, nil)}
}

// negative reports whether any prediction expects a harmful outcome.
func negative(preds []*blackboard.Record) bool {
	for _, pr := range preds {
		if v, _ := pr.Payload.Float(keyExpectedOutcome); v < 0 {
			return true
		}
	}
	return false
}

// decideAction is action gating (t9): grounded in its spec, beliefs
// committed and truthy, their evidence still current, the grounding not
// used up, the prediction gate, then constraints on the payload and on the
// flags the kernel derives.
func (k *Kernel) decideAction(s *snapshot, p *blackboard.Record) outcome {
	var bbuf beliefBuf
	g := k.newGate(s, p.Kind, list(p.Payload, keyRequiresBeliefs), p.Payload, &bbuf)
	if code := g.grounded(false); code != "" {
		return outcome{code: code}
	}
	var plan *blackboard.Record
	if !mutRequirePlan && g.spec.RequirePlan {
		if plan = s.planFor(p.Kind); plan == nil {
			return outcome{code: reason.NoFeasiblePlan}
		}
	}
	var out outcome
	if g.beliefs, out = g.satisfied(reason.NoCommittedBelief, reason.BeliefNotSatisfied); out.code != "" {
		return out
	}
	out, flags := g.recheck()
	if out.code != "" {
		return out
	}
	if !mutUsedGrounding && !g.spec.Repeatable {
		if prior, ref := s.usedGrounding(p.Kind, g.beliefs); prior != "" {
			return outcome{code: reason.DuplicateAction, failed: prior, detail: "observation " + ref + " already grounded " + prior}
		}
	}
	preds := g.predictions()
	flags[3] = negative(preds)
	if !mutPredictionGate && (g.spec.RequirePrediction || p.Payload.Bool(keyRequirePrediction)) {
		if len(preds) == 0 {
			return outcome{code: reason.NoPrediction}
		}
		if flags[3] {
			return outcome{code: reason.NegativePrediction}
		}
	}
	if t, ok := p.Payload[keyType]; !mutTypeMismatch && ok && t != any(p.Kind) {
		// An executor that dispatched on the payload's type would run
		// something the kernel never gated.
		return outcome{code: reason.FieldMismatch, detail: "payload type differs from the action's kind"}
	}
	if out := g.constrained(flags, reason.Blocked); out.code != "" {
		return out
	}
	payload := make(blackboard.Payload, len(p.Payload)+len(derivedKeys))
	for key, v := range p.Payload {
		payload[key] = v
	}
	for i, key := range derivedKeys {
		payload[key] = flags[i]
	}
	// On the stack while they fit: commitRecord copies them.
	var ibuf, ebuf [6]string
	inputs, evidence := ibuf[:0], ebuf[:0]
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
	out = outcome{code: reason.Committed, record: s.commitRecord(p, 0, reason.Committed, payload, inputs, evidence, nil)}
	if len(k.validators) > 0 { // only the custom validators read them
		out.grounds = slices.Clone(g.beliefs)
	}
	return out
}

// usedGrounding returns the earliest committed action of actionType that
// rests on an observation the given beliefs rest on, and that observation,
// or "": a commit uses up the evidence, not the belief that cites it, so a
// new belief over the same observation grounds nothing new. Observations
// are read from the beliefs' validation artifacts (the kernel's, never
// input refs a planner can pad); the state keeps, per observation that can
// still ground a commit, the first action of each type it grounded (see
// [traceState]); the earliest is named whatever the order of the beliefs.
// A retired action ([Governor.Retire]) still counts in its trace.
func (s *snapshot) usedGrounding(actionType string, beliefs []*blackboard.Record) (prior, ref string) {
	seq := 0
	for _, b := range beliefs {
		for _, ev := range b.EvidenceRefs {
			art := s.byID(ev)
			if art == nil || !isArtifact(art) {
				continue
			}
			for _, r := range groundedBy(art) {
				if by := s.st.usedBy(r, actionType); by != "" && (prior == "" || seqOf(by) < seq) {
					prior, ref, seq = by, r, seqOf(by)
				}
			}
		}
	}
	return prior, ref
}

// groundedBy returns what a commit resting on the validation artifact art
// uses up: the observations it names (the artifact itself under the
// used_observation mutation, as before observations were what a commit
// uses up).
func groundedBy(art *blackboard.Record) []string {
	if mutUsedObservation {
		return []string{art.ID}
	}
	return art.Provenance.InputRefs
}

// isArtifact reports whether r is a belief's validation artifact, which
// only the kernel writes.
func isArtifact(r *blackboard.Record) bool {
	return r.Slot == blackboard.Evidence && r.Mode == blackboard.ModeCommit && r.Provenance.Role == blackboard.RoleKernel && r.Kind == kindBeliefValidation
}

// planFor returns the latest committed plan with a step for actionType.
func (s *snapshot) planFor(actionType string) *blackboard.Record {
	var best *head
	for i := range s.st.heads {
		h := &s.st.heads[i]
		if h.rec.Slot != blackboard.Plans || !committedActive(h.rec) || best != nil && best.seq > h.seq {
			continue
		}
		steps, _ := h.rec.Payload[keySteps].([]any)
		for _, st := range steps {
			if step, ok := st.(map[string]any); ok && step[keyAction] == actionType {
				best = h
				break
			}
		}
	}
	if best == nil {
		return nil
	}
	return best.rec
}

// decidePrediction commits a prediction only when it declares the beliefs
// it rests on and they are committed.
func (k *Kernel) decidePrediction(s *snapshot, p *blackboard.Record) outcome {
	reqs := list(p.Payload, keyRequiresBeliefs)
	if !mutGroundedPredictions && len(reqs) == 0 {
		return outcome{code: reason.PredictionMissingBelief, detail: "the prediction names no belief"}
	}
	inputs := make([]string, 0, len(reqs))
	for _, kind := range reqs {
		b := s.belief(kind.(string))
		if b == nil {
			if mutGroundedPredictions {
				continue
			}
			return s.missingBelief(reason.PredictionMissingBelief, kind.(string))
		}
		inputs = append(inputs, b.ID)
	}
	return outcome{code: reason.Committed, record: s.commitRecord(p, 0, reason.Committed, p.Payload, inputs, nil, nil)}
}

// planBlockedCode is the code a plan step gets when the named constraint
// blocks it: "PLAN_<NAME>_BLOCKED".
func planBlockedCode(constraint string) reason.Code {
	return "PLAN_" + reason.Blocked(constraint)
}

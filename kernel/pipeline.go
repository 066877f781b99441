package kernel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// write stores one record written by a handle; governed says the write
// comes through the [Governor], which alone may claim once-keys and
// append follow records (then).
func (k *Kernel) write(ctx context.Context, role blackboard.Role, writer string, e Entry, governed bool, then func(blackboard.Record) ([]Follow, error)) (w written, err error) {
	ctx, sp := k.span(ctx, "kernel.write", e.TraceID, e.Slot)
	var why reason.Code // the record's, once written
	defer func() { endSpan(sp, why, err) }()
	if err := checkGoverned("write", e, governed); err != nil {
		return written{}, err
	}
	if err := k.checkReserved("write", e.Slot, e.Kind, writer, governed); err != nil {
		return written{}, err
	}
	rec, deps, err := k.prepare(role, writer, &e)
	if err != nil {
		return written{}, err
	}
	rec.Provenance.Span = spanRef(ctx)
	if err := k.checkOnceKeys(role, e.OnceKeys, governed); err != nil {
		return written{}, err
	}
	// The first attempt decides at the time the record was stamped with;
	// a retry reads the clock again.
	at := rec.Provenance.TimestampMS
	for attempt := 0; attempt < maxAttempts; attempt++ {
		w, done, err := k.writeOnce(ctx, &rec, deps, then, e.OnceKeys, at)
		at = 0
		if err != nil {
			return written{}, err
		}
		if done {
			why = rec.Reason
			if k.log.Enabled(ctx, slog.LevelDebug) {
				k.log.DebugContext(ctx, "write", "id", rec.ID, "role", string(role), "kind", rec.Kind)
			}
			return w, nil
		}
	}
	return written{}, newErr("write", rec.ID, "", blackboard.ErrConflict, "no free record id after retries")
}

// prepare validates an entry into the record to write (without its id)
// and lists the belief dependencies it names by record id.
func (k *Kernel) prepare(role blackboard.Role, writer string, e *Entry) (rec blackboard.Record, idDeps []string, err error) {
	rec, err = k.checkEntry(role, writer, e)
	if err != nil {
		return blackboard.Record{}, nil, err
	}
	switch rec.Slot {
	case blackboard.Beliefs:
		for _, d := range list(rec.Payload, keyDependsOn) {
			if d := d.(string); looksLikeID(d) {
				idDeps = append(idDeps, d)
			}
		}
	case blackboard.Constraints:
		if _, ok := rec.Payload[keyName]; !ok {
			rec.Payload[keyName] = rec.Kind
		}
		if _, ok := rec.Payload[keyEnabled]; !ok {
			rec.Payload[keyEnabled] = true
		}
	}
	return rec, idDeps, nil
}

// checkRecordRefs verifies rec's references against the snapshot of its trace:
// input and evidence refs in the trace or in persistent scope, and belief
// dependencies named by id among the trace's own percepts (they are what
// the belief will be validated against).
func (s *snapshot) checkRecordRefs(ctx context.Context, rec *blackboard.Record, idDeps []string) error {
	if mutReferences {
		return nil
	}
	if err := s.checkRefs(ctx, "input ref", rec.Provenance.InputRefs); err != nil {
		return err
	}
	if err := s.checkRefs(ctx, "evidence ref", rec.EvidenceRefs); err != nil {
		return err
	}
	for _, d := range idDeps {
		if r := s.byID(d); r == nil || r.Slot != blackboard.Percepts {
			return newErr("write", "", reason.InvalidReference, ErrInvalidReference,
				fmt.Sprintf("dependency %q is not a percept of trace %q", d, rec.Provenance.TraceID))
		}
	}
	return nil
}

// checkGoverned refuses once-keys on a write that does not come through
// the [Governor]: an ordinary handle could otherwise claim a key another
// action or the gate derives and block it for ever. Nothing is stored.
func checkGoverned(op string, e Entry, governed bool) error {
	if governed {
		return nil
	}
	if !mutGovernedKeys && len(e.OnceKeys) > 0 {
		return newErr(op, "", reason.PermissionDenied, blackboard.ErrPermission, "only the kernel's owner, through its Governor, claims once-keys")
	}
	return nil
}

// checkReserved refuses a proposal of a kind reserved to governance code
// ([Config.Reserved]) unless the Governor submits it as one of the writers
// the kind is reserved to. commit passes writer "" and governed false: a
// reserved kind's proposals are decided as they are submitted, so an
// active one to commit later is never legitimate.
func (k *Kernel) checkReserved(op string, slot blackboard.Slot, kind, writer string, governed bool) error {
	if slot == blackboard.Beliefs && mutReservedBeliefs || slot == blackboard.Actions && mutReservedActions {
		return nil
	}
	writers, ok := k.reserved[reservation{slot, kind}]
	if !ok || governed && slices.Contains(writers, writer) {
		return nil
	}
	return newErr(op, "", reason.PermissionDenied, blackboard.ErrPermission,
		fmt.Sprintf("%s kind %q is reserved to governance code (writers %q)", slot, kind, writers))
}

// checkOnceKeys refuses keys from any role but a tool (unless the kernel
// derived them itself, governed), keys on a store that cannot enforce
// them, and malformed keys.
func (k *Kernel) checkOnceKeys(role blackboard.Role, keys []string, governed bool) error {
	if len(keys) == 0 {
		return nil
	}
	if role != blackboard.RoleTool && !governed {
		return newErr("write", "", reason.PermissionDenied, blackboard.ErrPermission, fmt.Sprintf("role %s may not claim once-keys", role))
	}
	for i, key := range keys {
		if err := checkName("once-key", key); err != nil || slices.Contains(keys[:i], key) {
			return newErr("write", "", reason.InvalidInput, blackboard.ErrInvalidInput, fmt.Sprintf("bad or repeated once-key %q", key))
		}
	}
	return nil
}

// writeOnce checks references against a fresh read of the trace's state
// and appends rec under the next free id, with the records then returns
// and the once-keys, and returns the ids of what it appended. done is false when a concurrent writer changed the trace
// first.
func (k *Kernel) writeOnce(ctx context.Context, rec *blackboard.Record, idDeps []string, then func(blackboard.Record) ([]Follow, error), keys []string, nowMS int64) (w written, done bool, err error) {
	snap, err := k.loadForWriteAt(ctx, rec.Provenance.TraceID, false, nowMS)
	if err != nil {
		return written{}, false, err
	}
	defer snap.release()
	if err := snap.checkRecordRefs(ctx, rec, idDeps); err != nil {
		return written{}, false, err
	}
	n := snap.n
	rec.ID = store.RecordID(rec.Slot, k.namespace, rec.Provenance.TraceID, n+1)
	// Conditional on the trace as read, so that n is always the record's
	// position in its trace, even with concurrent writers.
	b := store.Batch{Appends: snap.appends[:0]}
	b.Appends = append(b.Appends, *rec)
	for _, key := range keys {
		b.Claims = append(b.Claims, store.Claim{Key: key, RecordID: rec.ID})
	}
	if then != nil {
		// A copy: the record is what the store keeps (see Governor.Write).
		follows, err := then(rec.Clone())
		if err != nil {
			return written{}, false, err
		}
		if b, w.Appended, err = snap.follow(ctx, b, follows, n+2, rec.Provenance.TimestampMS, rec.Provenance.Span); err != nil {
			return written{}, false, err
		}
	}
	err = snap.apply(ctx, b)
	if len(b.Claims) > 0 && errors.Is(err, blackboard.ErrDuplicateKey) {
		// A claimed key stays claimed: trying again cannot help.
		return written{}, false, newErr("write", rec.ID, reason.DuplicateAction, blackboard.ErrDuplicateKey, err.Error())
	}
	if raced(err) {
		return written{}, false, nil
	}
	if err != nil {
		return written{}, false, err
	}
	w.ID = rec.ID
	return w, true, nil
}

// raced reports whether a store refused a batch because a concurrent writer
// changed the trace first: the caller reads again and retries.
func raced(err error) bool {
	return errors.Is(err, blackboard.ErrConflict) || errors.Is(err, store.ErrDuplicateID) || errors.Is(err, store.ErrNotActive) ||
		errors.Is(err, blackboard.ErrDuplicateKey)
}

// submit proposes and decides in one step: the proposal is validated as if
// it had been written, and lands in the same conditional batch as its
// outcome (already superseded or invalidated), so a Submit costs one read
// and one write of the store instead of two each.
func (k *Kernel) submit(ctx context.Context, role blackboard.Role, writer string, e Entry, governed bool, then func(Decision, blackboard.Record) ([]Follow, error)) (d Decision, err error) {
	ctx, sp := k.span(ctx, "kernel.submit", e.TraceID, e.Slot)
	var start time.Time
	if k.metricsOn(ctx) {
		start = time.Now()
	}
	defer func() {
		if err == nil {
			k.decided(ctx, sp, start, role, writer, e.Kind, e.Slot, &d)
		}
		endSpan(sp, d.Code, err)
	}()
	if err := checkGoverned("submit", e, governed); err != nil {
		return Decision{}, err
	}
	if err := k.checkReserved("submit", e.Slot, e.Kind, writer, governed); err != nil {
		return Decision{}, err
	}
	if e.Mode == "" {
		e.Mode = blackboard.ModePropose
	}
	rec, idDeps, err := k.prepare(role, writer, &e)
	if err != nil {
		return Decision{}, err
	}
	if rec.Mode != blackboard.ModePropose {
		return Decision{}, newErr("submit", "", reason.InvalidProposal, ErrInvalidProposal, "only proposals can be submitted")
	}
	if err := k.checkOnceKeys(role, e.OnceKeys, governed); err != nil {
		return Decision{}, err
	}
	rec.Provenance.Span = spanRef(ctx)
	at := rec.Provenance.TimestampMS // as in write
	for attempt := 0; attempt < maxAttempts; attempt++ {
		var done bool
		d, done, err = k.submitOnce(ctx, &rec, idDeps, then, e.OnceKeys, at)
		at = 0
		if err != nil || done {
			return d, err
		}
	}
	return Decision{}, newErr("submit", rec.ID, "", blackboard.ErrConflict, "too much contention on the trace")
}

func (k *Kernel) submitOnce(ctx context.Context, rec *blackboard.Record, idDeps []string, then func(Decision, blackboard.Record) ([]Follow, error), keys []string, nowMS int64) (Decision, bool, error) {
	// Only plans and actions are gated by constraints.
	gated := rec.Slot == blackboard.Plans || rec.Slot == blackboard.Actions
	snap, err := k.loadForWriteAt(ctx, rec.Provenance.TraceID, gated, nowMS)
	if err != nil {
		return Decision{}, false, err
	}
	defer snap.release()
	if err := snap.checkRecordRefs(ctx, rec, idDeps); err != nil {
		return Decision{}, false, err
	}
	snap.decides = true
	expiries := snap.markExpired()
	snap.reserveIDs(rec.Slot, "")
	rec.ID = snap.nextID(rec.Slot, 0)
	p := snap.pend(rec) // decided as if already written
	return k.applyOutcome(ctx, snap, expiries, p, true, then, keys)
}

// outcome is what deciding a proposal produced, before it is applied.
type outcome struct {
	code     reason.Code
	record   blackboard.Record // committed record (zero ID when rejected)
	evidence blackboard.Record // belief evidence artifact (zero ID when none)
	// why a refusal: the rule or constraint, the failing record, a detail
	// and the causes beneath the code (see [Decision])
	rule, failed, detail string
	causes               []Cause
	grounds              []*blackboard.Record // the committed beliefs a plan or action rests on
	claim                store.Claim          // the once-key an action takes (empty Key when none)
}

// refuse is a refusal with code about the record failed.
func refuse(code reason.Code, failed string) outcome { return outcome{code: code, failed: failed} }

func (k *Kernel) commit(ctx context.Context, role blackboard.Role, traceID, proposalID string) (d Decision, err error) {
	const op = "commit"
	ctx, sp := k.span(ctx, "kernel.commit", traceID, "")
	var start time.Time
	if k.metricsOn(ctx) {
		start = time.Now()
	}
	defer func() {
		if err == nil && (sp != nil || !start.IsZero() || k.log.Enabled(ctx, slog.LevelDebug)) {
			// Observed: read the proposal for its kind and writer.
			if p, perr := k.store.Get(ctx, proposalID); perr == nil {
				k.decided(ctx, sp, start, role, p.Provenance.Writer, p.Kind, p.Slot, &d)
			}
		}
		endSpan(sp, d.Code, err)
	}()
	for attempt := 0; attempt < maxAttempts; attempt++ {
		var done bool
		d, done, err = k.commitOnce(ctx, role, traceID, proposalID)
		if err != nil || done {
			return d, err
		}
	}
	return Decision{}, newErr(op, proposalID, "", blackboard.ErrConflict, "too much contention on the trace")
}

// commitOnce decides a proposal on a fresh read of its trace and applies the
// outcome as one conditional batch. done is false when a concurrent writer
// changed the trace first.
func (k *Kernel) commitOnce(ctx context.Context, role blackboard.Role, traceID, proposalID string) (d Decision, done bool, err error) {
	const op = "commit"
	snap, err := k.loadForWrite(ctx, traceID, true)
	if err != nil {
		return Decision{}, false, err
	}
	defer snap.release()
	// Expire first, so that nothing past its TTL (the proposal itself, a
	// belief, a prediction, a constraint) takes part in the decision. The
	// expiries are written with the decision.
	snap.decides = true
	expiries := snap.markExpired()
	p := snap.byID(proposalID)
	if snap.err != nil {
		return Decision{}, false, snap.err
	}
	if p == nil {
		detail := "no such proposal"
		if _, err := k.store.Get(ctx, proposalID); err == nil {
			detail = "proposal belongs to another trace"
		}
		return Decision{Code: reason.InvalidProposal}, false, newErr(op, proposalID, reason.InvalidProposal, ErrInvalidProposal, detail)
	}
	if !mutCommitOnce && p.Mode != blackboard.ModePropose {
		return Decision{Code: reason.InvalidProposal}, false, newErr(op, proposalID, reason.InvalidProposal, ErrInvalidProposal, "not a proposal")
	}
	if !mutPermissions && !allowed(role, p.Slot, blackboard.ModePropose) {
		return Decision{}, false, newErr(op, proposalID, reason.PermissionDenied, blackboard.ErrPermission,
			fmt.Sprintf("role %s may not decide %s", role, p.Slot))
	}
	if err := k.checkReserved(op, p.Slot, p.Kind, "", false); err != nil {
		return Decision{}, false, err
	}
	if !mutCommitOnce && p.Status != blackboard.StatusActive {
		if p.Status == blackboard.StatusExpired && len(expiries)+len(snap.late) > 0 {
			// Deciding an expired proposal is refused, and its expiry is
			// what that decision records.
			if err := snap.apply(ctx, store.Batch{Invalidations: expiries}); err != nil && !raced(err) {
				return Decision{}, false, err
			}
		}
		return Decision{Code: reason.InvalidProposal, ProposalID: p.ID}, false, newErr(op, proposalID, reason.InvalidProposal, ErrInvalidProposal,
			fmt.Sprintf("proposal is %s (%s)", p.Status, p.Reason))
	}
	snap.reserveIDs(p.Slot, p.ID)
	return k.applyOutcome(ctx, snap, expiries, p, false, nil, nil)
}

// applyOutcome decides p on snap and writes the outcome, with the
// expiries the snapshot showed, as one batch conditional on the trace still
// holding readLen records. A stored proposal is invalidated; a submitted
// one (not yet stored) is appended already in its final state, ahead of the
// artifact and the committed record. done is false when a concurrent writer
// changed the trace first. then, when not nil, adds the records that
// follow the decision in the same batch. keys are the submitter's
// once-keys (a governed Submit's), claimed in the batch by the committed
// record, or by the proposal when it is refused.
func (k *Kernel) applyOutcome(ctx context.Context, snap *snapshot, expiries []store.Invalidation, p *blackboard.Record, submitted bool, then func(Decision, blackboard.Record) ([]Follow, error), keys []string) (Decision, bool, error) {
	out, err := k.decide(ctx, snap, p)
	if err != nil {
		return Decision{}, false, err
	}
	why := out.code
	if out.code.OK() {
		why = reason.SupersededByCommit
	}
	batch := store.Batch{Appends: snap.appends[:0], Invalidations: expiries}
	if submitted {
		final := *p
		final.Status, final.Reason = blackboard.StatusInvalidated, why
		batch.Appends = append(batch.Appends, final)
	} else {
		inv := store.Invalidation{ID: p.ID, Status: blackboard.StatusInvalidated, Reason: why}
		if expiries == nil {
			batch.Invalidations = append(snap.invs[:0], inv)
		} else {
			batch.Invalidations = append(batch.Invalidations, inv)
		}
	}
	if out.code.OK() {
		if out.evidence.ID != "" {
			batch.Appends = append(batch.Appends, out.evidence)
		}
		batch.Appends = append(batch.Appends, out.record)
		if out.claim.Key != "" {
			batch.Claims = append(snap.claims[:0], out.claim)
		}
	}
	if len(keys) > 0 {
		holder := p.ID
		if out.code.OK() {
			holder = out.record.ID
		}
		for _, key := range keys {
			batch.Claims = append(batch.Claims, store.Claim{Key: key, RecordID: holder})
		}
	}
	d := Decision{
		ID: snap.decisionID, Code: out.code, ProposalID: p.ID, EvidenceID: out.evidence.ID,
		Rule: out.rule, Failed: out.failed, Detail: out.detail, Causes: out.causes,
	}
	if d.ID == "" { // not reserved: see [snapshot.reserveIDs]
		d.ID = decisionPrefix + p.ID
	}
	d.CommittedID = out.record.ID
	if then != nil {
		if p.Slot == blackboard.Plans || p.Slot == blackboard.Actions {
			d.Constraints = snap.constraintNames()
		}
		// The governance code gets a copy: the batch's record is what the
		// store keeps (a memory store keeps its payload and slices as they
		// are), and no caller holds a mutable alias of stored state.
		var committed blackboard.Record
		if out.record.ID != "" {
			committed = out.record.Clone()
		}
		follows, err := then(d, committed)
		if err != nil {
			return Decision{}, false, err
		}
		for _, f := range follows {
			if len(f.Entry.OnceKeys) > 0 {
				return Decision{}, false, newErr("submit", p.ID, reason.PermissionDenied, blackboard.ErrPermission, "a decision's follow records claim no once-keys")
			}
		}
		first := snap.n + len(batch.Appends)
		if !submitted {
			first++
		}
		if batch, d.Appended, err = snap.follow(ctx, batch, follows, first, snap.nowMS, snap.span); err != nil {
			return Decision{}, false, err
		}
	}
	err = snap.apply(ctx, batch)
	if len(keys) > 0 && errors.Is(err, blackboard.ErrDuplicateKey) {
		// The submitter's key stays claimed: deciding again cannot help.
		// (An action's own key taken meanwhile is a race: decided again,
		// it is DUPLICATE_ACTION.)
		for _, key := range keys {
			if _, cerr := k.store.ClaimedBy(ctx, k.keySpace(), key); cerr == nil {
				return Decision{}, false, newErr("submit", p.ID, reason.DuplicateAction, blackboard.ErrDuplicateKey, "once-key "+key+" is claimed")
			}
		}
	}
	if raced(err) {
		return Decision{}, false, nil
	}
	if err != nil {
		return Decision{}, false, err
	}
	k.recordExpiries(ctx, snap, expiries)
	return d, true, nil
}

// decide runs the slot's validation on a proposal and, if it passes, the
// custom validators and the once-key lookup, and builds the records to
// commit. An error means the decision could not be made (a store failure).
func (k *Kernel) decide(ctx context.Context, s *snapshot, p *blackboard.Record) (outcome, error) {
	var out outcome
	switch p.Slot {
	case blackboard.Beliefs:
		out = k.decideBelief(s, p)
	case blackboard.Plans:
		out = k.decidePlan(s, p)
	case blackboard.Actions:
		out = k.decideAction(s, p)
	case blackboard.Predictions:
		out = k.decidePrediction(s, p)
	}
	if !mutValidators && out.code.OK() && len(k.validators) > 0 {
		c := Candidate{snap: s, proposal: p, beliefs: out.grounds}
		for _, v := range k.validators {
			// An OK code is no objection: only the built-in checks build
			// the records a commit writes.
			if vd := v.Validate(ctx, c); vd.rejects() {
				if err := ctx.Err(); err != nil {
					// A validator cut short by cancellation did not decide.
					return outcome{}, err
				}
				return outcome{code: vd.Code, rule: vd.Rule, failed: vd.Record, detail: vd.Detail}, nil
			}
		}
	}
	if out.code.OK() && p.Slot == blackboard.Actions {
		if o := k.specs[p.Kind].Once; !mutOnceKey && o != nil {
			return k.claimOnce(ctx, s, p, o, out)
		}
	}
	return out, nil
}

// commitRecord builds the committed twin of a proposal. Committed plans and
// actions never expire: what the kernel decided to do stays on the record.
// It copies inputs and evidence (the callers' may be on their stack), the
// record's input and evidence refs into one allocation, each capped at its
// length so that appending to one never writes into the other. spare,
// when its capacity is enough, backs them instead (the caller's, for the
// record alone).
func (s *snapshot) commitRecord(p *blackboard.Record, idIndex int, code reason.Code, payload blackboard.Payload, inputs, evidence, spare []string) blackboard.Record {
	need := 1 + len(p.Provenance.InputRefs) + len(inputs) + len(evidence)
	var buf []string
	if cap(spare) >= need {
		buf = spare[:0:need]
	} else {
		buf = make([]string, 0, need)
	}
	refs := append(buf, p.ID)
	refs = append(refs, p.Provenance.InputRefs...)
	for _, in := range inputs {
		if !slices.Contains(refs, in) {
			refs = append(refs, in)
		}
	}
	refs = refs[:len(refs):len(refs)]
	var evRefs []string
	if len(evidence) > 0 {
		evRefs = append(buf[len(refs):len(refs)], evidence...)
	}
	ttl := p.Provenance.TTLMS
	if !mutActionExpiry && (p.Slot == blackboard.Plans || p.Slot == blackboard.Actions) {
		ttl = 0
	}
	return blackboard.Record{
		ID:      s.nextID(p.Slot, idIndex),
		Slot:    p.Slot,
		Mode:    blackboard.ModeCommit,
		Kind:    p.Kind,
		Payload: payload,
		Provenance: blackboard.Provenance{
			Role:        blackboard.RoleKernel,
			Writer:      string(blackboard.RoleKernel),
			TraceID:     s.traceID,
			TimestampMS: s.nowMS,
			InputRefs:   refs,
			Confidence:  p.Provenance.Confidence,
			TTLMS:       ttl,
			Span:        s.span,
		},
		EvidenceRefs: evRefs,
		Status:       blackboard.StatusActive,
		Reason:       code,
		Scope:        p.Scope,
		Namespace:    s.k.namespace,
	}
}

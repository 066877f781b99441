package kernel

import (
	"slices"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// traceState is the decision state of one trace: everything a decision
// reads, kept up to date by every batch the kernel applies, so that a
// decision reads it and the few records it names instead of the whole
// trace. It is never modified once built: a batch derives a new one
// ([traceState.next]), and a [store.StateStore] keeps it with the trace.
//
// What it holds, and why that is enough:
//   - heads: the latest committed record of each slot and kind. A decision
//     reads the current observation of a percept kind, the committed belief
//     of a kind, plans and actions through them. The latest commit of a
//     kind stands for the kind: when it expires, no earlier one of the same
//     kind stands in.
//   - for each belief head, its validation artifact and the observations
//     that artifact names; and, for each percept kind a belief head rests
//     on, every observation of that kind from the oldest one a belief head
//     names on: the recheck of an action's evidence reads them all;
//   - the committed, active predictions (each one counts, so a negative
//     prediction is never hidden by a later positive one);
//   - what each commit used up: for every observation that can still
//     ground a commit (a current one, or one a belief head rests on), the
//     actions it grounded, by type;
//   - the committed, active constraints of the trace's own scope;
//   - for each belief kind, the latest belief record that is neither active
//     nor superseded by a commit, which explains a missing belief.
type traceState struct {
	heads    []head
	cons     []blackboard.Record
	rejected []head // per belief kind, the latest record that explains an absence (rec and seq)
	preds    []head // committed, active predictions, in append order
	since    []head // observations of the kinds belief heads rest on (rec and seq), in append order
	pending  []head // belief proposals still active (one may expire and explain an absence)
	used     []usedMark
	// viewable says that every proposal the trace ever held active was a
	// belief proposal, so that its pending proposals are st.pending and a
	// view may be read from the state (see [snapshot.view]). One bit, not
	// a list of the other proposals: those go through the trace.
	viewable bool
	// hbuf backs heads when they fit, which saves the allocation of
	// their copy in most batches (see [traceState.mineHeads]). A state
	// that shares heads from the state it derives from keeps that one's
	// struct alive, but not those it derived from in turn.
	hbuf [8]head
	// ubuf backs used in the same way: most traces hold a mark or two.
	ubuf [2]usedMark
	// own marks the slices this state has copied from the state it derives
	// from (while [traceState.next] builds it): the others are shared and
	// must be copied before they change in place.
	own uint8
}

// The slices of a traceState, as bits of its own field.
const (
	ownHeads uint8 = 1 << iota
	ownCons
	ownRejected
	ownPreds
	ownSince
	ownPending
	ownUsed
	ownAll = 1<<7 - 1
)

// mine makes *s, the slice of bit, st's own: the first time, it copies
// it from the state st derives from (with room for a few appends), so
// that changing it in place or appending to it leaves that state as it
// was.
func mine[T any](st *traceState, bit uint8, s *[]T) {
	if st.own&bit == 0 {
		st.own |= bit
		*s = append(make([]T, 0, len(*s)+4), *s...)
	}
}

// mineIn is [mine] for a slice that st backs with buf when it fits with
// room for a few appends: st.heads in st.hbuf, st.used in st.ubuf. It
// saves the allocation of the copy in most batches.
func mineIn[T any](st *traceState, bit uint8, s *[]T, buf []T, room int) {
	if st.own&bit != 0 {
		return
	}
	if len(*s)+room > len(buf) {
		mine(st, bit, s)
		return
	}
	st.own |= bit
	*s = append(buf[:0], *s...)
}

// mineHeads is [mineIn] for st.heads.
func (st *traceState) mineHeads() { mineIn(st, ownHeads, &st.heads, st.hbuf[:], 2) }

// mineUsed is [mineIn] for st.used.
func (st *traceState) mineUsed() { mineIn(st, ownUsed, &st.used, st.ubuf[:], 1) }

// usedMark says that the observation ref grounded the committed action by,
// of type action.
type usedMark struct {
	Ref    string `json:"r"`
	Action string `json:"a"`
	By     string `json:"b"`
}

// usedBy returns the committed action of type action that ref grounded,
// or "".
func (st *traceState) usedBy(ref, action string) string {
	for _, m := range st.used {
		if m.Ref == ref && m.Action == action {
			return m.By
		}
	}
	return ""
}

// head is the latest committed record of its key, with what decisions
// read alongside it.
//
// Its records are never modified once a state holds them (states share
// them): a status change replaces the record with a changed copy.
type head struct {
	seq      int // position in the trace, from 1
	rec      *blackboard.Record
	*headExt // beliefs and predictions only; nil for the others
}

// headExt is what a belief or a prediction head holds beside its record.
// Like the records, it is replaced, never modified, once a state holds it.
type headExt struct {
	// beliefs: the validation artifact (nil when none) and the
	// observations it names, as they are now
	artifact *blackboard.Record
	percepts []blackboard.Record
	// predictions: the action type the prediction is about and the writer
	// and role of the proposal it commits
	action     string
	propWriter string
	propRole   blackboard.Role
	pbuf       [1]blackboard.Record // backs percepts for the usual belief on one observation
}

var emptyState = &traceState{viewable: true}

// byID returns the state's copy of a record, or nil.
func (st *traceState) byID(id string) *blackboard.Record {
	for i := range st.heads {
		h := &st.heads[i]
		if h.rec.ID == id {
			return h.rec
		}
		if h.headExt == nil {
			continue
		}
		if h.artifact != nil && h.artifact.ID == id {
			return h.artifact
		}
		for j := range h.percepts {
			if h.percepts[j].ID == id {
				return &h.percepts[j]
			}
		}
	}
	for i := range st.cons {
		if st.cons[i].ID == id {
			return &st.cons[i]
		}
	}
	for _, hs := range [...][]head{st.rejected, st.preds, st.since, st.pending} {
		for i := range hs {
			if hs[i].rec.ID == id {
				return hs[i].rec
			}
		}
	}
	return nil
}

// rejectedBelief returns the latest belief record of kind that is neither
// active nor superseded by a commit at nowMS, or nil: a pending proposal
// past its TTL counts as expired.
func (st *traceState) rejectedBelief(kind string, nowMS int64) *blackboard.Record {
	var best *head
	for i := range st.rejected {
		if st.rejected[i].rec.Kind == kind {
			best = &st.rejected[i]
		}
	}
	for i := range st.pending {
		if h := &st.pending[i]; h.rec.Kind == kind && h.rec.ExpiredAt(nowMS) && (best == nil || h.seq > best.seq) {
			best = h
		}
	}
	if best == nil {
		return nil
	}
	if best.rec.Status == blackboard.StatusActive {
		return withStatus(best.rec, blackboard.StatusExpired, reason.TTLExpired)
	}
	return best.rec
}

// explainsAbsence reports whether a belief record tells why no belief of its
// kind is committed: rejected, expired or withdrawn, not merely replaced by
// its own commit.
func explainsAbsence(r *blackboard.Record) bool {
	return r.Slot == blackboard.Beliefs && r.Status != blackboard.StatusActive && r.Reason != reason.SupersededByCommit
}

// next returns the state after a batch of this trace whose appends take
// positions n+1, n+2, ... lookup resolves the ids the new records name
// (artifacts, observations, proposals) that the batch itself does not hold.
func (st *traceState) next(n int, appends []blackboard.Record, invs []store.Invalidation, lookup recordLookup) *traceState {
	// Every slice starts shared with st (see [mine]).
	out := &traceState{
		heads:    slices.Clip(st.heads),
		cons:     slices.Clip(st.cons),
		rejected: slices.Clip(st.rejected),
		preds:    slices.Clip(st.preds),
		since:    slices.Clip(st.since),
		pending:  slices.Clip(st.pending),
		used:     slices.Clip(st.used),
		viewable: st.viewable,
	}
	// The batch's records, copied once: the state keeps pointers to them.
	// (In an allocation of their own: a record a later state still holds
	// must not keep this state's slices, and the records they point at,
	// alive.)
	f := finder{st: out, lookup: lookup}
	switch {
	case !anyOf(appends, kept):
		// No record of the batch is the state's to keep (a plan or an
		// action refused, say): the finder reads the batch as it is, and
		// what it finds there is only read, or copied.
		f.batch = appends
	case len(appends) <= len(batchCopy{}.recs) && anyOf(appends, extended):
		// The head of the belief or prediction it commits shares the
		// records' allocation (it points at them, so lives no longer).
		c := new(batchCopy)
		f.batch, f.ext = append(c.recs[:0:len(appends)], appends...), &c.ext
	default:
		f.batch = slices.Clone(appends)
	}
	for _, inv := range invs {
		out.setStatus(inv.ID, inv.Status, inv.Reason, &f)
	}
	for i := range f.batch {
		out.add(n+1+i, &f.batch[i], &f)
	}
	out.trimSince()
	out.trimUsed()
	return out
}

// batchCopy is a batch's records as a state keeps them, with the head
// extension of the belief or prediction the batch commits (see
// [traceState.next]).
type batchCopy struct {
	recs [3]blackboard.Record
	ext  headExt
}

// anyOf reports whether is holds for a record of recs. It reads them in
// place: slices.ContainsFunc would hand each one over by value.
func anyOf(recs []blackboard.Record, is func(*blackboard.Record) bool) bool {
	for i := range recs {
		if is(&recs[i]) {
			return true
		}
	}
	return false
}

// kept reports whether [traceState.add] may keep a pointer to r, or look
// up what it names: all but a proposal other than a belief's.
func kept(r *blackboard.Record) bool {
	return r.Mode == blackboard.ModeCommit || r.Slot == blackboard.Beliefs
}

// extended reports whether r, once in a state, is a head with a [headExt]:
// a committed belief or prediction.
func extended(r *blackboard.Record) bool {
	return r.Mode == blackboard.ModeCommit && (r.Slot == blackboard.Beliefs || r.Slot == blackboard.Predictions)
}

// recordLookup reads a record by id (a snapshot: its state, the records it
// read, the store).
type recordLookup interface {
	byID(id string) *blackboard.Record
}

// traceRecords is a whole trace read by id, for [foldState].
type traceRecords struct {
	recs []blackboard.Record
	pos  map[string]int
}

func (t *traceRecords) byID(id string) *blackboard.Record {
	if i, ok := t.pos[id]; ok {
		return &t.recs[i]
	}
	return nil
}

// finder resolves the ids a batch's records name while a state is built:
// among the batch, the state, or lookup. Every record it returns is one a
// state may keep a pointer to: none is modified afterwards.
type finder struct {
	batch  []blackboard.Record
	ext    *headExt // a spare head extension, for the first head that needs one
	st     *traceState
	lookup recordLookup
	copies bool // lookup's records are not the finder's to share: copy them
}

func (f *finder) find(id string) *blackboard.Record {
	for i := range f.batch {
		if f.batch[i].ID == id {
			return &f.batch[i]
		}
	}
	if r := f.st.byID(id); r != nil {
		return r
	}
	r := f.lookup.byID(id)
	if r != nil && f.copies {
		r = copyOf(r)
	}
	return r
}

// trimUsed keeps the marks of observations the state still holds: one it
// no longer holds is superseded and no belief head rests on it, so it can
// ground nothing again.
func (st *traceState) trimUsed() {
	gone := func(m usedMark) bool { return st.byID(m.Ref) == nil }
	if slices.ContainsFunc(st.used, gone) {
		st.mineUsed()
		st.used = slices.DeleteFunc(st.used, gone)
	}
}

// trimSince keeps, of the observations in st.since, those of a kind a
// belief head rests on, from the oldest observation of that kind a belief
// head names.
func (st *traceState) trimSince() {
	if len(st.since) == 0 {
		return
	}
	// The oldest observation named, per kind, read once: a batch would
	// otherwise parse every belief head's observation ids once for every
	// observation in st.since.
	var buf [4]sinceFloor
	floors := buf[:0]
	for i := range st.heads {
		h := &st.heads[i]
		if h.rec.Slot != blackboard.Beliefs {
			continue
		}
		for j := range h.percepts {
			p := &h.percepts[j]
			seq := seqOf(p.ID)
			if k := slices.IndexFunc(floors, func(f sinceFloor) bool { return f.kind == p.Kind }); k >= 0 {
				floors[k].seq = min(floors[k].seq, seq)
			} else {
				floors = append(floors, sinceFloor{p.Kind, seq})
			}
		}
	}
	drop := func(o head) bool {
		k := slices.IndexFunc(floors, func(f sinceFloor) bool { return f.kind == o.rec.Kind })
		return k < 0 || floors[k].seq > o.seq
	}
	if !slices.ContainsFunc(st.since, drop) {
		return
	}
	mine(st, ownSince, &st.since)
	st.since = slices.DeleteFunc(st.since, drop)
}

// sinceFloor is the oldest position of an observation of kind that a
// belief head names (see [traceState.trimSince]).
type sinceFloor struct {
	kind string
	seq  int
}

// add takes a record appended at position seq into the state. r is the
// state's to keep: nothing modifies it afterwards.
func (st *traceState) add(seq int, r *blackboard.Record, f *finder) {
	if explainsAbsence(r) {
		st.reject(seq, r)
	}
	if r.Mode == blackboard.ModeCommit && r.Slot == blackboard.Actions {
		for _, ev := range r.EvidenceRefs {
			if a := f.find(ev); a != nil && isArtifact(a) {
				for _, ref := range groundedBy(a) {
					if st.usedBy(ref, r.Kind) == "" {
						st.mineUsed()
						st.used = append(st.used, usedMark{Ref: ref, Action: r.Kind, By: r.ID})
					}
				}
			}
		}
	}
	if r.Mode != blackboard.ModeCommit {
		if r.Slot != blackboard.Beliefs && r.Status == blackboard.StatusActive {
			st.viewable = false
		}
		if r.Slot == blackboard.Beliefs && r.Status == blackboard.StatusActive {
			mine(st, ownPending, &st.pending)
			st.pending = append(st.pending, head{seq: seq, rec: r})
		}
		return
	}
	h := head{seq: seq, rec: r}
	if extended(r) {
		if h.headExt, f.ext = f.ext, nil; h.headExt == nil {
			h.headExt = &headExt{}
		}
		h.percepts = h.pbuf[:0]
	}
	switch r.Slot {
	case blackboard.Percepts:
		if r.Status != blackboard.StatusInvalidated {
			mine(st, ownSince, &st.since)
			st.since = append(st.since, head{seq: seq, rec: r}) // trimmed at the end of the batch
		}
	case blackboard.Beliefs:
		if len(r.EvidenceRefs) > 0 {
			if a := f.find(r.EvidenceRefs[0]); a != nil && isArtifact(a) {
				h.artifact = a
				for _, pid := range a.Provenance.InputRefs {
					if p := f.find(pid); p != nil {
						h.percepts = append(h.percepts, *p)
						if !slices.ContainsFunc(st.since, func(o head) bool { return o.rec.ID == pid }) {
							// the observation was current when the belief was decided
							mine(st, ownSince, &st.since)
							st.since = append(st.since, head{seq: seqOf(pid), rec: p})
							slices.SortFunc(st.since, func(a, b head) int { return a.seq - b.seq })
						}
					}
				}
			}
		}
	case blackboard.Predictions:
		if r.Status == blackboard.StatusActive {
			h.action, _ = r.Payload[keyActionType].(string)
			if len(r.Provenance.InputRefs) > 0 {
				if p := f.find(r.Provenance.InputRefs[0]); p != nil {
					h.propWriter, h.propRole = p.Provenance.Writer, p.Provenance.Role
				}
			}
			mine(st, ownPreds, &st.preds)
			st.preds = append(st.preds, h)
		}
		return
	case blackboard.Constraints:
		if r.Scope != blackboard.ScopePersistent && r.Status == blackboard.StatusActive {
			mine(st, ownCons, &st.cons)
			st.cons = append(st.cons, *r)
		}
	}
	st.mineHeads()
	if r.Slot == blackboard.Beliefs || r.Slot == blackboard.Plans {
		// An older commit still counts when every newer one is no longer
		// active: keep those that may outlive all newer ones.
		st.heads = slices.DeleteFunc(st.heads, func(o head) bool {
			return o.rec.Slot == r.Slot && o.rec.Kind == r.Kind && o.seq < seq && !outlives(o.rec, r)
		})
		st.heads = append(st.heads, h)
		return
	}
	for i := range st.heads {
		if st.heads[i].rec.Slot == r.Slot && st.heads[i].rec.Kind == r.Kind {
			if st.heads[i].seq < seq {
				st.heads[i] = h
			}
			return
		}
	}
	st.heads = append(st.heads, h)
}

// outlives reports whether older, a commit, may still be active when newer,
// a later commit of the same kind, is not: it is active and expires after
// newer (which may, as a plan, lack a step older has). A record without TTL
// never expires.
func outlives(older, newer *blackboard.Record) bool {
	if older.Status != blackboard.StatusActive {
		return false
	}
	if older.Slot == blackboard.Plans {
		return newer.Status != blackboard.StatusActive || !coversSteps(newer, older)
	}
	end := func(r *blackboard.Record) int64 {
		if r.Provenance.TTLMS <= 0 {
			return 1<<63 - 1
		}
		return r.Provenance.TimestampMS + r.Provenance.TTLMS
	}
	return end(older) > end(newer)
}

// coversSteps reports whether plan p has a step for every action plan q
// has a step for.
func coversSteps(p, q *blackboard.Record) bool {
	qs, _ := q.Payload[keySteps].([]any)
	ps, _ := p.Payload[keySteps].([]any)
	for _, a := range qs {
		sa, _ := a.(map[string]any)
		if !slices.ContainsFunc(ps, func(b any) bool {
			sb, _ := b.(map[string]any)
			return sa != nil && sb != nil && sb[keyAction] == sa[keyAction]
		}) {
			return false
		}
	}
	return true
}

// reject records r as the latest belief record of its kind that explains
// an absence, unless a later one is already recorded.
func (st *traceState) reject(seq int, r *blackboard.Record) {
	mine(st, ownRejected, &st.rejected)
	for i := range st.rejected {
		if st.rejected[i].rec.Kind == r.Kind {
			if st.rejected[i].seq < seq {
				st.rejected[i] = head{seq: seq, rec: r}
			}
			return
		}
	}
	st.rejected = append(st.rejected, head{seq: seq, rec: r})
}

// setStatus records a status change of id in every copy the state holds.
func (st *traceState) setStatus(id string, status blackboard.Status, why reason.Code, f *finder) {
	seq := 0
	for i := range st.heads {
		h := &st.heads[i]
		holds := h.rec.ID == id
		if h.headExt != nil {
			holds = holds || h.artifact != nil && h.artifact.ID == id ||
				slices.ContainsFunc(h.percepts, func(p blackboard.Record) bool { return p.ID == id })
		}
		if !holds {
			continue
		}
		st.mineHeads()
		h = &st.heads[i]
		if h.rec.ID == id {
			h.rec, seq = withStatus(h.rec, status, why), h.seq
		}
		if h.headExt == nil {
			continue
		}
		e := *h.headExt // shared with the state this one derives from
		if e.artifact != nil && e.artifact.ID == id {
			e.artifact = withStatus(e.artifact, status, why)
		}
		if j := slices.IndexFunc(e.percepts, func(p blackboard.Record) bool { return p.ID == id }); j >= 0 {
			e.percepts = slices.Clone(e.percepts)
			e.percepts[j].Status, e.percepts[j].Reason = status, why
		}
		h.headExt = &e
	}
	if status != blackboard.StatusActive {
		if slices.ContainsFunc(st.cons, func(r blackboard.Record) bool { return r.ID == id }) {
			mine(st, ownCons, &st.cons)
			st.cons = slices.DeleteFunc(st.cons, func(r blackboard.Record) bool { return r.ID == id })
		}
		if slices.ContainsFunc(st.preds, func(h head) bool { return h.rec.ID == id }) {
			mine(st, ownPreds, &st.preds)
			st.preds = slices.DeleteFunc(st.preds, func(h head) bool { return h.rec.ID == id })
		}
		if i := slices.IndexFunc(st.pending, func(h head) bool { return h.rec.ID == id }); i >= 0 {
			if seq == 0 {
				seq = st.pending[i].seq
			}
			mine(st, ownPending, &st.pending)
			st.pending = slices.Delete(st.pending, i, i+1)
		}
	}
	for i := range st.since {
		if st.since[i].rec.ID == id {
			mine(st, ownSince, &st.since)
			st.since[i].rec = withStatus(st.since[i].rec, status, why)
		}
	}
	if r := f.find(id); r != nil && r.Slot == blackboard.Beliefs {
		if c := withStatus(r, status, why); explainsAbsence(c) {
			if seq == 0 {
				seq = seqOf(id)
			}
			st.reject(seq, c)
		}
	}
}

// copyOf returns a copy of r that a state may hold.
func copyOf(r *blackboard.Record) *blackboard.Record {
	c := *r
	return &c
}

// withStatus returns a copy of r with its status changed.
func withStatus(r *blackboard.Record, status blackboard.Status, why reason.Code) *blackboard.Record {
	c := *r
	c.Status, c.Reason = status, why
	return &c
}

// seqOf is a kernel id's position in its trace ("{slot}:{trace}:{n}"), or
// 0 for any other id.
func seqOf(id string) int {
	// The usual id, ":" then a position of a few digits without a leading
	// zero, is read here: [store.SplitRecordID] finds both colons
	// and calls strconv, a cost every batch paid per observation it
	// weighed. Anything else goes to it.
	n, mul, i := 0, 1, len(id)-1
	for ; i >= 0 && id[i] >= '0' && id[i] <= '9'; i-- {
		n += int(id[i]-'0') * mul
		mul *= 10
	}
	if d := len(id) - 1 - i; d == 0 || d > 18 || i < 0 || id[i] != ':' || id[i+1] == '0' {
		if _, _, n, ok := store.SplitRecordID(id); ok {
			return n + 1
		}
		return 0
	}
	// A trace id between the first colon and this one, the last. A loop
	// finds the first: a slot's name is a few bytes.
	first := 0
	for first < i && id[first] != ':' {
		first++
	}
	if first+1 >= i {
		return 0
	}
	return n
}

// foldState builds the state of a trace from its records, in append order
// and with their statuses as they are now: the state the kernel's batches
// would have built, for a trace the kernel did not write all of (or a store
// that keeps no states).
func foldState(recs []blackboard.Record) *traceState {
	if len(recs) == 0 {
		return emptyState
	}
	pos := make(map[string]int, len(recs))
	for i := range recs {
		pos[recs[i].ID] = i
	}
	st := &traceState{own: ownAll, viewable: true}
	f := finder{st: st, copies: true, lookup: &traceRecords{recs: recs, pos: pos}}
	for i := range recs {
		// A copy: the state must not keep the whole trace alive.
		st.add(i+1, copyOf(&recs[i]), &f)
	}
	st.trimSince()
	st.trimUsed()
	return st
}

package kernel

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/telemetry"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
	"go.opentelemetry.io/otel/attribute"
)

// View is what a worker sees of a trace: the latest committed, active
// payload of each kind in each slot, and the proposals still pending.
type View struct {
	TraceID   string                                            `json:"trace_id"`
	Committed map[blackboard.Slot]map[string]blackboard.Payload `json:"committed"`
	Pending   []blackboard.Record                               `json:"pending,omitempty"`
	// ids holds, by slot and kind, the id of the record each committed
	// payload is read from, so that a reader can Get it (its provenance,
	// its references) without searching the trace ([View.ID]). It is not
	// encoded.
	ids map[blackboard.Slot]map[string]string
}

// ID returns the id of the committed record of kind in slot.
func (v View) ID(slot blackboard.Slot, kind string) (string, bool) {
	id, ok := v.ids[slot][kind]
	return id, ok
}

// Has reports whether a payload of kind is committed in slot.
func (v View) Has(slot blackboard.Slot, kind string) bool {
	_, ok := v.Committed[slot][kind]
	return ok
}

// view returns the trace's committed state and pending proposals. It reads
// the trace's decision state when the store keeps one that holds the view
// (every proposal the trace had pending was a belief proposal, and the
// latest commit of each kind is still active and within its TTL), and
// otherwise that trace's records; and, if asked, the persistent records
// shared with every trace, through the store's indexes. Records whose TTL has run out are left out, as of now; a view
// never writes to the store. The payloads are copies the caller may keep.
func (k *Kernel) view(ctx context.Context, traceID string, persistent bool) (v View, err error) {
	ctx, sp := k.span(ctx, "kernel.view", traceID, "")
	if sp != nil {
		defer func() {
			sp.SetAttributes(attribute.Int("bk.view.pending", len(v.Pending)), attribute.Int("bk.view.committed", len(v.Committed)))
			endSpan(sp, "", err)
		}()
	}
	if err := checkName("trace id", traceID); err != nil {
		return View{}, newErr("view", "", reason.InvalidInput, blackboard.ErrInvalidInput, err.Error())
	}
	nowMS := k.nowMS()
	if _, ok := k.store.(store.StateStore); ok {
		v, ok, err := k.viewFromState(ctx, traceID, persistent, nowMS)
		if err != nil || ok {
			return v, err
		}
	}
	return k.viewFromRecords(ctx, traceID, persistent, nowMS)
}

// viewFromState is View read from the trace's decision state; ok is false
// when the state does not hold the view, and the caller reads the trace.
func (k *Kernel) viewFromState(ctx context.Context, traceID string, persistent bool, nowMS int64) (v View, ok bool, err error) {
	s := snapshots.Get().(*snapshot)
	s.k, s.ctx, s.traceID, s.nowMS, s.viewing = k, ctx, traceID, nowMS, true
	defer s.release()
	if err := ctx.Err(); err != nil {
		return View{}, false, err
	}
	if err := s.readState(ctx); errors.Is(err, errNoState) {
		return View{}, false, nil
	} else if err != nil {
		return View{}, false, err
	}
	if !s.st.holdsView(nowMS) {
		return View{}, false, nil
	}
	v, err = k.newView(ctx, traceID, persistent, nowMS)
	if err != nil {
		return View{}, false, err
	}
	s.st.view(&v, nowMS)
	return v, true, nil
}

// viewFromRecords is View read from every record of the trace.
func (k *Kernel) viewFromRecords(ctx context.Context, traceID string, persistent bool, nowMS int64) (View, error) {
	recs, err := k.readTrace(ctx, traceID)
	if err != nil {
		return View{}, err
	}
	if len(recs) > 0 {
		if err := k.checkNamespace(traceID, recs[0].Namespace); err != nil {
			return View{}, err
		}
	}
	v, err := k.newView(ctx, traceID, persistent, nowMS)
	if err != nil {
		return View{}, err
	}
	for i := range recs {
		r := &recs[i]
		switch {
		case r.Status != blackboard.StatusActive || r.ExpiredAt(nowMS):
		case r.Mode == blackboard.ModeCommit:
			v.put(r)
		default:
			v.Pending = append(v.Pending, r.Clone())
		}
	}
	return v, nil
}

// newView starts the view of a trace: with persistent, the
// persistent records other traces share, which the trace's own then
// override.
func (k *Kernel) newView(ctx context.Context, traceID string, persistent bool, nowMS int64) (View, error) {
	v := View{TraceID: traceID, Committed: make(map[blackboard.Slot]map[string]blackboard.Payload, 4)}
	if persistent {
		for _, slot := range k.sharedSlots() {
			for r, err := range k.store.ListSlot(ctx, slot, store.Filter{Status: blackboard.StatusActive, Scope: blackboard.ScopePersistent, Namespace: k.namespace}) {
				if err != nil {
					return View{}, err
				}
				if r.Provenance.TraceID != traceID && !r.ExpiredAt(nowMS) && k.sharedAcross(&r) {
					v.put(&r)
				}
			}
		}
	}
	return v, nil
}

// put shows a copy of r's payload as the committed one of its slot and kind.
func (v *View) put(r *blackboard.Record) {
	m := v.Committed[r.Slot]
	if m == nil {
		m = make(map[string]blackboard.Payload, 2)
		v.Committed[r.Slot] = m
	}
	m[r.Kind] = r.Payload.Clone()
	ids := v.ids[r.Slot]
	if ids == nil {
		if v.ids == nil {
			v.ids = make(map[blackboard.Slot]map[string]string, 4)
		}
		ids = make(map[string]string, 2)
		v.ids[r.Slot] = ids
	}
	ids[r.Kind] = r.ID
}

// holdsView reports whether the state holds the trace's view at nowMS.
// The view shows, per slot and kind, the latest committed record still
// active and within its TTL, and the active proposals within theirs. The
// state holds the latest commit of each kind (the heads; every active
// prediction) but not always the earlier ones, which the view shows when
// the latest is no longer active; and it holds the pending belief
// proposals only. So it holds the view when the trace never had another
// active proposal and the latest commit of each kind among the heads is
// active and within its TTL.
func (st *traceState) holdsView(nowMS int64) bool {
	if !st.viewable {
		return false
	}
	for i := range st.heads {
		if h := &st.heads[i]; st.latestHead(i) && !liveAt(h.rec, nowMS) {
			return false
		}
	}
	return true
}

// latestHead reports whether heads[i] is the latest head of its slot and
// kind (beliefs and plans may keep older commits beside it).
func (st *traceState) latestHead(i int) bool {
	h := &st.heads[i]
	for j := range st.heads {
		if o := &st.heads[j]; j != i && o.rec.Slot == h.rec.Slot && o.rec.Kind == h.rec.Kind && o.seq > h.seq {
			return false
		}
	}
	return true
}

// view adds the state's records to v, which holdsView said it holds: the
// latest head of each kind, the latest live prediction of each kind, and
// the live pending belief proposals in append order.
func (st *traceState) view(v *View, nowMS int64) {
	for i := range st.heads {
		if st.latestHead(i) {
			v.put(st.heads[i].rec)
		}
	}
	for i := range st.preds { // in append order: the latest of a kind wins
		if r := st.preds[i].rec; liveAt(r, nowMS) {
			v.put(r)
		}
	}
	for i := range st.pending {
		if r := st.pending[i].rec; liveAt(r, nowMS) {
			v.Pending = append(v.Pending, r.Clone())
		}
	}
}

// liveAt reports whether r is active and within its TTL at nowMS.
func liveAt(r *blackboard.Record, nowMS int64) bool {
	return r.Status == blackboard.StatusActive && !r.ExpiredAt(nowMS)
}

// sharedSlots lists the slots whose persistent records every trace shares:
// constraints, and the slots of the kinds the owner shares.
func (k *Kernel) sharedSlots() []blackboard.Slot {
	out := []blackboard.Slot{blackboard.Constraints}
	for _, sk := range k.shared {
		if !slices.Contains(out, sk.slot) {
			out = append(out, sk.slot)
		}
	}
	return out
}

// Expire marks every record of the trace whose TTL has run out EXPIRED with
// code TTL_EXPIRED and returns how many it marked. Decisions do this for
// the trace they decide on, in the same batch as the decision; views and
// reads never write.
func (k *Kernel) Expire(ctx context.Context, traceID string) (n int, err error) {
	ctx, sp := k.span(ctx, "kernel.expire", traceID, "")
	if sp != nil {
		defer func() {
			sp.SetAttributes(attribute.Int(telemetry.AttrExpired, n))
			endSpan(sp, "", err)
		}()
	}
	if err := checkName("trace id", traceID); err != nil {
		return 0, newErr("expire", "", reason.InvalidInput, blackboard.ErrInvalidInput, err.Error())
	}
	for attempt := 0; attempt < maxAttempts; attempt++ {
		snap, err := k.loadForWrite(ctx, traceID, false)
		if err != nil {
			return 0, err
		}
		// An explicit sweep: every record of the trace, not only those
		// decisions read.
		recs, err := k.readTrace(ctx, traceID)
		if err != nil {
			snap.release()
			return 0, err
		}
		var inv []store.Invalidation
		for i := range recs {
			if r := &recs[i]; r.Status == blackboard.StatusActive && r.ExpiredAt(snap.nowMS) {
				inv = append(inv, store.Invalidation{ID: r.ID, Status: blackboard.StatusExpired, Reason: reason.TTLExpired})
			}
		}
		if len(inv) == 0 {
			snap.release()
			return 0, nil
		}
		err = snap.apply(ctx, store.Batch{Invalidations: inv})
		if raced(err) {
			snap.release()
			continue
		}
		if err != nil {
			snap.release()
			return 0, err
		}
		k.recordExpiries(ctx, snap, inv)
		snap.release()
		return len(inv), nil
	}
	return 0, newErr("expire", "", "", store.ErrNotActive, fmt.Sprintf("trace %q kept changing", traceID))
}

package kernel

import (
	"context"
	"errors"
	"slices"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// follow checks the follow records fs of a decision or a write and adds
// them to b, with the ids that come after b's own (first is the position
// in the trace of the first of them), and their once-keys. It returns the
// batch and the ids of the follow records.
func (s *snapshot) follow(ctx context.Context, b store.Batch, fs []Follow, first int, nowMS int64, span string) (store.Batch, []string, error) {
	if len(fs) == 0 {
		return b, nil, nil
	}
	ids := make([]string, 0, len(fs))
	for i := range fs {
		rec, err := s.k.checkFollow(&fs[i], s.traceID)
		if err != nil {
			return b, nil, err
		}
		rec.ID = store.RecordID(rec.Slot, s.k.namespace, s.traceID, first+i)
		rec.Provenance.TimestampMS, rec.Provenance.Span = nowMS, span
		// A follow may name what its batch appends ahead of it (the
		// decision's proposal and committed record, the written record).
		if err := s.checkRefs(ctx, "input ref", s.outside(b, rec.Provenance.InputRefs)); err != nil {
			return b, nil, err
		}
		if err := s.checkRefs(ctx, "evidence ref", s.outside(b, rec.EvidenceRefs)); err != nil {
			return b, nil, err
		}
		for _, key := range fs[i].Entry.OnceKeys {
			if slices.ContainsFunc(b.Claims, func(c store.Claim) bool { return c.Key == key }) {
				return b, nil, newErr("write", rec.ID, reason.InvalidInput, blackboard.ErrInvalidInput, "once-key "+key+" claimed twice in one batch")
			}
			b.Claims = append(b.Claims, store.Claim{Key: key, RecordID: rec.ID})
		}
		b.Appends = append(b.Appends, rec)
		ids = append(ids, rec.ID)
	}
	return b, ids, nil
}

// outside returns the ids of refs that name no record of b.
func (s *snapshot) outside(b store.Batch, refs []string) []string {
	var out []string
	for _, ref := range refs {
		if !slices.ContainsFunc(b.Appends, func(r blackboard.Record) bool { return r.ID == ref }) {
			out = append(out, ref)
		}
	}
	return out
}

// checkFollow validates a follow entry of trace traceID into the record to
// write (without id): the role's authority and the entry's shape, as a
// handle's write is checked.
func (k *Kernel) checkFollow(f *Follow, traceID string) (blackboard.Record, error) {
	e := f.Entry
	if e.TraceID == "" {
		e.TraceID = traceID
	}
	if e.TraceID != traceID {
		return blackboard.Record{}, newErr("write", "", reason.InvalidInput, blackboard.ErrInvalidInput, "a follow record must be in the trace of what it follows")
	}
	var (
		rec blackboard.Record
		err error
	)
	switch f.Role {
	case blackboard.RoleKernel:
		// The kernel's follow records are evidence (decision records):
		// checked as an evidence validator's, written with the kernel's role.
		if e.Slot != blackboard.Evidence {
			return blackboard.Record{}, newErr("write", "", reason.PermissionDenied, blackboard.ErrPermission, "a kernel follow record is evidence")
		}
		if rec, err = k.checkEntry(blackboard.RoleEvidence, string(blackboard.RoleKernel), &e); err == nil {
			rec.Provenance.Role = blackboard.RoleKernel
		}
	case blackboard.RoleTool, blackboard.RoleApprover:
		if err := checkName("writer", f.Writer); err != nil {
			return blackboard.Record{}, newErr("write", "", reason.InvalidInput, blackboard.ErrInvalidInput, err.Error())
		}
		rec, err = k.checkEntry(f.Role, f.Writer, &e)
	default:
		return blackboard.Record{}, newErr("write", "", reason.PermissionDenied, blackboard.ErrPermission, "a follow record is the kernel's, a tool's or an approver's")
	}
	if err != nil {
		return blackboard.Record{}, err
	}
	if err := k.checkOnceKeys(f.Role, e.OnceKeys, true); err != nil {
		return blackboard.Record{}, err
	}
	return rec, nil
}

// appendFollow is [Governor.Append].
func (k *Kernel) appendFollow(ctx context.Context, f Follow) (rec blackboard.Record, err error) {
	ctx, sp := k.span(ctx, "kernel.append", f.Entry.TraceID, f.Entry.Slot)
	defer func() { endSpan(sp, rec.Reason, err) }()
	if err := checkName("trace id", f.Entry.TraceID); err != nil {
		return blackboard.Record{}, newErr("write", "", reason.InvalidInput, blackboard.ErrInvalidInput, err.Error())
	}
	for attempt := 0; attempt < maxAttempts; attempt++ {
		snap, err := k.loadForWrite(ctx, f.Entry.TraceID, false)
		if err != nil {
			return blackboard.Record{}, err
		}
		b, _, err := snap.follow(ctx, store.Batch{Appends: snap.appends[:0]}, []Follow{f}, snap.n+1, snap.nowMS, snap.span)
		if err == nil {
			err = snap.apply(ctx, b)
			if err == nil {
				rec = b.Appends[0].Clone()
			}
		}
		snap.release()
		if len(f.Entry.OnceKeys) > 0 && errors.Is(err, blackboard.ErrDuplicateKey) {
			return blackboard.Record{}, newErr("write", "", reason.DuplicateAction, blackboard.ErrDuplicateKey, err.Error())
		}
		if raced(err) {
			continue
		}
		if err != nil {
			return blackboard.Record{}, err
		}
		return rec, nil
	}
	return blackboard.Record{}, newErr("write", "", "", blackboard.ErrConflict, "too much contention on the trace")
}

// constraintNames lists the names of the constraints in force.
func (s *snapshot) constraintNames() []string {
	cons := s.constraints()
	if len(cons) == 0 {
		return nil
	}
	out := make([]string, len(cons))
	for i, c := range cons {
		out[i] = c.name
	}
	return out
}

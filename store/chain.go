package store

import (
	"context"
	"fmt"
	"iter"

	"github.com/blackboardkernel/bk/chain"
)

// Chainer is the optional interface of a [Store] that keeps every
// trace's hash chain (package chain), which this module's three stores
// do. Each Apply extends, in the same transaction as its writes, the
// chain of every trace it touches: first one [chain.OpStatus] event per
// invalidation, in the batch's order, in the chain of the invalidated
// record's trace; then one [chain.OpAppend] event per append, in the
// batch's order. An event's link is [chain.Next] of its trace's previous
// link, its position and its content digest, so a store that writes a
// change without its link, or an edit made to a stored row, leaves a
// chain that [chain.Walker] refuses.
//
// A store migrated from a version without chains chains the records it
// held, as it found them, and says how many events that was
// ([chain.Head.Migrated]): their order and content are proven from then
// on, their earlier history is not.
type Chainer interface {
	Store
	// Chain streams trace traceID of namespace's events in order: each
	// append with the record as it was appended (Status and Reason as
	// they were then), each status change with the record's id, trace,
	// namespace, new status and reason, and each event's link as the
	// store recorded it. It reads what is stored and checks nothing.
	Chain(ctx context.Context, namespace, traceID string) iter.Seq2[chain.Event, error]
	// Head returns where the store recorded the trace's chain to stand:
	// its length and last link (zero for an unknown trace).
	Head(ctx context.Context, namespace, traceID string) (chain.Head, error)
}

// VerifyTrace walks trace traceID of namespace's chain in st and checks
// it against the head st recorded, the extra heads given as expect (a
// checkpoint's), and the records st holds for the trace: records is how
// many it lists ([TraceSummary.Records], from [ListTraces], which counts
// them apart from the chain), and every one of them must have been
// appended by the chain. With records < 0 VerifyTrace lists the trace
// itself and also checks each listed record's status against the status
// its chain gave it last: a second pass over the trace, which a caller
// that verifies a whole store skips. It returns the chain's head, and a
// [*chain.Break] (wrapping [chain.ErrBroken]) for the first break; any
// other error is the store's or the context's.
func VerifyTrace(ctx context.Context, st Chainer, namespace, traceID string, records int, expect ...chain.Head) (chain.Head, error) {
	w := chain.NewWalker(namespace, traceID)
	w.Origin = func(id string) (string, string, bool) {
		ns, tr, _, ok := SplitRecordID(id)
		return ns, tr, ok
	}
	recorded, err := st.Head(ctx, namespace, traceID)
	if err != nil {
		return chain.Head{}, err
	}
	w.Expect(recorded.Len, recorded.Link, "the store's head")
	for _, h := range expect {
		w.Expect(h.Len, h.Link, "a checkpoint")
	}
	appended := 0
	for e, err := range st.Chain(ctx, namespace, traceID) {
		if err != nil {
			return chain.Head{}, err
		}
		if err := w.Step(&e); err != nil {
			return w.Head(), err
		}
		if e.Op == chain.OpAppend {
			appended++
		}
	}
	if err := w.Finish(); err != nil {
		return w.Head(), err
	}
	h := w.Head()
	h.Migrated = recorded.Migrated
	unchained := func(id, detail string) error {
		return &chain.Break{Namespace: h.Namespace, Trace: traceID, Seq: h.Len, RecordID: id, Fault: chain.FaultUnchained, Detail: detail}
	}
	if records >= 0 {
		if records != appended {
			return h, unchained("", fmt.Sprintf("the store lists %d records, its chain appends %d", records, appended))
		}
		return h, ctx.Err()
	}
	for r, err := range st.ListTrace(ctx, namespace, traceID) {
		if err != nil {
			return chain.Head{}, err
		}
		status, ok := w.Status(r.ID)
		switch {
		case !ok:
			return h, unchained(r.ID, "the store lists a record its chain never appended")
		case status != r.Status:
			return h, &chain.Break{Namespace: h.Namespace, Trace: traceID, Seq: h.Len, RecordID: r.ID, Fault: chain.FaultStatus,
				Detail: "the store says " + string(r.Status) + ", the chain says " + string(status)}
		}
	}
	return h, ctx.Err()
}

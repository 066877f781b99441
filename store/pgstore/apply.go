package pgstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/store"
)

// traceKey names a trace: its namespace (as stored) and its id.
type traceKey struct{ namespace, trace string }

// plan is a checked batch, ready to run.
type plan struct {
	b        store.Batch
	rows     []row
	traces   []string // the ids of the traces to lock, sorted by namespace and id
	deltas   []int64  // how many records the batch appends to each
	nss      []string // the namespace of each
	appended []string // the ids of the traces the batch appends to
	appNSs   []string // and their namespaces
	changed  []string // the ids of the records whose status the batch changes
	shared   []string // the namespaces of the persistent constraints the batch appends
	state    []byte   // the encoding of b.State; nil when there is none to store
	// invDigests are the content digests of the batch's status changes
	// (chain.TransitionDigest), in the batch's order; each row's digest
	// is its insert's last parameter.
	invDigests []chain.Hash
}

// Apply implements [store.Store]: the batch runs in
// one transaction that is rolled back on any error, and lands whole or not
// at all. The transaction first locks the counters of the traces it
// appends to and of the trace its condition names ([store.Batch.Trace]),
// so the condition is checked against the exact length of the trace,
// which no other writer, in any process, can change until the
// transaction ends. Status changes are applied before the appends, so a
// batch cannot invalidate a record it appends (that is
// [blackboard.ErrNotFound], as in [memstore.Store]). The batch's claims are
// inserted in the same transaction, so a claim lands exactly when the rest
// of its batch does; so do the change counters of the traces the batch
// touches and the batch's State (see [Store.ReadState]), and the hash
// chains of those traces: one event per status change, then one per
// append, each linked by the server in the statement that makes the
// change (see [Store.Chain]).
//
// A single record is a one-record batch, a status change a batch with one
// [store.Invalidation]. Apply returns an error wrapping
// [store.ErrDuplicateID] for an id the store holds (or two appends of
// one id); the error of [store.Batch.Check] for a record it refuses
// ([blackboard.ErrInvalidInput] for a bad field, a string field or
// reference that is not valid UTF-8, or a TTL beyond [store.MaxTTL];
// [blackboard.ErrInvalidPayload] for a payload string that is not);
// [blackboard.ErrInvalidInput] for an unknown role, a NaN confidence or a
// NUL character in a string field or reference;
// [blackboard.ErrInvalidPayload] for a payload value JSON cannot encode,
// a NUL character in a payload string or key, or a payload nested deeper
// than package canon reads (the chain could not digest it); [store.ErrNotActive]
// for a status change of a record that is not ACTIVE,
// [blackboard.ErrNotFound] for one of an unknown id and
// [blackboard.ErrInvalidInput] for one to a bad status or without a
// reason; an error wrapping [blackboard.ErrConflict] when the condition's
// trace does not hold TraceLen records; [blackboard.ErrDuplicateKey] for a claim of a key
// already claimed, by any store on the database, or of one key twice in the
// batch; [blackboard.ErrInvalidInput] for a claim [store.Batch.Check] refuses or
// that holds a NUL character, or a State whose MarshalBinary fails (that
// error is wrapped too); [ErrSerialization] when the server kept aborting
// the transaction; and [ErrUnreachable] when the server could not be
// reached.
func (s *Store) Apply(ctx context.Context, b store.Batch) error {
	leave, err := s.enter(ctx)
	if err != nil {
		return err
	}
	defer leave()
	p, err := newPlan(b)
	if err != nil || p == nil {
		return err
	}
	return s.retry(ctx, "apply", func() error { return s.applyOnce(ctx, p) })
}

// newPlan checks what can be checked without the database and works out
// the trace counters to lock. It returns nil for a batch with nothing to
// do.
func newPlan(b store.Batch) (*plan, error) {
	if err := b.Check("", ""); err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	p := &plan{b: b, rows: make([]row, len(b.Appends))}
	for i := range b.Appends {
		var err error
		if p.rows[i], err = encode(&b.Appends[i]); err != nil {
			return nil, err
		}
		// The server links the append into its trace's chain with the
		// record's digest, computed here.
		d, err := appendDigest(&b.Appends[i], p.rows[i].args[6].(string))
		if err != nil {
			return nil, err
		}
		p.rows[i].args = append(p.rows[i].args, linkPrefix, d[:])
		if r := &b.Appends[i]; r.Slot == blackboard.Constraints && r.Scope == blackboard.ScopePersistent && !slices.Contains(p.shared, p.rows[i].namespace) {
			p.shared = append(p.shared, p.rows[i].namespace)
		}
	}
	// Batches are small: a quadratic scan for a key claimed twice beats
	// allocating a set, and it names the fault better than the primary key
	// would.
	for i, c := range b.Claims {
		if hasNUL(c.Key, c.RecordID, c.Namespace) {
			return nil, fmt.Errorf("pgstore: %w: a claim holds a NUL character", blackboard.ErrInvalidInput)
		}
		for _, prev := range b.Claims[:i] {
			if prev.Key == c.Key && cmp.Or(prev.Namespace, blackboard.DefaultNamespace) == cmp.Or(c.Namespace, blackboard.DefaultNamespace) {
				return nil, fmt.Errorf("pgstore: %w: %q twice in one batch", blackboard.ErrDuplicateKey, c.Key)
			}
		}
	}
	if b.State != nil && b.Trace != "" {
		var err error
		if p.state, err = b.State.MarshalBinary(); err != nil {
			return nil, fmt.Errorf("pgstore: %w: the state of trace %q: %w", blackboard.ErrInvalidInput, b.Trace, err)
		}
		if p.state == nil {
			p.state = []byte{} // an empty state is a state: not NULL
		}
	}
	if b.Trace != "" && !storable(b.Trace) {
		// No trace has that id: it holds no records (nor state).
		p.state = nil
		if b.TraceLen != 0 {
			return nil, fmt.Errorf("pgstore: %w: trace %q holds 0 records, not %d", blackboard.ErrConflict, b.Trace, b.TraceLen)
		}
		p.b.Trace = ""
	}
	for _, inv := range b.Invalidations {
		if !storable(inv.ID) {
			return nil, fmt.Errorf("pgstore: %w: %q", blackboard.ErrNotFound, inv.ID)
		}
		p.changed = append(p.changed, inv.ID)
		p.invDigests = append(p.invDigests, chain.TransitionDigest(inv.ID, inv.Status, inv.Reason))
	}
	if len(p.rows) == 0 && len(b.Invalidations) == 0 && len(b.Claims) == 0 && p.b.Trace == "" {
		return nil, nil
	}

	// A trace is its namespace and its id.
	counts := map[traceKey]int64{}
	if p.b.Trace != "" {
		counts[traceKey{cmp.Or(p.b.TraceNamespace, blackboard.DefaultNamespace), p.b.Trace}] = 0
	}
	// Each row's parameter 3 is how many appends to its trace follow it in
	// the batch: its position is the advanced counter less that.
	for i := len(p.rows) - 1; i >= 0; i-- {
		r := &p.rows[i]
		k := traceKey{r.namespace, r.trace}
		r.args[2] = counts[k]
		counts[k]++
	}
	keys := make([]traceKey, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b traceKey) int {
		return cmp.Or(cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.trace, b.trace))
	})
	p.appended = make([]string, 0, len(keys)) // never NULL: unnest(NULL) is no rows, but say so
	p.appNSs = make([]string, 0, len(keys))
	for _, k := range keys {
		p.traces = append(p.traces, k.trace)
		p.deltas = append(p.deltas, counts[k])
		p.nss = append(p.nss, k.namespace)
		if counts[k] > 0 {
			p.appended = append(p.appended, k.trace)
			p.appNSs = append(p.appNSs, k.namespace)
		}
	}
	return p, nil
}

// applyOnce sends the whole batch to the server in one pipeline, which
// the server runs as one implicit transaction: the first statement that
// fails (a check of bk_require, a unique index) rolls all of it back, and
// the transaction commits when the server reaches the end of the pipeline.
// One round trip. Errors the store should run again come back raw, for
// retry; any other comes back final, in the form Apply returns.
func (s *Store) applyOnce(ctx context.Context, p *plan) error {
	batch := &pgx.Batch{}
	switch {
	case p.b.Trace != "":
		ns := cmp.Or(p.b.TraceNamespace, blackboard.DefaultNamespace)
		i := 0
		for i < len(p.traces) && (p.traces[i] != p.b.Trace || p.nss[i] != ns) {
			i++
		}
		batch.Queue(s.q.lockTracesIf, p.traces, p.deltas, p.nss, p.b.Trace, p.deltas[i], int64(p.b.TraceLen), ns)
	case len(p.traces) > 0:
		batch.Queue(s.q.lockTraces, p.traces, p.deltas, p.nss)
	}
	if p.b.SharedNamespace != "" {
		batch.Queue(s.q.checkShared, cmp.Or(p.b.SharedNamespace, blackboard.DefaultNamespace), int64(p.b.Shared))
	}
	for i, inv := range p.b.Invalidations {
		batch.Queue(s.q.invalidate, string(inv.Status), string(inv.Reason), inv.ID, active, linkPrefix, p.invDigests[i][:])
	}
	if len(p.changed) > 0 {
		batch.Queue(s.q.countInvalidated, p.changed, p.appended, p.appNSs)
	}
	// The links the server computes come back with the inserts, in the
	// same round trip, for a caller that asked for them (Batch.Links);
	// they are handed over only once the whole batch committed.
	var links []chain.Hash
	if len(p.b.Links) >= len(p.rows) {
		links = make([]chain.Hash, len(p.rows))
	}
	for i, r := range p.rows {
		q := batch.Queue(s.q.insert, r.args...)
		if links != nil {
			q.QueryRow(func(row pgx.Row) error {
				var b []byte
				if err := row.Scan(&b); err != nil {
					return err
				}
				copy(links[i][:], b)
				return nil
			})
		}
	}
	for _, c := range p.b.Claims {
		batch.Queue(s.q.claim, cmp.Or(c.Namespace, blackboard.DefaultNamespace), c.Key, c.RecordID)
	}
	if len(p.shared) > 0 || len(p.changed) > 0 {
		batch.Queue(s.q.share, p.shared, p.changed)
	}
	if p.state != nil {
		ns := cmp.Or(p.b.TraceNamespace, blackboard.DefaultNamespace)
		batch.Queue(s.q.checkVersion, p.b.Trace, int64(p.b.Version), p.appended, p.changed, ns, p.appNSs)
		batch.Queue(s.q.setState, p.b.Trace, p.state, ns)
	}
	err := s.pool.SendBatch(ctx, batch).Close()
	if err == nil {
		copy(p.b.Links, links)
		return nil
	}
	pe := pgError(err)
	switch {
	case ctx.Err() != nil && pe != nil:
		// The server cancelled the batch (or refused it first): nothing
		// landed.
		return final{fmt.Errorf("pgstore: apply: %w (%v)", ctx.Err(), err)}
	case ctx.Err() != nil && !pgconn.SafeToRetry(err):
		return final{fmt.Errorf("pgstore: apply: %w (the write may have landed)", ctx.Err())}
	case ctx.Err() != nil:
		return final{fmt.Errorf("pgstore: apply: %w", ctx.Err())}
	case pe == nil && !pgconn.SafeToRetry(err) && !connectFailed(err):
		// The pipeline may have reached the server and committed.
		return final{wrap("apply", err, true)}
	case pe == nil:
		return err // nothing was sent: run it again
	}
	// The server answered with an error before the end of the pipeline:
	// nothing of the batch committed.
	switch {
	case pe.Code == codeConflict:
		return final{fmt.Errorf("pgstore: %w: %s", blackboard.ErrConflict, pe.Message)}
	case pe.Code == codeNotFound:
		return final{fmt.Errorf("pgstore: %w: %s", blackboard.ErrNotFound, pe.Message)}
	case pe.Code == codeNotActive:
		return final{fmt.Errorf("pgstore: %w: %s", store.ErrNotActive, pe.Message)}
	case pe.Code == codeUniqueViolation && pe.ConstraintName == "bk_records_id":
		return final{fmt.Errorf("pgstore: %w: %s", store.ErrDuplicateID, pe.Detail)}
	case pe.Code == codeUniqueViolation && pe.ConstraintName == "bk_once_keys_pkey":
		return final{fmt.Errorf("pgstore: %w: %s", blackboard.ErrDuplicateKey, pe.Detail)}
	}
	return err // run again if the server aborted it (retryable), else wrapped by retry
}

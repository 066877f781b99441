package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/store"
)

// Apply implements [store.Store]: the batch runs in one write transaction
// that is rolled back on any error. Status changes are applied before the
// appends, so a batch cannot invalidate a record it appends (that is
// [blackboard.ErrNotFound], as in [memstore.Store]). The batch's claims are
// inserted in the same transaction, so a claim lands exactly when the rest
// of its batch does; so do the counters of every trace the batch touches,
// the batch's State (see [Store.ReadState]) and the links of its events
// in each trace's hash chain (see [store.Chainer]).
//
// A single record is a one-record batch, a status change a batch with one
// [store.Invalidation]. Apply returns an error wrapping
// [store.ErrDuplicateID] for an id the store holds (or two appends of
// one id); the error of [store.Batch.Check] for a record it refuses
// ([blackboard.ErrInvalidInput] for a bad field, a string field or
// reference that is not valid UTF-8, or a TTL beyond [store.MaxTTL];
// [blackboard.ErrInvalidPayload] for a payload string that is not);
// [blackboard.ErrInvalidInput] for an unknown role or a NaN confidence;
// [blackboard.ErrInvalidPayload] for a payload value JSON cannot encode
// or that has no canonical form (package canon) to digest;
// [store.ErrNotActive] for a status change of a record that is not
// ACTIVE, [blackboard.ErrNotFound] for one of an unknown id and
// [blackboard.ErrInvalidInput] for one to a bad status or without a
// reason; an error wrapping [blackboard.ErrConflict] when the condition's
// trace does not hold TraceLen records; [blackboard.ErrDuplicateKey]
// for a claim of a key already claimed, by any store on the database, or
// of one key twice in the batch; and [blackboard.ErrInvalidInput] for a
// claim [store.Batch.Check] refuses or a State whose MarshalBinary
// fails (that error is wrapped too).
func (s *Store) Apply(ctx context.Context, b store.Batch) error {
	leave, err := s.enter(ctx)
	if err != nil {
		return err
	}
	defer leave()
	if s.readOnly {
		return errReadOnly
	}
	if err := b.Check("", ""); err != nil {
		return fmt.Errorf("sqlitestore: %w", err)
	}
	w := writes{rows: make([][]any, len(b.Appends)), digests: make([]chain.Hash, len(b.Appends)), traceOf: make([]int, len(b.Appends))}
	for i := range b.Appends {
		if w.rows[i], err = encode(&b.Appends[i]); err != nil {
			return err
		}
		// Digested before the transaction: it needs nothing stored.
		if w.digests[i], err = digest(&b.Appends[i], w.rows[i][colPayload]); err != nil {
			return fmt.Errorf("sqlitestore: %w: %w", blackboard.ErrInvalidPayload, err)
		}
		w.traceOf[i] = w.touch(w.rows[i][colTrace].(string), w.rows[i][colNamespace].(string), 1)
		if r := &b.Appends[i]; r.Slot == blackboard.Constraints && r.Scope == blackboard.ScopePersistent {
			w.share(w.rows[i][colNamespace].(string))
		}
	}
	// Batches are small: a quadratic scan for a key claimed twice beats
	// allocating a set, and it names the fault better than the primary key
	// would.
	for i, c := range b.Claims {
		for _, prev := range b.Claims[:i] {
			if prev.Key == c.Key && cmp.Or(prev.Namespace, blackboard.DefaultNamespace) == cmp.Or(c.Namespace, blackboard.DefaultNamespace) {
				return fmt.Errorf("sqlitestore: %w: %q twice in one batch", blackboard.ErrDuplicateKey, c.Key)
			}
		}
	}
	if b.State != nil && b.Trace != "" {
		// Encoded before the transaction: a state that cannot be encoded
		// refuses the batch without taking the write lock.
		if w.state, err = b.State.MarshalBinary(); err != nil {
			return fmt.Errorf("sqlitestore: %w: the state of trace %q: %w", blackboard.ErrInvalidInput, b.Trace, err)
		}
		if w.state == nil {
			w.state = []byte{} // an empty state is a state: not NULL
		}
	}
	if len(w.rows) == 0 && len(b.Invalidations) == 0 && len(b.Claims) == 0 && b.Trace == "" {
		return nil
	}
	select {
	case s.write <- struct{}{}:
		defer func() { <-s.write }()
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := ctxErr(ctx, s.applyTx(ctx, &w, b)); err != nil {
		return err
	}
	copy(b.Links, w.links) // only once the batch has committed
	return nil
}

// writes is a checked batch: its encoded rows, their content digests and
// the index in touched of their traces, the traces it touches, the
// namespaces whose persistent constraints it changes and its encoded
// state.
type writes struct {
	rows    [][]any
	digests []chain.Hash
	traceOf []int
	touched []touched
	shared  []string
	state   []byte       // nil: no state to store
	links   []chain.Hash // the appends' links, once computed
}

// The slot and scope of a persistent constraint, as stored.
var (
	constraintsSlot = string(blackboard.Constraints)
	persistentScope = string(blackboard.ScopePersistent)
)

// share records a change of the persistent constraints of namespace ns
// (as stored), which the batch counts once.
func (w *writes) share(ns string) {
	for _, have := range w.shared {
		if have == ns {
			return
		}
	}
	w.shared = append(w.shared, ns)
}

// digest returns the content digest of r as the store keeps it, which
// is how [Store.Chain] reads it back: a payload of the types JSON decodes
// to (and Go integers, which canon and JSON both take as the nearest
// double) is digested as it is; any other (a float32, a []byte, a
// struct, a value with a JSON method of its own), whose JSON reads back
// as another value, is digested as its JSON text, stored, decodes.
func digest(r *blackboard.Record, stored any) (chain.Hash, error) {
	if plain(map[string]any(r.Payload), 0) {
		return chain.AppendDigest(r)
	}
	c := *r
	c.Payload = nil
	if text, ok := stored.(string); ok {
		if err := json.Unmarshal([]byte(text), &c.Payload); err != nil {
			return chain.Hash{}, err
		}
	}
	return chain.AppendDigest(&c)
}

// plain reports whether v is made of the values JSON decodes to, and Go
// integers, no deeper than a bound.
func plain(v any, depth int) bool {
	if depth > 64 {
		return false
	}
	switch x := v.(type) {
	case nil, bool, string, float64, int, int64, int32, uint, uint64, uint32:
		return true
	case map[string]any:
		if x == nil && depth > 0 {
			return false // JSON null; canon writes a nil map as {} (a nil payload is {} to both)
		}
		for _, e := range x {
			if !plain(e, depth+1) {
				return false
			}
		}
		return true
	case []any:
		if x == nil {
			return false // JSON null, canon []
		}
		for _, e := range x {
			if !plain(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// touched is a trace a batch appends to or changes a status in, and its
// chain during the batch: read (known) from the batch's first status
// change in the trace, or from the bump of a trace the batch only appends
// to (bumped: its row is counted already, only its head is left to
// write), then extended by each of the batch's events in the trace.
type touched struct {
	trace, namespace string
	appends          int
	known, bumped    bool
	events           uint64     // the chain's length
	head             chain.Hash // its last link
	n                int        // the trace's count after the batch
	version          int64      // its version after the batch
}

// touch records n appends (0: a status change) to trace trace of
// namespace ns (as stored): one trace id in two namespaces is two traces.
// It returns the trace's index in w.touched.
func (w *writes) touch(trace, ns string, n int) int {
	for i := range w.touched {
		if t := &w.touched[i]; t.trace == trace && t.namespace == ns {
			t.appends += n
			return i
		}
	}
	w.touched = append(w.touched, touched{trace: trace, namespace: ns, appends: n})
	return len(w.touched) - 1
}

// read sets the chain as stored before the batch: its length and last
// link (nil for none).
func (t *touched) read(events int64, head []byte) {
	t.known, t.events = true, uint64(events)
	copy(t.head[:], head)
}

// link extends the trace's chain by an event of content digest d and
// returns the event's position and link.
func (t *touched) link(d chain.Hash) (int64, []byte) {
	pos := t.events
	t.head = chain.Next(t.head, pos, d)
	t.events++
	link := t.head
	return int64(pos), link[:]
}

func (s *Store) applyTx(ctx context.Context, w *writes, b store.Batch) (err error) {
	w.links = w.links[:0]
	invs := b.Invalidations
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback() // the error that caused the rollback is the one to report
		}
	}()
	// Every write transaction starts with a write, so even on a connection
	// that begins deferred transactions it takes the write lock (waiting in
	// the busy handler) before it reads anything: a status change, or else
	// the bump of a trace the batch appends to.
	//
	// The chains (see store.Chainer): the status changes are linked first,
	// in the batch's order, each from its trace's head as its update
	// returns it (or as the batch left it), then the appends. Each trace's
	// head is read once and written once, with its counters.
	if len(invs) > 0 {
		update := tx.StmtContext(ctx, s.invalidate)
		end := tx.StmtContext(ctx, s.end)
		for _, inv := range invs {
			var seq int64
			var trace, ns, slot, scope string
			var events sql.NullInt64
			var head []byte
			err := update.QueryRowContext(ctx, string(inv.Status), string(inv.Reason), inv.ID, active).Scan(&seq, &trace, &ns, &slot, &scope, &events, &head)
			if errors.Is(err, sql.ErrNoRows) {
				return s.whyNotUpdated(ctx, tx, inv.ID)
			}
			if err != nil {
				return err
			}
			t := &w.touched[w.touch(trace, ns, 0)]
			if !t.known {
				t.read(events.Int64, head)
			}
			pos, link := t.link(chain.TransitionDigest(inv.ID, inv.Status, inv.Reason))
			if _, err := end.ExecContext(ctx, pos, link, seq); err != nil {
				return err
			}
			if slot == constraintsSlot && scope == persistentScope {
				w.share(ns)
			}
		}
	}
	if len(w.rows) > 0 {
		bump := tx.StmtContext(ctx, s.bump)
		for i := range w.touched {
			if t := &w.touched[i]; !t.known {
				var events int64
				var head []byte
				if err := bump.QueryRowContext(ctx, t.trace, t.namespace, t.appends).Scan(&t.n, &t.version, &events, &head); err != nil {
					return err
				}
				t.read(events, head)
				t.bumped = true
			}
		}
		insert := tx.StmtContext(ctx, s.insert)
		for i, args := range w.rows {
			args[colLinkSeq], args[colLink] = w.touched[w.traceOf[i]].link(w.digests[i])
			if len(b.Links) >= len(w.rows) {
				w.links = append(w.links, chain.Hash(args[colLink].([]byte)))
			}
			if _, err := insert.ExecContext(ctx, args...); err != nil {
				var se *sqlite.Error
				if errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE {
					return fmt.Errorf("sqlitestore: %w: %s", store.ErrDuplicateID, args[0])
				}
				return err
			}
		}
	}
	if len(b.Claims) > 0 {
		// The primary key of once_keys decides a race for a key, within
		// this process or across processes: the loser's insert fails and
		// its whole transaction rolls back.
		claim := tx.StmtContext(ctx, s.claim)
		for _, c := range b.Claims {
			if _, err := claim.ExecContext(ctx, cmp.Or(c.Namespace, blackboard.DefaultNamespace), c.Key, c.RecordID); err != nil {
				var se *sqlite.Error
				if errors.As(err, &se) && (se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE) {
					return fmt.Errorf("sqlitestore: %w: %q", blackboard.ErrDuplicateKey, c.Key)
				}
				return err
			}
		}
	}
	// Counted inside the transaction that holds the write lock, so no other
	// writer can slip in between: each trace the batch touches counts one
	// change, and the count the bump returns is the one the batch's
	// condition is checked against.
	had := -1        // the length of trace b.Trace before the batch; -1 unread
	var before int64 // its version before the batch
	traceNS := cmp.Or(b.TraceNamespace, blackboard.DefaultNamespace)
	var setHead, bumpChain *sql.Stmt
	for i := range w.touched {
		t := &w.touched[i]
		if t.bumped {
			if setHead == nil {
				setHead = tx.StmtContext(ctx, s.setHead)
			}
			if _, err := setHead.ExecContext(ctx, t.trace, t.namespace, int64(t.events), t.head[:]); err != nil {
				return err
			}
		} else {
			if bumpChain == nil {
				bumpChain = tx.StmtContext(ctx, s.bumpChain)
			}
			if err := bumpChain.QueryRowContext(ctx, t.trace, t.namespace, t.appends, int64(t.events), t.head[:]).Scan(&t.n, &t.version); err != nil {
				return err
			}
		}
		if t.trace == b.Trace && t.namespace == traceNS {
			had, before = t.n-t.appends, t.version-1
		}
	}
	if b.Trace != "" && had < 0 {
		err := tx.StmtContext(ctx, s.count).QueryRowContext(ctx, b.Trace, traceNS).Scan(&had, &before)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			had = 0
		case err != nil:
			return err
		}
	}
	if b.Trace != "" && had != b.TraceLen {
		return fmt.Errorf("sqlitestore: %w: trace %q of namespace %q holds %d records, not %d", blackboard.ErrConflict, b.Trace, traceNS, had, b.TraceLen)
	}
	if w.state != nil && uint64(before) != b.Version {
		return fmt.Errorf("sqlitestore: %w: trace %q is at version %d, not %d", blackboard.ErrConflict, b.Trace, before, b.Version)
	}
	if b.SharedNamespace != "" {
		// Before this batch's own change of the counter, if it makes one.
		var shared int64
		err := tx.StmtContext(ctx, s.readShared).QueryRowContext(ctx, cmp.Or(b.SharedNamespace, blackboard.DefaultNamespace)).Scan(&shared)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if uint64(shared) != b.Shared {
			return fmt.Errorf("sqlitestore: %w: the persistent constraints of namespace %q changed (%d, not %d)", blackboard.ErrConflict, cmp.Or(b.SharedNamespace, blackboard.DefaultNamespace), shared, b.Shared)
		}
	}
	if len(w.shared) > 0 {
		share := tx.StmtContext(ctx, s.share)
		for _, ns := range w.shared {
			if _, err := share.ExecContext(ctx, ns); err != nil {
				return err
			}
		}
	}
	if w.state != nil {
		// A trace that holds no record has no row, and keeps no state.
		if _, err := tx.StmtContext(ctx, s.setState).ExecContext(ctx, b.Trace, w.state, traceNS); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// whyNotUpdated explains a status change that matched no ACTIVE record.
func (s *Store) whyNotUpdated(ctx context.Context, tx *sql.Tx, id string) error {
	var status string
	err := tx.StmtContext(ctx, s.status).QueryRowContext(ctx, id).Scan(&status)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("sqlitestore: %w: %s", blackboard.ErrNotFound, id)
	case err != nil:
		return err
	}
	return fmt.Errorf("sqlitestore: %w: %s is %s", store.ErrNotActive, id, status)
}

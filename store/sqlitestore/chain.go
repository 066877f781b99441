package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/reason"
)

// Head implements [store.Chainer] with one primary-key lookup of the
// trace's row: its chain's length, last link and how many of its events
// the migration to version 8 chained ([chain.Head.Migrated]). An unknown
// trace has a zero Len and Link.
func (s *Store) Head(ctx context.Context, namespace, traceID string) (chain.Head, error) {
	leave, err := s.enter(ctx)
	if err != nil {
		return chain.Head{}, err
	}
	defer leave()
	return s.readHead(ctx, cmp.Or(namespace, blackboard.DefaultNamespace), traceID)
}

// readHead is Head's work, for a caller that entered the store.
func (s *Store) readHead(ctx context.Context, ns, traceID string) (chain.Head, error) {
	h := chain.Head{Namespace: ns, Trace: traceID}
	var events, migrated int64
	var link []byte
	err := ctxErr(ctx, s.head.QueryRowContext(ctx, traceID, ns).Scan(&events, &link, &migrated))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return h, nil
	case err != nil:
		return chain.Head{}, fmt.Errorf("sqlitestore: chain head: %w", err)
	}
	h.Len, h.Migrated = uint64(events), uint64(migrated)
	copy(h.Link[:], link)
	return h, nil
}

// Chain implements [store.Chainer]. It merges two listings of the trace,
// each through an index and read a page at a time: its appends in append
// order (the trace index, as [Store.ListTrace] reads them) and its status
// changes in chain order (an index of the records whose status changed),
// so its cost and memory do not grow with other traces and it holds no
// connection while it yields. An append whose record's status changed
// since reads back with the status ACTIVE and the reason it was appended
// with.
//
// It streams the chain as it stood when it began: the events at
// positions below the length the trace's row then recorded; later events
// are left to a later call, so that a walk beside a live writer sees
// every event before the ones it yields. A row that claims a position
// past that length (one written without moving the head) is not yielded
// either: [store.VerifyTrace] finds its record through the listing. (A
// row placed by a hand that did not chain it, with no position, is
// yielded after the append before it, at the next position, with a zero
// link.)
func (s *Store) Chain(ctx context.Context, namespace, traceID string) iter.Seq2[chain.Event, error] {
	ns := cmp.Or(namespace, blackboard.DefaultNamespace)
	return func(yield func(chain.Event, error) bool) {
		h, err := s.Head(ctx, ns, traceID)
		if err != nil {
			yield(chain.Event{}, err)
			return
		}
		c := chainCursor{s: s, ns: ns, trace: traceID, limit: int64(h.Len), lastPos: -1, endPos: -1 << 63}
		for {
			if len(c.apps) == 0 && !c.appsDone {
				if err := c.readAppends(ctx); err != nil {
					yield(chain.Event{}, ctxErr(ctx, err))
					return
				}
			}
			if len(c.ends) == 0 && !c.endsDone {
				if err := c.readEnds(ctx); err != nil {
					yield(chain.Event{}, ctxErr(ctx, err))
					return
				}
			}
			var next positioned
			switch {
			case len(c.apps) == 0 && len(c.ends) == 0:
				return
			case len(c.ends) == 0 || len(c.apps) > 0 && c.apps[0].pos <= c.ends[0].pos:
				// An append goes before a status change at its position,
				// which only a changed file holds: a record is appended
				// before any change of its status.
				next, c.apps = c.apps[0], c.apps[1:]
			default:
				next, c.ends = c.ends[0], c.ends[1:]
			}
			if !yield(next.Event, nil) {
				return
			}
		}
	}
}

// positioned is an event and its position in the merge.
type positioned struct {
	chain.Event
	pos int64
}

// chainCursor is where a Chain stands in its two listings: the pages
// read and not yet yielded, and where each listing's next page starts.
type chainCursor struct {
	s         *Store
	ns, trace string
	limit     int64 // the chain's length when the walk began

	apps      []positioned
	appsAfter int64 // seq of the last append read
	lastPos   int64 // position of the last append read, for one without
	appsDone  bool

	ends             []positioned
	endPos, endAfter int64 // position and seq of the last status change read
	endsDone         bool
}

// readAppends reads the next page of the trace's appends.
func (c *chainCursor) readAppends(ctx context.Context) error {
	leave, err := c.s.enter(ctx)
	if err != nil {
		return err
	}
	defer leave()
	rows, err := c.s.chainAppends.QueryContext(ctx, c.trace, c.ns, c.appsAfter, pageSize)
	if err != nil {
		return err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var link []byte
		var pos, end sql.NullInt64
		var born sql.NullString
		seq, r, err := scan(scanMore{rows, []any{&link, &pos, &end, &born}})
		if err != nil {
			return err
		}
		n++
		c.appsAfter = seq
		if pos.Valid {
			c.lastPos = pos.Int64
		} else {
			c.lastPos++
		}
		if c.lastPos >= c.limit {
			continue // appended after the walk began (or placed past the head)
		}
		if end.Valid {
			// The record as it was appended: ACTIVE, with its first reason.
			r.Status, r.Reason = blackboard.StatusActive, reason.Code(born.String)
		}
		e := positioned{Event: chain.Event{Seq: uint64(c.lastPos), Op: chain.OpAppend, Record: r}, pos: c.lastPos}
		copy(e.Link[:], link)
		c.apps = append(c.apps, e)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	c.appsDone = n < pageSize
	return nil
}

// readEnds reads the next page of the trace's status changes.
func (c *chainCursor) readEnds(ctx context.Context) error {
	leave, err := c.s.enter(ctx)
	if err != nil {
		return err
	}
	defer leave()
	rows, err := c.s.chainEnds.QueryContext(ctx, c.trace, c.ns, c.endPos, c.endAfter, pageSize)
	if err != nil {
		return err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var seq, pos int64
		var id, status, why string
		var link []byte
		if err := rows.Scan(&seq, &id, &status, &why, &pos, &link); err != nil {
			return err
		}
		n++
		c.endPos, c.endAfter = pos, seq
		if pos >= c.limit {
			continue
		}
		e := positioned{pos: pos, Event: chain.Event{Seq: uint64(pos), Op: chain.OpStatus, Record: blackboard.Record{
			ID: id, Namespace: c.ns, Status: blackboard.Status(status), Reason: reason.Code(why),
			Provenance: blackboard.Provenance{TraceID: c.trace},
		}}}
		copy(e.Link[:], link)
		c.ends = append(c.ends, e)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	c.endsDone = n < pageSize
	return nil
}

// migrateChains chains the records a database of version 7 holds, in the
// migration to version 8's transaction: per trace, in append order, each
// record as an append event with the status and reason it has now (its
// earlier history was not kept, so it cannot be proven), and records in
// the trace's row how many events that was (migrated) beside its head. A
// record it cannot read fails the migration, which then changes nothing.
// It reads a page of traces, then a page of records, at a time.
func migrateChains(ctx context.Context, conn *sql.Conn) error {
	setLink, err := conn.PrepareContext(ctx, "UPDATE records SET link = ?, link_seq = ? WHERE seq = ?")
	if err != nil {
		return err
	}
	defer setLink.Close()
	type trace struct {
		rowid     int64
		ns, trace string
	}
	var after int64
	for {
		var traces []trace
		rows, err := conn.QueryContext(ctx, "SELECT rowid, namespace, trace_id FROM traces WHERE rowid > ? ORDER BY rowid LIMIT ?", after, pageSize)
		if err != nil {
			return err
		}
		for rows.Next() {
			var t trace
			if err := rows.Scan(&t.rowid, &t.ns, &t.trace); err != nil {
				rows.Close()
				return err
			}
			traces, after = append(traces, t), t.rowid
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		for _, t := range traces {
			events, head, err := chainTrace(ctx, conn, setLink, t.ns, t.trace)
			if err != nil {
				return err
			}
			var link []byte // NULL for a trace without records
			if events > 0 {
				link = head[:]
			}
			if _, err := conn.ExecContext(ctx, "UPDATE traces SET events = ?1, head = ?2, migrated = ?1 WHERE rowid = ?3", int64(events), link, t.rowid); err != nil {
				return err
			}
		}
		if len(traces) < pageSize {
			return nil
		}
	}
}

// chainTrace chains one trace's records for migrateChains and returns the
// chain's length and head.
func chainTrace(ctx context.Context, conn *sql.Conn, setLink *sql.Stmt, ns, traceID string) (events uint64, head chain.Hash, err error) {
	type linked struct {
		seq  int64
		link chain.Hash
	}
	var after int64
	page := make([]linked, 0, pageSize)
	for {
		page = page[:0]
		rows, err := conn.QueryContext(ctx, queryTrace, traceID, ns, after, pageSize)
		if err != nil {
			return 0, chain.Hash{}, err
		}
		for rows.Next() {
			seq, r, err := scan(rows)
			var d chain.Hash
			if err == nil {
				d, err = chain.AppendDigest(&r)
			}
			if err != nil {
				rows.Close()
				return 0, chain.Hash{}, fmt.Errorf("chaining trace %q of namespace %q: %w", traceID, ns, err)
			}
			head = chain.Next(head, events, d)
			events++
			page, after = append(page, linked{seq, head}), seq
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return 0, chain.Hash{}, err
		}
		pos := events - uint64(len(page))
		for i, l := range page {
			if _, err := setLink.ExecContext(ctx, l.link[:], int64(pos)+int64(i), l.seq); err != nil {
				return 0, chain.Hash{}, err
			}
		}
		if len(page) < pageSize {
			return events, head, nil
		}
	}
}

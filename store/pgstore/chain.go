package pgstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/chain"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/internal/column"
)

var _ store.Chainer = (*Store)(nil)

// linkPrefix is chain.LinkPrefix, sent with every statement that extends
// a chain: the server computes each link with its own sha256.
var linkPrefix = chain.LinkPrefix()

// hashOf reads a link or head as stored: a value that is not 32 bytes
// long (NULL among them) reads as the zero Hash, as the statements that
// extend a chain read it (see migration 7).
func hashOf(b []byte) chain.Hash {
	var h chain.Hash
	if len(b) == len(h) {
		copy(h[:], b)
	}
	return h
}

// appendDigest returns the content digest of r as Chain will read it
// back: payloadJSON is r's payload as encode stored it. A payload of the
// types a stored payload decodes to (objects, lists, strings, float64,
// booleans, null) digests as it is; any other (an int, a struct, a
// float32, whose JSON form may read back otherwise) is digested as it
// reads back, decoded from payloadJSON as [Store.Get] decodes it.
//
// A record the chain cannot digest (a payload nested deeper than package
// canon reads) is refused with [blackboard.ErrInvalidPayload].
func appendDigest(r *blackboard.Record, payloadJSON string) (chain.Hash, error) {
	var d chain.Hash
	var err error
	if natural(map[string]any(r.Payload)) {
		d, err = chain.AppendDigest(r)
	} else {
		back := *r
		back.Payload = nil
		if err = json.Unmarshal([]byte(payloadJSON), &back.Payload); err == nil {
			d, err = chain.AppendDigest(&back)
		}
	}
	if err != nil {
		return chain.Hash{}, fmt.Errorf("pgstore: record %s: %w: its chain digest: %w", r.ID, blackboard.ErrInvalidPayload, err)
	}
	return d, nil
}

// natural reports whether v holds only the types a JSON object decodes
// to with encoding/json, so that its digest is the digest of what reads
// back.
func natural(v any) bool {
	switch x := v.(type) {
	case nil, bool, string, float64:
		return true
	case map[string]any:
		for _, e := range x {
			if !natural(e) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range x {
			if !natural(e) {
				return false
			}
		}
		return true
	}
	return false
}

// Chain implements [store.Chainer] with one query through the trace index
// (bk_records_trace): each row of the trace gives its append event and,
// when its status changed, that event, sorted by position on the server.
// The events stream as the server sends them, so the memory Chain uses
// does not grow with the trace; in exchange the listing holds one of the
// pool's connections until the loop ends: the loop body may call the
// store only if the pool has another connection, and [Store.Close] of a
// store that owns its pool waits for the loop to end. The query is run
// again after a failure only before the first event was yielded. An event's Link is the link as
// stored (the zero Hash for one that is not 32 bytes); a row whose status
// or payload does not decode ends the listing with an error.
func (s *Store) Chain(ctx context.Context, namespace, traceID string) iter.Seq2[chain.Event, error] {
	ns := cmp.Or(namespace, blackboard.DefaultNamespace)
	return func(yield func(chain.Event, error) bool) {
		leave, err := s.enter(ctx)
		if err != nil {
			yield(chain.Event{}, err)
			return
		}
		// The store is held open until the first event arrives, not while
		// the loop body runs: a body that calls the store while another
		// goroutine closes it must not wait for itself.
		held := true
		release := func() {
			if held {
				held = false
				leave()
			}
		}
		defer release()
		if !storable(traceID) || !storable(ns) {
			return // no trace has that id
		}
		yielded, stopped := false, false
		err = s.retry(ctx, "chain", func() error {
			rows, err := s.pool.Query(ctx, s.q.chain, traceID, ns)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				e, err := scanEvent(rows)
				if err != nil {
					return final{err}
				}
				yielded = true
				release()
				if !yield(e, nil) {
					stopped = true
					return nil
				}
			}
			err = rows.Err()
			if err != nil && yielded {
				// Events were yielded: running the query again would
				// yield them twice.
				return final{wrap("chain", err, false)}
			}
			return err
		})
		if err != nil && !stopped {
			yield(chain.Event{}, err)
		}
	}
}

// scanEvent reads one row of the chain query.
func scanEvent(rows pgx.Rows) (chain.Event, error) {
	var seq int64
	var status bool
	var link []byte
	var c column.Text
	var r blackboard.Record
	p := &r.Provenance
	err := rows.Scan(&seq, &status, &r.ID, &p.TraceID, &c.Slot, &c.Mode, &r.Kind, &c.Payload, &c.Role, &p.Writer, &p.TimestampMS,
		&p.InputRefs, &p.Confidence, &p.TTLMS, &r.EvidenceRefs, &c.Status, &c.Reason, &c.Scope, &r.Namespace, &p.Span, &link)
	if err != nil {
		return chain.Event{}, wrap("chain", err, false)
	}
	if err := column.Decode(c, &r); err != nil {
		return chain.Event{}, fmt.Errorf("pgstore: chain: record %s: %w", r.ID, err)
	}
	e := chain.Event{Seq: uint64(seq), Op: chain.OpAppend, Record: r, Link: hashOf(link)}
	if status {
		e.Op = chain.OpStatus
		e.Record = blackboard.Record{ID: r.ID, Namespace: r.Namespace, Status: r.Status, Reason: r.Reason,
			Provenance: blackboard.Provenance{TraceID: p.TraceID}}
	}
	return e, nil
}

// Head implements [store.Chainer] with one primary-key lookup of the
// trace's counter row: its event count, last link (the zero Hash for a
// value that is not 32 bytes) and how many of its events migration 7
// chained. An unknown trace has the zero head, with its namespace and id.
func (s *Store) Head(ctx context.Context, namespace, traceID string) (chain.Head, error) {
	leave, err := s.enter(ctx)
	if err != nil {
		return chain.Head{}, err
	}
	defer leave()
	h := chain.Head{Namespace: cmp.Or(namespace, blackboard.DefaultNamespace), Trace: traceID}
	if !storable(traceID) || !storable(h.Namespace) {
		return h, nil
	}
	var events, migrated int64
	var link []byte
	err = s.retry(ctx, "chain head", func() error {
		return s.pool.QueryRow(ctx, s.q.head, traceID, h.Namespace).Scan(&events, &link, &migrated)
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return h, nil
	case err != nil:
		return chain.Head{}, err
	}
	h.Len, h.Link, h.Migrated = uint64(events), hashOf(link), uint64(migrated)
	return h, nil
}

// migrateBatch is how many records chainExisting reads and updates at a
// time.
const migrateBatch = 1024

// chainExisting is the Go half of migration 7: it chains the records the
// schema holds, trace by trace in position order, each as an append event
// of the record as it is now (its current status and reason), and sets
// each trace's events, head and migrated to what it chained. It reads the
// records through a cursor on the trace index, a batch at a time, so its
// memory does not grow with the store.
func chainExisting(ctx context.Context, tx pgx.Tx, q *strings.Replacer) error {
	if _, err := tx.Exec(ctx, q.Replace("DECLARE bk_chain_existing NO SCROLL CURSOR FOR SELECT "+columns+
		" FROM {schema}.bk_records ORDER BY trace_id, namespace, pos")); err != nil {
		return err
	}
	setLinks := q.Replace("UPDATE {schema}.bk_records r SET link = u.link, link_seq = u.link_seq" +
		" FROM unnest($1::bigint[], $2::bytea[], $3::bigint[]) AS u(seq, link, link_seq) WHERE r.seq = u.seq")
	setHeads := q.Replace("UPDATE {schema}.bk_traces t SET events = u.events, head = u.head, migrated = u.events" +
		" FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bytea[]) AS u(trace_id, namespace, events, head)" +
		" WHERE t.trace_id = u.trace_id AND t.namespace = u.namespace")
	var (
		cur            traceKey
		events         uint64
		head           chain.Hash
		started        bool
		seqs, linkSeqs []int64
		links, heads   [][]byte
		hTraces, hNSs  []string
		hEvents        []int64
	)
	endTrace := func() {
		if started {
			hTraces, hNSs, hEvents = append(hTraces, cur.trace), append(hNSs, cur.namespace), append(hEvents, int64(events))
			heads = append(heads, append([]byte(nil), head[:]...))
		}
	}
	flush := func() error {
		if len(seqs) > 0 {
			if _, err := tx.Exec(ctx, setLinks, seqs, links, linkSeqs); err != nil {
				return err
			}
		}
		if len(hTraces) > 0 {
			if _, err := tx.Exec(ctx, setHeads, hTraces, hNSs, hEvents, heads); err != nil {
				return err
			}
		}
		seqs, links, linkSeqs = seqs[:0], links[:0], linkSeqs[:0]
		hTraces, hNSs, hEvents, heads = hTraces[:0], hNSs[:0], hEvents[:0], heads[:0]
		return nil
	}
	fetch := fmt.Sprintf("FETCH %d FROM bk_chain_existing", migrateBatch)
	for {
		rows, err := tx.Query(ctx, fetch)
		if err != nil {
			return err
		}
		n := 0
		for rows.Next() {
			n++
			seq, _, r, err := scan(rows)
			if err != nil {
				rows.Close()
				return err
			}
			if k := (traceKey{r.Namespace, r.Provenance.TraceID}); !started || k != cur {
				endTrace()
				cur, events, head, started = k, 0, chain.Hash{}, true
			}
			d, err := chain.AppendDigest(&r)
			if err != nil {
				rows.Close()
				return fmt.Errorf("record %s: %w", r.ID, err)
			}
			head = chain.Next(head, events, d)
			seqs, links, linkSeqs = append(seqs, seq), append(links, append([]byte(nil), head[:]...)), append(linkSeqs, int64(events))
			events++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if n < migrateBatch {
			break
		}
		if err := flush(); err != nil {
			return err
		}
	}
	endTrace()
	if err := flush(); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, "CLOSE bk_chain_existing")
	return err
}

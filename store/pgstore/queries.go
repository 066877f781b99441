package pgstore

import (
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/blackboardkernel/bk/blackboard"
)

// queries are the store's statements, with the schema's table names.
type queries struct {
	get, find, trace, claimedBy                         string
	slotAny, slotPersistent, slotPersistentNS           string
	lockTraces, lockTracesIf, invalidate                string
	countInvalidated, checkVersion, setState, readState string
	checkShared                                         string
	insert, claim, traces, share                        string
	chain, head                                         string
}

func newQueries(schema string) queries {
	records := pgx.Identifier{schema, "bk_records"}.Sanitize()
	traces := pgx.Identifier{schema, "bk_traces"}.Sanitize()
	keys := pgx.Identifier{schema, "bk_once_keys"}.Sanitize()
	namespaces := pgx.Identifier{schema, "bk_namespaces"}.Sanitize()
	require := pgx.Identifier{schema, "bk_require"}.Sanitize()
	// A trace is its namespace and its id: $1 holds the trace ids, $3
	// their namespaces. A trace the batch appends to counts one change
	// (version).
	upsert := "INSERT INTO " + traces + " AS t (trace_id, n, namespace, version)" +
		" SELECT u.trace_id, u.n, u.ns, (u.n > 0)::int FROM unnest($1::text[], $2::bigint[], $3::text[]) AS u(trace_id, n, ns)" +
		" ON CONFLICT (namespace, trace_id) DO UPDATE SET n = t.n + excluded.n, version = t.version + excluded.version" +
		" RETURNING t.trace_id, t.n, t.namespace"
	sel := "SELECT " + columns + " FROM " + records + " "
	// next is the link of the event a statement adds to trace row t, as
	// chain.Next computes it: $P is chain.LinkPrefix, $D the event's
	// content digest, t.events its position, and the previous link the
	// trace's head (32 zero bytes for none, or for a head of any other
	// length, as Head reads it).
	next := func(prefix, digest string) string {
		return "sha256(" + prefix + "::bytea || CASE WHEN octet_length(t.head) = 32 THEN t.head ELSE decode('" +
			strings.Repeat("00", 32) + "', 'hex') END || int8send(t.events) || " + digest + "::bytea)"
	}
	return queries{
		get:   sel + "WHERE id = $1",
		find:  sel + "WHERE trace_id = $1 AND namespace = $2 AND slot = $3 AND kind = $4 AND status = $5 ORDER BY pos DESC LIMIT 1",
		trace: sel + "WHERE trace_id = $1 AND namespace = $2 AND pos > $3 ORDER BY pos LIMIT $4",
		// A zero filter field is passed as '' and matches everything.
		slotAny: sel + "WHERE slot = $1 AND ($2 = '' OR status = $2) AND ($3 = '' OR scope = $3) AND ($4 = '' OR namespace = $4)" +
			" AND seq > $5 ORDER BY seq LIMIT $6",
		// The scope is a literal so that every plan, generic ones included,
		// can use the partial indexes, whose condition it must match.
		slotPersistent: sel + "WHERE slot = $1 AND scope = 'persistent' AND ($2 = '' OR status = $2)" +
			" AND seq > $3 ORDER BY seq LIMIT $4",
		slotPersistentNS: sel + "WHERE slot = $1 AND namespace = $2 AND scope = 'persistent' AND ($3 = '' OR status = $3)" +
			" AND seq > $4 ORDER BY seq LIMIT $5",
		claimedBy: "SELECT record_id FROM " + keys + " WHERE namespace = $1 AND key = $2",
		// Creates the counters of new traces and adds each trace's appends
		// to its counter, locking the rows in the order given (sorted, so
		// that two batches never wait for each other in opposite orders).
		// ON CONFLICT DO UPDATE works on the latest committed row even
		// under READ COMMITTED, so the count is exact. lockTracesIf then
		// checks the batch's condition: $4 is the trace, of namespace $7, $5
		// what the batch appends to it, $6 the length its author read.
		lockTraces: "WITH t AS (" + upsert + ") SELECT count(*) FROM t",
		lockTracesIf: "WITH t AS (" + upsert + ")," +
			" c AS (SELECT coalesce((SELECT n FROM t WHERE trace_id = $4 AND namespace = $7), 0) - $5 AS had)" +
			" SELECT " + require + "(had = $6, '" + codeConflict + "'," +
			" format('trace %L of namespace %L holds %s records, not %s', $4::text, $7::text, had, $6::bigint)) FROM c",
		// A status change that changes no row fails the batch: not found,
		// or not active (then or since).
		//
		// The change is an event of the chain of the record's trace: the
		// trace's row is found through the record (r), its chain extended
		// (h, which waits for the row lock, and then reads the row as the
		// writer before it left it), and the event's position and link
		// kept on the record's row with its reason at append (u). $5 is
		// chain.LinkPrefix, $6 the change's digest. A record another batch
		// changed meanwhile is not ACTIVE when u reaches it: u changes
		// nothing and the batch, the extended chain with it, rolls back.
		invalidate: "WITH r AS (SELECT trace_id, namespace FROM " + records + " WHERE id = $3 AND status = $4)," +
			" h AS (UPDATE " + traces + " t SET events = t.events + 1, head = " + next("$5", "$6") +
			" FROM r WHERE t.trace_id = r.trace_id AND t.namespace = r.namespace RETURNING t.events - 1 AS seq, t.head)," +
			" u AS (UPDATE " + records + " SET status = $1, reason = $2, born_reason = reason, end_seq = h.seq, end_link = h.head" +
			" FROM h WHERE id = $3 AND status = $4 RETURNING id)," +
			" c AS (SELECT (SELECT status FROM " + records + " WHERE id = $3) AS status)" +
			" SELECT " + require + "(EXISTS (SELECT 1 FROM u)," +
			" CASE WHEN c.status IS NULL THEN '" + codeNotFound + "' ELSE '" + codeNotActive + "' END," +
			" CASE WHEN c.status IS NULL THEN $3 ELSE $3 || ' is ' || c.status END) FROM c",
		// After the batch's status changes ($1, their ids): one change for
		// each trace they touched that the batch does not append to ($2
		// and $3, the ids and namespaces of those whose change the
		// counters' upsert counted). The traces are found first, so that
		// the counters are reached through their primary key.
		countInvalidated: "UPDATE " + traces + " t SET version = t.version + 1" +
			" FROM (SELECT DISTINCT r.namespace, r.trace_id FROM " + records + " r WHERE r.id = ANY ($1::text[])) AS x" +
			" WHERE t.namespace = x.namespace AND t.trace_id = x.trace_id" +
			" AND NOT EXISTS (SELECT 1 FROM unnest($2::text[], $3::text[]) AS a(trace_id, ns) WHERE a.trace_id = x.trace_id AND a.ns = x.namespace)",
		// Last in the batch: the state is stored with the version the
		// batch left. A trace that holds no record (a counter the batch's
		// condition created) keeps no state.
		setState: "UPDATE " + traces + " SET state = $2, state_version = version WHERE trace_id = $1 AND namespace = $3 AND n > 0",
		// A state is derived from the trace at one version ($2): it is
		// refused if any other change reached the trace since (the batch
		// itself counted one).
		// $1 is of namespace $5; $3 and $6 are the ids and namespaces of
		// the traces the batch appends to, $4 the ids whose status it
		// changes: whether the batch counted a change of $1.
		checkVersion: "WITH b AS (SELECT CASE WHEN EXISTS (SELECT 1 FROM unnest($3::text[], $6::text[]) AS a(trace_id, ns) WHERE a.trace_id = $1 AND a.ns = $5)" +
			" OR EXISTS (SELECT 1 FROM " + records + " r WHERE r.id = ANY ($4::text[]) AND r.trace_id = $1 AND r.namespace = $5) THEN 1 ELSE 0 END AS own)" +
			" SELECT " + require + "(version = $2::bigint + b.own, '" + codeConflict + "'," +
			" format('trace %L is at version %s, not %s', $1::text, version - b.own, $2::bigint)) FROM " + traces + ", b WHERE trace_id = $1 AND namespace = $5 AND n > 0",
		// The batch's condition on the persistent constraints of namespace
		// $1: their counter is still $2. The share lock holds off a
		// concurrent change of the counter until this batch commits.
		checkShared: "WITH c AS (SELECT shared FROM " + namespaces + " WHERE namespace = $1 FOR SHARE)" +
			" SELECT " + require + "(coalesce((SELECT shared FROM c), 0) = $2::bigint, '" + codeConflict + "'," +
			" format('the persistent constraints of namespace %L changed (%s, not %s)', $1::text, coalesce((SELECT shared FROM c), 0), $2::bigint))",
		// One row whether or not the trace exists (an unknown trace reads
		// as zeros and a NULL state), with the counter of namespace $2 (0
		// without a row).
		readState: "SELECT coalesce(t.n, 0), CASE WHEN t.n > 0 THEN t.namespace ELSE '' END, coalesce(t.version, 0), coalesce(t.state_version, 0), t.state," +
			" coalesce((SELECT shared FROM " + namespaces + " WHERE namespace = $2), 0)" +
			" FROM (VALUES (1)) AS one LEFT JOIN " + traces + " t ON t.trace_id = $1 AND t.namespace = $2",
		// One change for each namespace whose persistent constraints the
		// batch appends to ($1, known before the batch is sent) or changes
		// the status of (among the ids $2, found after the status changes),
		// once however many of them the batch touches. The rows are locked
		// in sorted order, so that two batches never wait for each other in
		// opposite orders.
		// The records are found by id, and their slot and scope tested in
		// a CASE: as a condition, they would match the partial index of
		// persistent records, which the server may then read whole.
		share: "INSERT INTO " + namespaces + " AS c (namespace, shared)" +
			" SELECT ns, 1 FROM (SELECT unnest($1::text[]) UNION SELECT CASE WHEN r.slot = '" + string(blackboard.Constraints) +
			"' AND r.scope = '" + string(blackboard.ScopePersistent) + "' THEN r.namespace END FROM " + records + " r" +
			" WHERE r.id = ANY ($2::text[])) AS x(ns) WHERE ns IS NOT NULL" +
			" ORDER BY ns ON CONFLICT (namespace) DO UPDATE SET shared = c.shared + 1",
		// The position is the trace's counter, already advanced past the
		// batch's appends, less the appends to the trace that follow. The
		// append is the next event of the trace's chain (h, on the row the
		// batch's first statement locked): $20 is chain.LinkPrefix, $21
		// the record's digest.
		insert: "WITH h AS (UPDATE " + traces + " t SET events = t.events + 1, head = " + next("$20", "$21") +
			" WHERE t.trace_id = $2 AND t.namespace = $18 RETURNING t.n, t.events - 1 AS seq, t.head)" +
			" INSERT INTO " + records + " (id, trace_id, pos, slot, mode, kind, payload, role, writer, ts_ms," +
			" input_refs, confidence, ttl_ms, evidence_refs, status, reason, scope, namespace, span, link, link_seq) VALUES" +
			" ($1, $2, (SELECT n FROM h) - $3, $4, $5, $6, $7, $8, $9, $10," +
			" $11, $12, $13, $14, $15, $16, $17, $18, $19, (SELECT head FROM h), (SELECT seq FROM h)) RETURNING link",
		// A trace's events in order: each row gives its append event (the
		// record as appended: ACTIVE with its reason then, when its status
		// changed since) and, when its status changed, that event. A row
		// without a link gives no append event (VerifyTrace finds its
		// record unchained). A status event carries no payload.
		chain: "SELECT e.seq, e.changed, r.id, r.trace_id, r.slot, r.mode, r.kind," +
			" CASE WHEN e.changed THEN '{}'::jsonb ELSE r.payload END, r.role, r.writer, r.ts_ms, r.input_refs, r.confidence, r.ttl_ms," +
			" r.evidence_refs, e.status, e.reason, r.scope, r.namespace, r.span, e.link FROM " + records + " r CROSS JOIN LATERAL (VALUES" +
			" (r.link_seq, false, CASE WHEN r.end_seq IS NULL THEN r.status ELSE '" + string(blackboard.StatusActive) + "' END," +
			" CASE WHEN r.end_seq IS NULL THEN r.reason ELSE coalesce(r.born_reason, '') END, r.link)," +
			" (r.end_seq, true, r.status, r.reason, r.end_link)) AS e(seq, changed, status, reason, link)" +
			" WHERE r.trace_id = $1 AND r.namespace = $2 AND e.seq IS NOT NULL ORDER BY e.seq, e.changed, r.pos",
		head:  "SELECT events, head, migrated FROM " + traces + " WHERE trace_id = $1 AND namespace = $2",
		claim: "INSERT INTO " + keys + " (namespace, key, record_id) VALUES ($1, $2, $3)",
		// The inspector's listing: a pass over the records, grouped by
		// trace (a namespace and an id), in the order of each trace's first
		// append.
		traces: "SELECT trace_id, namespace, count(*), min(ts_ms), max(ts_ms) FROM " + records +
			" WHERE ($1 = '' OR namespace = $1) GROUP BY trace_id, namespace ORDER BY min(seq)",
	}
}

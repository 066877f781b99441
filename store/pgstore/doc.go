// Package pgstore is a [store.Store] on PostgreSQL, through
// github.com/jackc/pgx/v5 and its connection pool. Any number of kernels,
// in any number of processes on any number of machines, can share one
// database: the store orders their writes so that every kernel decision
// holds across all of them.
//
// [Open] connects to the database a DSN names and owns the pool; [New]
// uses a pool the caller opened and leaves it open on [Store.Close]. The
// store's tables live in one schema: the one [WithSchema] names (created
// if missing), else the connection's current schema. Either way the
// schema is created or migrated on open (see Schema versions), and every
// call takes a context whose deadline and cancellation it honours.
//
// [Store] is a [store.Store], a [store.StateStore] and a [store.Chainer]
// (see Hash chains). It passes the
// conformance suite of store/storetest and decides exactly as [memstore.Store]
// does (the kernel's TestStoreEquivalence).
//
// # Records
//
// Records live in the table bk_records, one row each, in append order:
// seq numbers them across the store, pos within their trace. The payload
// is JSONB, the reference lists text arrays (NULL for a nil list), the
// enumerations their stable names. A record appended with an empty
// namespace is stored, and reads back, as [blackboard.DefaultNamespace].
//
// Payloads read back in the kernel's normal form (numbers float64, lists
// []any, objects map[string]any), every float64 exactly: JSONB keeps
// numbers as exact decimals, and encoding/json writes the shortest decimal
// that reads back as the same float64. JSONB does not keep the order of an
// object's keys (a map has none) nor the sign of zero: -0 reads back as 0,
// which compares equal.
//
// A record is checked with [store.Batch.Check] and refused rather than
// altered when it fails: invalid UTF-8 in any string field or reference,
// or a TTL beyond [store.MaxTTL] ([blackboard.ErrInvalidInput]), invalid
// UTF-8 in a payload string or key ([blackboard.ErrInvalidPayload]). So is what
// PostgreSQL cannot hold unchanged: a NUL character, which no PostgreSQL
// text or JSONB string can contain ([blackboard.ErrInvalidInput] in a field or
// reference, [blackboard.ErrInvalidPayload] in the payload), a NaN confidence
// or an unknown role ([blackboard.ErrInvalidInput]), a payload value JSON
// cannot encode ([blackboard.ErrInvalidPayload]). A lookup by a string no
// record can hold (a NUL, invalid UTF-8) finds nothing.
//
// # Batches, traces and concurrency
//
// Every write is an [Store.Apply] of a batch (a single record or status
// change is a batch of one), and every batch is one round trip:
// its statements go to the server in one pipeline, which the server runs
// as one implicit transaction. The first statement that fails rolls all of
// it back; the transaction commits at the end of the pipeline.
//
// The table bk_traces counts each trace's records; a trace is its
// namespace and its id. A batch's first
// statement adds the batch's appends to the counters of the traces it
// appends to, and locks them (and the counter of the trace its condition
// names, [store.Batch.Trace]), in sorted order, until it commits. That
// row lock orders the writers of one trace across every process, gives
// each appended record its position, and makes the condition exact: the
// batch is refused with [blackboard.ErrConflict] unless its trace holds
// exactly TraceLen records, and no other writer can change that before
// the batch commits. Writers of different traces never wait for each
// other, except that a batch that changes the status of a record of a
// trace it does not append to also locks that trace's row, after the
// others: two such batches can deadlock, and the server aborts one, which
// the store runs again.
//
// The same row keeps the trace's change counter and decision state (see
// [store.StateStore]): the counter grows by one for every batch that
// appends to the trace or changes the status of one of its records, in
// that batch's transaction, and a batch with a [store.Batch.State] stores
// the state's encoding (MarshalBinary, called before anything is sent; an
// encoder that fails refuses the batch with [blackboard.ErrInvalidInput]) with
// the counter the batch left, as the pipeline's last statement.
// The table bk_namespaces holds, per namespace, the change counter of its
// persistent constraints ([store.TraceState.Shared]): a batch that
// appends a record of slot constraints and scope persistent in the
// namespace, or changes the status of one, adds one to it with a statement
// of its pipeline, however many such records it touches; the row lock
// orders those batches. A namespace without a row is at 0.
// [Store.ReadState] reads the trace's row and the namespace's counter with
// one query, in one round trip. This holds at the server's default
// isolation level, READ
// COMMITTED, without retries; under REPEATABLE READ or SERIALIZABLE (a
// server configured so, or a PostgreSQL-compatible database that only
// offers SERIALIZABLE) the server aborts some batches with a serialization
// failure, and the store runs them again (see [WithRetries]).
//
// A batch's status changes run before its appends, so a batch cannot
// invalidate a record it appends (that is [blackboard.ErrNotFound], as in
// [memstore.Store]). A status change that finds no ACTIVE record, a
// duplicate id (the unique index on the id) and a once-key already claimed
// (see below) fail the batch like a failed condition.
//
// Reads are single statements through the indexes of the Schema section,
// so a decision's reads cost the same however many other traces the store
// holds. Listings read a page of rows at a time and hold no connection
// while they yield, so the loop body may call any method of the store;
// [Store.Chain] is the exception: it streams one query and holds a
// connection until its loop ends.
// [Store.ListTrace] lists a trace in the order its records were appended.
// [Store.ListSlot] lists in the store's append order; records appended by
// batches that commit while it runs may or may not be listed.
//
// # Hash chains
//
// Every trace's history is a hash chain (package chain): each append and
// each status change is an event whose link commits to its content, its
// position and every event before it. [Store.Apply] extends the chains
// in its pipeline, with no round trip of its own: the client computes each
// event's content digest (the record as stored, or the status change),
// and the statement that already makes the change (the insert, the status
// change) also advances its trace's row in bk_traces, its event count and
// head, computing the link with the server's sha256 from the head it
// finds there. The batch's first statement holds the rows of the traces
// it appends to; a status change takes its trace's row in its own
// statement. So a trace's events are numbered in the order its batches
// commit, and a batch that rolls back leaves no event. A batch's status
// changes are events before its appends, as they run before them.
//
// A record's row keeps its append event (link_seq, link) and, once its
// status changed (once at most: only an ACTIVE record changes), that
// event too (end_seq, end_link) with the reason the record was appended
// with (born_reason). [Store.Chain] reads a trace's events back with one
// query through the trace index, streamed, and [Store.Head] the trace's
// row. The chain proves what was written through the store: an edit of a
// stored row, a deleted, reordered or moved record, or a tail cut short of
// the recorded head fails [store.VerifyTrace]. A tail cut and the head
// rewritten to match is caught only against a checkpoint (see package
// chain).
//
// # Once-keys
//
// Claimed keys live in the table bk_once_keys, whose primary key is the
// namespace and the key (each namespace is a key space of its own), and a
// batch's claims are inserted in the batch's transaction: a
// claim of a key already claimed fails that insert, the whole batch rolls
// back, and Apply returns an error wrapping [blackboard.ErrDuplicateKey]. Since
// the database enforces it, a key is claimed at most once however many
// stores and processes share the database.
//
// # Schema versions
//
// The table bk_schema holds the schema version, 7 for this
// package. Opening a schema at that version only reads it, so a role
// without the right to create tables can use a schema an administrator
// migrated. Otherwise the store migrates it in one transaction that first
// takes a transaction-level advisory lock (keyed by the schema's name):
// processes that open a new database at once migrate it once between them,
// and a migration interrupted halfway rolls back whole. A schema written
// by a newer version of the package is refused with [ErrSchemaTooNew].
//
// Version 1 holds bk_records with its indexes (bk_records_id for Get and
// status changes, bk_records_trace for ListTrace, bk_records_kind for
// FindActive, bk_records_slot for ListSlot across traces, and two partial
// indexes of persistent records for the persistent listings the kernel
// runs on every gated decision), bk_traces, bk_once_keys and bk_require,
// the assertion a batch uses to fail. No index holds a record's status or
// reason, the only columns that change, so a status change can be a
// heap-only update. Version 2 adds each record's span and each trace
// counter's namespace. Version 3 keys bk_once_keys by namespace and key; a
// claim of an earlier version goes to the namespace of the record that
// claimed it. Version 4 adds each trace's change counter and state to
// bk_traces; a trace of an earlier version starts with its record count as
// its change counter and no state. Version 5 adds bk_namespaces; every
// namespace of an earlier version starts at 0. Version 6 names a trace by
// its namespace and id: bk_traces is keyed by (namespace, trace_id), and a
// trace's positions and the FindActive index by namespace too, so one trace
// id in two namespaces is two traces; every trace of an earlier version
// (which held one namespace's records) keeps its counters and state, and a
// counter a condition alone made, for a trace without records, goes.
// Version 7 adds the hash chains: each record's events and each trace's
// event count, head and migrated count. Migrating to it chains the records
// already held, per trace in position order, each as an append event of
// the record as it then is (its current status and reason), and records
// that count as the trace's migrated events ([chain.Head.Migrated]): their
// content and order are proven from then on, their history before is not.
// It reads and updates the records a batch at a time, in the migration's
// transaction.
//
// # Errors
//
// Errors wrap the kernel's sentinels where they apply, so code written
// against [store.Store] branches the same way on every store. A call that
// cannot reach the server returns an error wrapping [ErrUnreachable]; one
// whose transaction the server kept aborting, [ErrSerialization] (which
// wraps [blackboard.ErrConflict]); one whose context ends, the context's error.
// Reads, and writes that failed before anything could have committed (no
// connection, a session the server ended, a serialization failure), are
// run again, up to [WithRetries] times. A write whose connection was lost
// after its pipeline was sent may or may not have landed; its error says
// so, and a retry by the caller meets [store.ErrDuplicateID] or
// [blackboard.ErrConflict] if it did. A call whose context ends while the
// server runs it is cancelled on the server (see [ConfigurePool], which
// [Open] applies): a batch waiting for a busy trace when its deadline
// passes rolls back and returns the context's error.
//
// After [Store.Close] every method returns an error wrapping
// [blackboard.ErrClosed]. Close waits for the calls in progress.
package pgstore

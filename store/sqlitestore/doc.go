// Package sqlitestore is a [store.Store] on SQLite through
// modernc.org/sqlite, a pure-Go driver (no cgo). A blackboard kept in a
// file survives restarts, and several kernels, in one process or many, can
// share it.
//
// [Open] opens a file (or ":memory:") and owns the database; [New] wraps a
// *sql.DB the caller opened with the "sqlite" driver and leaves it open on
// [Store.Close]. Either way the schema is created or migrated on open: the
// database's PRAGMA user_version counts the migrations applied, and a
// database from a newer version of the package is refused with
// [ErrSchemaTooNew].
//
// Records live in one table in append order, one row each, with the
// payload and reference lists as JSON and enumerations by their stable
// names. A record's namespace is a column of its own; a record appended
// with an empty namespace is stored, and reads back, as
// [blackboard.DefaultNamespace]. Every query the kernel runs on its hot path
// (Get, FindActive, ListTrace, ListSlot of a namespace's active persistent
// records, and ClaimedBy) is answered through an index, so its cost does
// not grow with the number of other traces. Payloads read back in the
// kernel's normal form: numbers float64, lists []any, objects
// map[string]any.
//
// A record is checked with [store.Batch.Check] and refused rather than
// altered when it fails: invalid UTF-8 in any string field or reference, or
// a TTL beyond [store.MaxTTL] ([blackboard.ErrInvalidInput]), invalid UTF-8 in
// a payload string or key ([blackboard.ErrInvalidPayload]). So is what the JSON
// encoding cannot hold unchanged: a NaN confidence or an unknown role
// ([blackboard.ErrInvalidInput]), a payload value JSON cannot encode
// ([blackboard.ErrInvalidPayload]).
//
// # Traces and their state
//
// [Store] is a [store.StateStore]. The table traces holds one row per
// trace, a namespace and an id: its record count, its change counter and the
// decision state the kernel last stored for it. Every batch updates the
// rows of the traces it appends to or changes a status in, in its own
// transaction: the count grows by the batch's appends and the change
// counter by one, however many records of the trace the batch touches. A
// batch with a [store.Batch.State] stores the state's encoding
// (MarshalBinary, called before the transaction; an encoder that fails
// refuses the batch with [blackboard.ErrInvalidInput]) with the change counter
// the batch left. [Store.ReadState] reads a trace's row with one
// primary-key lookup, so reading a trace's state costs the same at its
// first record and at its millionth; the record count is also what a
// conditional batch ([store.Batch.Trace]) is checked against
// ([store.TraceState.Len]).
//
// The table namespaces holds, per namespace, the change counter of its
// persistent constraints ([store.TraceState.Shared]): a batch that
// appends a record of slot constraints and scope persistent in the
// namespace, or changes the status of one, adds one to it in its own
// transaction, however many such records it touches. A namespace without
// a row is at 0. [Store.ReadState] reads it in the same query as the
// trace's row, for an unknown trace too.
//
// # Hash chains
//
// [Store] is a [store.Chainer]: every trace's history is a hash chain
// (package chain), extended in the transaction of every batch that
// touches the trace. A record changes status at most once, so its row
// holds both of its events: the link and position of the event that
// appended it, and, once its status changed, the position and link of
// that change and the reason it was appended with (the row's reason is
// the new one). The trace's row holds the chain's length and last link
// beside its counters. A batch reads each trace's head once (with its
// first status change in the trace, or with the counters' bump of a
// trace it only appends to), links its status changes, then its appends,
// in the batch's order, and writes the head back with the counters: one
// more statement per status change (its link) and, for a trace the batch
// only appends to, one per trace (its head). Content digests are
// computed before the transaction; only the links, which need the head,
// are computed while it holds the write lock.
//
// [Store.Head] reads a trace's row; [Store.Chain] merges the trace's
// appends, read through the trace index in append order, with its status
// changes, read through an index of the records whose status changed, a
// page of each at a time, so a walk costs the trace's length whatever
// the store holds. [store.VerifyTrace] checks a trace with them. What a
// chain proves, and the limit a checkpoint lifts (a cut tail whose head
// was rewritten to match), are package chain's.
//
// # Once-keys
//
// Claimed keys live in a table of their own whose primary key is the
// namespace and the key (each namespace is a key space of its own), and a
// batch's claims are inserted in the batch's transaction: a claim of a key
// already claimed fails that insert, the whole batch rolls back, and Apply
// returns an error wrapping [blackboard.ErrDuplicateKey]. Since the database enforces it, a key is
// claimed at most once however many stores and processes share the file.
//
// # Schema versions
//
// Version 1 holds the records table. Version 2 adds the namespace column
// (existing records get [blackboard.DefaultNamespace]), an index of persistent
// records by slot, status and namespace, and the once-keys table. Version
// 3 adds each record's span. Version 4 keys the once-keys table by
// namespace and key; a claim of an earlier version goes to the namespace of
// the record that claimed it. Version 5 adds the traces table; a trace of
// an earlier version is counted from its records, its change counter
// starts at its record count, and it holds no state. Version 6 adds the
// namespaces table; every namespace of an earlier version starts at 0.
// Version 7 keys the traces table by namespace and trace id, so one trace
// id in two namespaces is two traces; every trace of an earlier version
// (which held one namespace's records) keeps its row. Version 8 adds the
// hash chains: the migration chains, in its transaction, the records each
// trace holds, in append order, each as an append with the status and
// reason it has then (their earlier history was not kept, so it cannot be
// proven), and records in the trace's row how many events that was
// ([chain.Head.Migrated]); a record it cannot read fails the migration,
// which then leaves the file as it was. A database of any
// earlier version is migrated when a writer opens it (to version 8, the
// one this package writes); from then on an earlier
// version of the package refuses it with its ErrSchemaTooNew.
//
// # Concurrency
//
// A [Store] is safe for concurrent use by many goroutines. Every write is
// a [Store.Apply] of a batch (a single record is a batch of one), and each
// is one SQLite write transaction,
// rolled back on any error; the writers of one Store take turns, and
// writers of different Stores or processes on the same file wait for each
// other up to the busy timeout ([WithBusyTimeout]). Readers run in
// parallel with the writer (WAL mode). Listings read a page of rows at a
// time and hold no connection, lock or transaction while they yield, so
// the loop body may call any method of the store. Close waits for the
// operations in progress.
//
// A method called with a context that is already done returns the
// context's error and changes nothing; a context that ends during a write
// rolls the write back.
package sqlitestore

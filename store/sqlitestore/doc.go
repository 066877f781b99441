// Package sqlitestore is a [kernel.Store] on SQLite through
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
// [kernel.DefaultNamespace]. Every query the kernel runs on its hot path
// (Get, FindActive, ListTrace, ListSlot of a namespace's active persistent
// records, and ClaimedBy) is answered through an index, so its cost does
// not grow with the number of other traces. Payloads read back in the
// kernel's normal form: numbers float64, lists []any, objects
// map[string]any.
//
// A record is checked with [kernel.CheckRecord] and refused rather than
// altered when it fails: invalid UTF-8 in any string field or reference, or
// a TTL beyond [kernel.MaxTTL] ([kernel.ErrInvalidInput]), invalid UTF-8 in
// a payload string or key ([kernel.ErrInvalidPayload]). So is what the JSON
// encoding cannot hold unchanged: a NaN confidence or an unknown role
// ([kernel.ErrInvalidInput]), a payload value JSON cannot encode
// ([kernel.ErrInvalidPayload]).
//
// # Once-keys
//
// [Store] is a [kernel.KeyStore]. Claimed keys live in a table of their
// own whose primary key is the namespace and the key (each namespace is a
// key space of its own), and a batch's claims are inserted in
// the batch's transaction: a claim of a key already claimed fails that
// insert, the whole batch rolls back, and Apply returns an error wrapping
// [kernel.ErrDuplicateKey]. Since the database enforces it, a key is
// claimed at most once however many stores and processes share the file.
//
// # Schema versions
//
// Version 1 holds the records table. Version 2 adds the namespace column
// (existing records get [kernel.DefaultNamespace]), an index of persistent
// records by slot, status and namespace, and the once-keys table. Version
// 3 adds each record's span. Version 4 keys the once-keys table by
// namespace and key; a claim of an earlier version goes to the namespace of
// the record that claimed it. A
// version-1 database is migrated when it is opened; from then on a version
// of the package that knows only version 1 refuses it with its
// ErrSchemaTooNew.
//
// # Concurrency
//
// A [Store] is safe for concurrent use by many goroutines. Each [Store.Apply]
// (and so each Append and Invalidate) is one SQLite write transaction,
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

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
// names. Every query the kernel runs on its hot path (Get, FindActive,
// ListTrace, and ListSlot of active persistent records) is answered
// through an index, so its cost does not grow with the number of other
// traces. Payloads read back in the kernel's normal form: numbers float64,
// lists []any, objects map[string]any.
//
// A record the JSON encoding cannot hold unchanged is refused rather than
// altered: a string that is not valid UTF-8 ([kernel.ErrInvalidPayload]), a
// NaN confidence or an unknown role ([kernel.ErrInvalidInput]).
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

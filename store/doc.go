// Package store is the contract a store of blackboard records implements,
// as database/sql/driver is to database/sql: the [Store] interface, the
// atomic [Batch] that is its one write, the optional interfaces a store may
// implement ([StateStore], [TraceLister], [Chainer]), the errors it returns, and the
// checks every store runs so that all of them refuse the same input alike
// ([Batch.Check], [CheckFilter]), the longest TTL a record may carry ([MaxTTL]) and the
// form of the ids the kernel gives its records ([RecordID], read back by
// [SplitRecordID]). The records themselves and their vocabulary are package
// blackboard's.
//
// An integrator never imports this package: it opens a store
// (store/memstore, store/sqlitestore, store/pgstore) and hands it to the
// kernel. A store implementer imports it, and blackboard for the
// vocabulary, and runs the conformance suite of store/storetest against
// its store.
//
// A [Store] holds only what the kernel calls: reads by id, kind, trace and
// slot, the claimed once-keys, Close, and one write, Apply, of an atomic
// conditional [Batch] of appends, status changes ([Invalidation]) and
// once-key [Claim]s (a single record is a one-record batch). Every ability
// beyond it is an optional interface any store may implement, found by
// asserting it: [StateStore] keeps each trace's decision state beside its
// records, so that a decision reads one value instead of the trace;
// [TraceLister] lists traces from an index ([ListTraces] falls back to a
// pass over the store without it); [Chainer] keeps each trace's hash chain
// (package chain), which [VerifyTrace] walks.
package store

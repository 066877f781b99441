// Package blackboard holds what the kernel and its stores share: the
// records of the blackboard and their vocabulary, and the contract a store
// implements, kept apart from the kernel's user API as database/sql/driver
// is from database/sql.
//
// # Records
//
// The blackboard has seven typed slots ([Slot]): [Percepts] (raw
// observations), [Beliefs], [Constraints], [Plans], [Evidence],
// [Predictions] and [Actions]. Each entry is a [Record]: an id, a slot, a
// [Mode] (propose or commit), a kind, a JSON-compatible [Payload],
// [Provenance] (writer, role, trace, time, input refs, optional confidence
// and TTL), evidence refs, a [Status], a [Scope] and a namespace. Records
// are append-only: the only change a record ever sees is its status moving
// from [StatusActive] to [StatusInvalidated] or [StatusExpired], with a
// [Code] saying why. Codes are the reasons every decision and status change
// gives; compare them with ==.
//
// # The store contract
//
// A [Store] holds only what the kernel calls: reads by id, kind, trace
// and slot, the claimed once-keys, Close, and one write, Apply, of an
// atomic conditional [Batch] of appends, status changes ([Invalidation])
// and once-key [Claim]s (a single record is a one-record batch). Every
// ability beyond it is an exported optional interface any store may
// implement, found by asserting it: [StateStore] keeps each trace's
// decision state beside its records, so that a decision reads one value
// instead of the trace; [TraceLister] lists traces from an index. [CheckRecord],
// [Batch.CheckRecords], [CheckClaim], [CheckInvalidation] and
// [CheckFilter] are the checks every store runs, so that all stores refuse
// the same input with the same error.
//
// The package blackboard/storetest is the conformance suite every store
// passes. The stores of this module are store/memstore (the kernel's
// default), store/sqlitestore and store/pgstore.
package blackboard

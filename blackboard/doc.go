// Package blackboard is the vocabulary of the blackboard: its records
// and their slots, modes, statuses, scopes and roles, the reason codes of
// every decision, payloads and record ids, and the errors the kernel and
// its stores return. An integrator imports it beside the kernel; the
// contract a store implements is package store, kept apart from it as
// database/sql/driver is from database/sql, so that an integrator never
// needs it.
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
// [reason.Code] saying why. Codes are the reasons every decision and status change
// gives; compare them with ==.
//
// Slot, Mode, Status, Scope and Role are strings whose values are the
// names records, stores and rules spell them with ("percepts", "commit",
// "ACTIVE", ...), so a record's JSON is its Go value. Their zero value ""
// is invalid. Decoding accepts any text: whatever reads one from outside
// checks it (with Valid; a status against the three), as the stores and
// the kernel do.
//
// # Stores
//
// The stores of this module are store/memstore (the kernel's default),
// store/sqlitestore and store/pgstore; each implements the contract of
// package store and passes its conformance suite, store/storetest.
package blackboard

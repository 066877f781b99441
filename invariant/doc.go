// Package invariant checks, from a store's records alone, what the kernel
// and the tool gate promise about every governed call. [Check] reads any
// [store.Store] (memory, SQLite, PostgreSQL, a copy taken for an
// audit) and returns every breach it finds as a [Violation] naming the
// invariant, the trace and the record:
//
//   - `effect_action`: every effect the gate recorded as run (an attempt,
//     a success or a failure after an attempt) is for a committed action
//     of its tool's action type, in its trace, before it, that the gate
//     itself decided (a decision record about it).
//   - `effect_grounding`: every action the kernel committed (so every
//     action an effect ran for) rests on a committed belief of each kind
//     it requires, and those beliefs, and the observations their
//     validation artifacts checked, were the current ones of their kind
//     when it committed: no record of the same slot and kind was appended
//     to the trace between them and the commit.
//   - `once_holder`: every once-key of a tool's action type is held by an
//     action the gate decided, that ran or may still run.
//   - `approval_binding`: an action that waited for approval ran under an
//     approval of it that approved the digest of its committed arguments,
//     and no approval let two actions run.
//   - `masked_value`: every value of a field a tool masks (its policy
//     snapshot's Masked) is a keyed hash wherever a record holds it.
//   - `derived_source`: a belief a tool derives names the one result it
//     was computed from (depends_on and its input refs), a result of that
//     tool, and rests on that result alone; no one else proposes a kind a
//     tool derives.
//   - `scope_held`: every action an effect ran for was decided under a
//     recorded policy snapshot in which each effectful tool declares a
//     scope or none (Unscoped); when its tool has a scope, or its decision
//     names a request or a principal, its trace holds one request record
//     of the kernel's, the one its decision names, appended before it and
//     holding the trace's request once-key; its scoped arguments lie
//     within that request (the principal, or one of the resources of the
//     scope's type) and the principal its decision names is the request's.
//   - `chain_intact`: in a store that keeps hash chains
//     ([store.Chainer]), every trace's chain holds (package chain): each
//     event's link matches its content, its position and the link before
//     it, the chain reaches the head the store recorded and the latest
//     head a checkpoint names, every listed record was appended by its
//     chain with the status the chain gave it last, the checkpoints of
//     each namespace follow one another, and no trace a checkpoint names
//     is gone. Check is given no key: the checkpoints' signatures are
//     checked by `bk verify --key`.
//
// The checks read each trace once, in order, and look up by id only the
// records a trace names in another trace, the once-keys the actions name
// and each trace's request once-key: the cost is linear in the store's
// size. The package invariant/invarianttest runs Check from a test and
// fails it on any violation.
package invariant

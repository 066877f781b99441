// Package storetest is the conformance suite every [store.Store] must pass,
// in the manner of testing/slogtest and hashicorp/raft's store tests. It
// drives a store only through the Store interface and the optional
// interfaces it implements: every write is an Apply (a record alone is a
// one-record batch, a status change a batch with one invalidation).
//
// A store's own test file runs the whole suite with one call:
//
//	func TestStoreConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			s, err := mystore.Open(t.Context(), filepath.Join(t.TempDir(), "bk.db"))
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// [Run] gives every case a fresh store from the factory and closes it with
// t.Cleanup; a failure message names the contract that broke (the
// package's own tests run the cases on memory stores broken one contract
// at a time, and require each to fail). The cases
// cover the whole [store.Store] contract: exact round trips of every record
// field, append-only ids, typed errors for malformed input (invalid UTF-8
// in any string, a TTL beyond [store.MaxTTL]), status changes, FindActive,
// ListTrace isolation, ListSlot filters, namespaces (an empty one kept as
// [blackboard.DefaultNamespace], Filter.Namespace), atomic batches, concurrent
// writers racing for one id or one status change, cancelled contexts and
// closing. The kernel's own scenarios on a store (a commit the store
// refuses leaves no evidence artifact without its belief; the kernel
// decides alike on a store, on wrappers around it and on the memory store)
// are the kernel's tests (kernel/storeflow_*_test.go), run on every store
// of the module; the gate's sessions are toolgate's
// (toolgate/storeflow_test.go). The suite imports only package store and
// the blackboard vocabulary.
//
// Once-keys ([store.Batch.Claims]), which every store enforces: a claim
// lands with its batch, a second claim of a key (or one key twice in a
// batch) is refused with [blackboard.ErrDuplicateKey] and lands nothing of its
// batch, each namespace is a key space of its own, and of goroutines racing
// for one key exactly one wins.
//
// The per-trace state ([store.StateStore], optional) is tested on a store
// that implements it: Version grows by exactly one per batch for every
// trace the batch appends to or changes a status in (a trace other than
// the batch's condition included) and for no other, from concurrent
// writers too; Len and Namespace are the trace's; a batch with a State
// stores it with StateVersion equal to Version, and a later write without
// one leaves StateVersion behind; the state reads back as stored (Value
// from a store that keeps values, Data equal to MarshalBinary's bytes from
// one that persists them); a batch refused for any reason (a stale
// condition, a duplicate id or key, a status change of a record that is
// not active and, on a store that persists bytes, a state that cannot be
// encoded) changes no counter and no state; ReadState honours cancelled
// contexts and Close. Shared, the change counter of a namespace's
// persistent constraints, grows by exactly one per batch that appends a
// persistent constraint of the namespace or changes the status of one,
// from concurrent writers too, and for no other write (another
// namespace's constraints, constraints of episode scope, persistent
// records of other slots, a refused batch); ReadState reads it for the
// namespace asked about (empty: the default one), through any trace, an
// unknown one included. The cases skip on any other store.
//
// Trace listing ([store.TraceLister], optional) is tested on a store that
// implements it: every trace once, in the order of its first append, with
// its namespace, record count and time span, filtered by namespace, in
// agreement with the fallback of [store.ListTraces]; the case skips on
// any other store, which the inspector then reads through that fallback.
//
// [Bench] shares benchmarks the same way: every store measures the same
// operations on a store that already holds records of other traces
// ([Prefill] puts them there).
//
// # Contract beyond the interface
//
// Besides what [store.Store] documents, the suite holds stores to two
// rules the kernel relies on: a listing's yield function may call back into
// the store (read, write or list) without deadlock, and a batch is checked
// against the store as it stood before the batch, so a batch cannot
// invalidate a record it appends itself.
//
// # Concurrency
//
// [Run] and [Bench] call the factory from the test's goroutine. Some cases
// use the store from many goroutines at once, as the contract allows.
package storetest

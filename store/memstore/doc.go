// Package memstore is the in-memory [store.Store]: the store a kernel
// uses when it is given none, and the fastest one for tests, simulations
// and single-process agents whose records need not outlive the process.
//
// It implements [store.StateStore] and [store.TraceLister], so
// a decision reads one trace's state rather than its records, and
// [store.Chainer]: every append and status change extends its trace's
// hash chain (package chain) in the same Apply, its content digests
// computed before the store's lock. It passes the conformance suite
// (store/storetest).
package memstore

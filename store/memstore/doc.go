// Package memstore is the in-memory [blackboard.Store]: the store a kernel
// uses when it is given none, and the fastest one for tests, simulations
// and single-process agents whose records need not outlive the process.
//
// It implements [blackboard.StateStore] and [blackboard.TraceLister], so
// a decision reads one trace's state rather than its records, and passes
// the conformance suite (blackboard/storetest).
package memstore

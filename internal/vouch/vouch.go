// Package vouch carries the kernel's word, within this module, that it has
// built and checked a batch itself, so that a store need not run the
// stateless checks of [blackboard.Batch.CheckRecords] on it a second time.
// Code outside the module cannot import this package, so it can neither
// set a [Mark] nor make one: no other caller can have a batch skip a
// store's checks.
package vouch

// Mark is the kernel's vouch for a batch. Its zero value vouches for
// nothing; only [Set] changes it.
type Mark struct{ kernel bool }

// Set makes m the kernel's vouch.
func Set(m *Mark) { m.kernel = true }

// Vouched reports whether m is the kernel's vouch.
func Vouched(m Mark) bool { return m.kernel }

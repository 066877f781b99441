// Package vouch carries the kernel's word, within this module, that it has
// built and checked a batch itself, so that a store need not run the
// stateless checks of [store.Batch.Check] on it a second time.
//
// The kernel checks every entry on the way in and builds the rest of a
// batch from checked parts; before the vouch, every store scanned the
// whole batch again. A [Mark] is a field of the batch (Batch.Vouch): its
// zero value vouches for nothing, [Set] makes it the kernel's, and
// [Vouched] is what the store's check reads. Code outside the module
// cannot import this package, so it can neither set a Mark nor make one:
// no other caller can have a batch skip a store's checks, and every other
// caller's batch is checked in full.
//
// A Mark is a plain value with no shared state: Set may be called by one
// goroutine on a Mark it owns (the kernel, on the batch it is building),
// and Vouched on any copy by any number of goroutines.
package vouch

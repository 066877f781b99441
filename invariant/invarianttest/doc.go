// Package invarianttest runs the invariant checker ([invariant.Check])
// from a test: over a store when called ([Check]), or when the test ends,
// before the store is closed ([Cleanup]). A test of any package that
// leaves a store behind calls one of them, so that every layer's promises
// are read back from the records, whatever code wrote them.
//
// Both take the test's testing.TB and are safe to call from any test
// goroutine that may call its methods; they only read the store.
package invarianttest

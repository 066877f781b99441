// Package rebuild marks the context in which the module's own tooling
// (package replay) rebuilds a tool gate from a recorded policy snapshot.
// toolgate.New then skips the checks of configurations that can never work
// (a required belief nothing derives or proposes, a binding on a percept
// kind no belief rests on, a derive nothing requires): they read the
// kernel's belief specs, reservations and action specs, which a snapshot
// does not record, and a recorded policy is history to replay, not a
// configuration to correct.
package rebuild

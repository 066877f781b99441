// Package inspect answers "why did the agent do this?" from a kernel
// store, as a library: [Explain] gives a record's provenance (the action
// or the fallback taken instead, its plan, beliefs, evidence and percepts,
// and for a refusal its root cause), and [Timeline] a trace's events in
// order, both as text for a person and as JSON for a program. They only
// read the store, so they work beside a process that writes it, on any
// [store.Store].
//
// The bk command (cmd/bk) prints the same explanations and timelines and
// adds the operator's reports (traces, stats and metrics, pending
// approvals, effects, export, replay, erase); the approvals console a
// program mounts as an [net/http.Handler] is package inspect/console.
//
// # Stored text
//
// Everything an explanation or a timeline prints from the store (a tool's
// output, a model's argument, a rule's text) is made inert first: a
// control character, a C1 control or a bidirectional control is written
// as an escape (\x1b), so what a writer stored cannot act on the
// terminal it is printed to. The JSON forms hold the text as stored, with
// those characters as \uXXXX escapes (the same JSON value).
//
// # Concurrency
//
// [Explain] and [Timeline] are safe for concurrent use as far as the store
// is; an [Explanation] or a [TimelineReport] is an immutable value.
package inspect

// Package pack is the context compiler: it compiles what a model is shown
// for one turn (a compiled context, [Pack]) from the run context ([Run]),
// the turn's own text ([Input]) and the blackboard, within a window
// measured in real tokens, and says in manifests what went in and what was
// cut.
//
// # Sections and shares
//
// The prompt is a priority stack of sections (sectionNames): critical
// signals at the top; the mission, the constraints and the policy; the
// run's progress (one line per earlier step, never a transcript), the
// evidence and the memory; the current task, the last result and the
// tools; the run controls last. Each section has a share of the window
// ([DefaultShares]: 30 % top, 35 % middle, 25 % bottom, 10 % controls);
// what a section leaves unused flows to the next, and what is left at the
// end goes back to the sections that were cut, in priority order. A
// section over its budget is cut by its own order (the oldest progress
// first, the least recent evidence and memory first); the mission and the
// constraints are never cut ([ErrWindow] when they do not fit). Above 90 %
// of the window the progress is compressed to one line and then items
// are evicted. Every cut is in the record's manifest ([Pack.Record]), with its reason:
// "over_budget", "compressed", "evicted" or "prohibited" (a tool the
// policy prohibits).
//
// # Evidence and memory
//
// The evidence is the trace's committed, active beliefs (the latest of
// each kind) and the percepts they rest on, read through a
// [kernel.Reader]: the trace's view, which names the record behind each
// committed payload ([kernel.View.ID]), then those records by id. The cost
// does not grow with the trace. Each record shown is in the manifest with its id, kind, age,
// TTL, freshness and flags; a stale, conflicted, superseded or
// invalidated record is shown with its flags in capitals and "not a
// current fact", never as one. The memory is the namespace's committed,
// persistent records.
//
// # Tokens
//
// Tokens are counted with github.com/tiktoken-go/tokenizer, a Go port of
// OpenAI's BPE tokenizer whose vocabularies (cl100k_base, o200k_base) are
// compiled into the binary: the counts are the model's own, and nothing is
// downloaded at run time. The prompt is built of units that the BPE
// pre-tokenizer never joins, so its count is the sum of the units' counts;
// the [Compiler] remembers the counts of the units it has seen, which is
// what keeps a turn's compile under a millisecond once a run's mission,
// tools and evidence have been counted.
//
// # Determinism and records
//
// Compile is a pure function of its inputs, the store's records and the
// clock: the same ones give the same [Pack.Hash]. [Pack.Record] writes
// the pack as a compiled_context evidence record through the kernel's
// Governor.
//
// # Concurrency
//
// A [Compiler] is safe for concurrent use by any number of goroutines. A
// [Pack] is a value: read it from any goroutine, change it from none.
package pack

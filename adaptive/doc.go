// Package adaptive turns failure patterns into persistent constraints
// (paper §11.2): outcome-driven constraint learning.
//
// A [Learner] counts the invalidated beliefs, plans, predictions and
// actions of the traces it analyses by their typed reason code
// ([reason.Code]; never by message text). When a code that the mapping
// knows reaches the threshold (default 2, [WithThreshold]), the learner
// queues that code's constraint and, as the orchestrator.Worker
// [Learner.Worker] returns in the next episode or through
// [Learner.Commit], commits it through its symbolic-validator
// handle in persistent scope, so that the kernel enforces it on every trace
// from then on. Each learned constraint records in its payload the code
// that triggered it (learned_from), the count (trigger_count) and the
// learner's id (learned_by).
//
// The default mapping ([DefaultMapping]) blocks the flags the kernel derives
// for every action from its own evidence chain: STALE_EVIDENCE learns
// block_stale_actions (uses_stale_data), UNRESOLVED_CONFLICT
// block_conflicted_actions (uses_conflicted_data), LOW_CONFIDENCE
// block_low_confidence_actions (uses_low_confidence_data) and
// NEGATIVE_PREDICTION block_negative_predictions (has_negative_prediction).
// Because the kernel derives those flags and refuses a proposal that sets
// them otherwise, a learned constraint bites: once block_stale_actions is
// learned, an action whose belief rests on a percept that has gone stale is
// blocked even though the belief was committed while the percept was fresh.
// [WithMapping] replaces the mapping.
//
// # Restarts
//
// [New] reads what the store already holds: the failures recorded so far
// (through the store's status index) and the persistent constraints already
// committed, so a learner started again on the same store (a SQLite file,
// say) carries on counting from there and never commits a constraint a
// second time. After that it counts incrementally: [Learner.Analyze] reads
// only the trace it is given. To count each failure once, the learner keeps
// a count per code for every trace that recorded failures: its memory grows
// with the number of such traces, not with the number of records.
//
// [Learner.Learned] lists the constraints held and [Learner.Pending]
// those queued, each a [Lesson].
//
// # Concurrency
//
// A Learner is safe for concurrent use. Committing holds the learner's lock,
// so one learner never commits a constraint twice; two learners (or two
// processes) sharing a store commit each constraint once between them:
// every commit claims the constraint's name in the namespace through a
// once-key the kernel derives ([kernel.Symbolic.CommitConstraintOnce]), and
// the learner that finds the name claimed holds the other's record (every
// [store.Store] enforces once-keys).
package adaptive

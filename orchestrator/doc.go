// Package orchestrator runs [worker.Worker] values on a trace of the
// blackboard kernel (paper §11.1): in dependency order, round after round,
// until quiescence or a round limit.
//
// An [Orchestrator] holds registered workers. [Orchestrator.Run] runs them
// on one trace and returns a [Result]: the number of rounds, a [Step] log,
// the failures ([WorkerError]) and the final view. A [Session] groups the
// episodes an agent runs, issuing a fresh trace id (a UUID) for each.
//
// # Order
//
// Within a round, a worker that writes a slot runs before every other
// worker that reads it; workers free to run go in registration order, and a
// dependency cycle is broken by running the earliest registered worker left.
// Each worker gets a view of the trace taken after the previous worker's
// step, so a reader sees what a writer produced earlier in the same round.
// Only activated workers (ShouldActivate true) step. A run stops after the
// first round in which no step reports having produced something, or at the
// round limit ([DefaultMaxRounds] unless set with [WithMaxRounds]).
//
// # Failures
//
// A worker that returns an error from Step, or panics in ShouldActivate or
// Step, is recorded as a [WorkerError] with its id, the round, the phase
// ([PhaseShouldActivate] or [PhaseStep]) and the error (wrapping [ErrPanic]
// for a panic, with the stack); the round goes on with the other workers.
// No panic escapes [Orchestrator.Run].
//
// # Concurrency
//
// [Orchestrator.Run] calls every worker from the caller's goroutine and
// starts no goroutine of its own. It checks the context before each
// worker's turn and returns the context's error once it is done; a worker
// blocked inside Step must honour the context itself. An Orchestrator and a
// Session are safe for concurrent use: several traces may run at once, with
// workers that are safe for that. [Orchestrator.Register] may be called
// while runs are in progress; a run uses the workers registered when it
// started. Workers must not modify the view they are given: it is shared by
// the workers of a round.
package orchestrator

// Package orchestrator runs [Worker] values on a trace of the
// blackboard kernel (paper §11.1): in dependency order, round after round,
// until quiescence or a round limit.
//
// An [Orchestrator] holds registered workers. [Orchestrator.Run] runs them
// on one trace and returns a [Summary]: the number of rounds, a [Step] log,
// the failures ([Error]), how the run ended ([End]) and the final view.
// An agent that runs several episodes gives each its own trace id; records
// of persistent scope, such as learned constraints, are what carries over
// from one episode to the next.
//
// Each step is handed its [StepContext] as an argument of [Worker.Step]:
// the trace and its view, and what the run grants the step (its lane's
// budget, loop guard and grant). Nothing is passed through the
// context.Context, so a grant reaches only the worker it was made to.
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
// round limit (20 unless set with [WithMaxRounds]).
//
// # Failures
//
// A worker that returns an error from Step, or panics in ShouldActivate or
// Step, is recorded as an [Error] with its id, the round, the phase
// ([PhaseShouldActivate] or [PhaseStep]) and the error (wrapping [ErrPanic]
// for a panic, with the stack); the round goes on with the other workers,
// unless the repair router is on (see Repair below).
// No panic escapes [Orchestrator.Run].
//
// # Runtime governance
//
// Options turn on a runtime around the loop; without them a run is the
// plain loop above. Everything the runtime decides is typed and recorded
// in the [Summary] ([Summary.End], [Summary.Stop], [Summary.Repairs],
// [Summary.States], [Summary.Findings]) and on the blackboard as decision
// records, through the kernel [WithKernel] gives: a run with a runtime
// option and no kernel is [ErrInvalidOption], so that no decision goes
// unrecorded.
//
// [New] and [Orchestrator.Run] take [Option]s: given to New an option sets
// the default of every run, given to Run it overrides it for that run. The
// telemetry providers are New's only ([ErrInvalidOption] in Run).
//
//   - Budgets. [WithBudget] gives each run a budget.Run named after its
//     trace; a round is counted before it starts, and a refused round ends
//     the run with [EndBudgetExceeded]. Each worker's [Lane] gets a
//     sub-run of it (its own limits, drawing on the run's), which the
//     worker reaches through [StepContext.Budget] and hands to the calls
//     it makes (an LLM agent's task, the tool gate). A worker step that
//     fails on a budget's refusal ends the run the same way.
//   - Loop guards. [WithLoopGuard] tells a guard, after each round that
//     produced something, whether the blackboard changed; rounds without
//     progress end the run with [EndLoopDetected]. Each lane gets a
//     guard of its own for its tool calls ([StepContext.Guard]).
//   - Functional state. At the start of each round the runtime measures
//     a [budget.State] from the trace's records, the run's budget and the
//     guards (the formulas are package budget's), records it in
//     [Summary.States] and shows it to the round's workers
//     ([StepContext.State]); a stop records the state it was taken in
//     ([Stop.State]). Its budget pressure is the highest of the
//     run's and its lanes'. Nothing reads it to decide anything.
//   - Grants. Each step is granted a failure.Grant of [Lane.Turns] turns
//     (1 by default, [StepContext.Grant]); the trajectory the worker
//     leaves in it is recorded with the step ([Step.Trajectory]).
//   - Findings. A worker hands its output over as a typed [Finding]
//     ([StepContext.Report]); the orchestrator checks it against the
//     lane's [FindingContract] (the zero Contract without one, in any run) and
//     refuses one that does not meet it with an [*Error] of
//     [PhaseFinding] whose Code says why (wrapping [ErrFindingRefused]). Accepted
//     findings reach later workers through [StepContext.Findings].
//
// # Repair
//
// With [WithRepair], a failed step (an error, a failure reported in a
// finding, or a refused finding) is typed with failure.Classify, routed
// with failure.RemedyFor given the attempts made in the worker's turn,
// recorded ([Repair]; a decision record of kind "worker:<id>"), and acted
// on at once:
//
//	route          action
//	fast_loop      the same worker steps again; StepContext.Repair holds its failure
//	slow_loop      the lane's slow_loop helper steps, then the worker again
//	reauth         the lane's reauth helper steps, then the worker again
//	backoff        wait the remedy's backoff (WithWait, honouring the context), then again
//	retry_jitter   wait the jittered backoff (WithWait's jitter), then again
//	failover       the lane's failover helper steps in the worker's place
//	escalate       the run ends (EndEscalated); the review action is committed
//	abort          the run ends (EndAborted)
//
// A run that escalates or aborts ends with the decision as the last entry
// of [Summary.Repairs]; [Summary.Stop] names its decision record and, for
// an escalation, the review action.
//
// The helpers are [Lane.Helpers]. A route whose worker the lane does not name becomes the category's
// stop route (escalate for slow_loop and reauth, abort for failover). The
// review action is the kernel's safe fallback queue_for_review, with the
// failure's status as its reason. A helper's own failure is recorded, not
// routed. A cancelled context ends a wait at once, and the run returns the
// context's error.
//
// # Concurrency
//
// [Orchestrator.Run] calls every worker from the caller's goroutine and
// starts no goroutine of its own. It checks the context before each
// worker's turn and returns the context's error once it is done; a worker
// blocked inside Step must honour the context itself. An Orchestrator is
// safe for concurrent use: several traces may run at once, with
// workers that are safe for that. [Orchestrator.Register] may be called
// while runs are in progress; a run uses the workers registered when it
// started. Workers must not modify the view they are given: it is shared by
// the workers of a round.
package orchestrator

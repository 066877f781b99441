// Package supervisor owns the lifecycle of a tool gate's actions after
// they commit, so that a program's main needs one call for it:
//
//	sup, err := supervisor.New(g, supervisor.Config{Logger: logger})
//	if err != nil { ... }
//	go sup.Run(ctx) // until ctx ends
//
// A [Supervisor] over a [toolgate.Gate] does what a restarted process and
// a person's approvals need, which each program otherwise writes itself:
//
//   - recovery on start: [toolgate.Gate.Recover] at once, and again once
//     the gate's lease has run out, so that the attempts a crashed process
//     left are taken over;
//   - approvals resumed as they are decided: it looks at an interval for
//     actions that wait and have an approver's decision, and executes them
//     ([toolgate.Gate.Execute]: an approved action runs, a denied or
//     expired one escalates to the safe fallback), and at once when the
//     program's approval screen calls [Supervisor.Wake];
//   - periodic recovery, for attempts whose lease ran out since (a driver
//     that died, an effect that hung);
//   - events: each action it finished, and each error, as an [Event] to
//     the function given as [Config.Events] and to the [slog.Logger] given
//     as [Config.Logger].
//
// # What it remembers
//
// Finished work is remembered by the store, never only in memory: an
// action whose result is recorded is not driven again by this supervisor,
// another, or one started after a crash, and a recovery pass finds it
// finished in the decision records it scans and reads nothing more about
// it. An effect without a once-key (a tool neither keyed nor
// [toolgate.Tool.Idempotent]) that a crash cut short is recorded as
// EFFECT_UNKNOWN and reported, not run again: a person settles it.
//
// # Concurrency
//
// A Supervisor is safe for concurrent use; [Supervisor.Run] runs once at a
// time per Supervisor ([ErrRunning]) and runs effects on its own
// goroutine. Several supervisors, in one process or several, may run over
// one store: the gate's once-keys and leases let one of them start an
// effect, and the others find its result. Each supervisor reports what it
// drove, so with several an action may be reported more than once; its
// effect runs once.
//
// # Errors
//
// [New] fails with [ErrInvalidConfig]. An error met while supervising does
// not stop Run: it is reported as an [Event] whose Err is an [*Error]
// wrapping [ErrRecover] or [ErrResume] and the cause, and the work is tried
// again at the next look or pass.
package supervisor

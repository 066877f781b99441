// Package supervisor owns the lifecycle of a tool gate's actions after
// they commit, so that a program's main needs a few lines for it, and no
// timing of its own:
//
//	sup, err := supervisor.New(g, supervisor.Config{Logger: logger})
//	if err != nil { ... }
//	if err := sup.Start(ctx); err != nil { ... } // until ctx ends or Close
//	defer sup.Close()                           // before g.Close, which comes before the store's
//	if err := sup.Recovered(ctx); err != nil { ... } // what a crashed run left is finished
//
// A [Supervisor] over a [toolgate.Gate] does what a restarted process and
// a person's approvals need, which each program otherwise writes itself:
//
//   - recovery on start: [toolgate.Gate.Recover] at once, and again once
//     the gate's lease has run out on the kernel's clock, so that the
//     attempts a crashed process left are taken over; [Supervisor.Recovered]
//     returns once that full pass is complete;
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
// # Lifecycle
//
// [Supervisor.Start] starts it once ([ErrStarted] after); it runs on a
// goroutine of its own, and effects run there, until its context ends or
// [Supervisor.Close]. Close waits until it has stopped: after it returns
// nothing of the supervisor's runs, so the program then closes the gate
// ([toolgate.Gate.Close]) and, last, a store it opened itself. With defer,
// that is the opposite order of opening:
//
//	s, err := sqlitestore.Open(ctx, path) // ...
//	defer s.Close()
//	g, err := toolgate.New(ctx, toolgate.Config{Kernel: kernel.Config{Store: s}}) // ...
//	defer g.Close()
//	sup, err := supervisor.New(g, supervisor.Config{}) // ...; sup.Start(ctx)
//	defer sup.Close()
//
// [Supervisor.Recovered] waits for the first full recovery pass: after a
// restart, the program calls it before it reports on, or goes on with,
// what the crashed run left, instead of a timer of its own. The
// supervisor measures its schedule on the gate's kernel's clock, which the
// gate's leases read, so a test that moves that clock (and calls
// [Supervisor.Wake]) brings the full pass without waiting.
//
// # Concurrency
//
// A Supervisor is safe for concurrent use. Several supervisors, in one process or several, may run over
// one store: the gate's once-keys and leases let one of them start an
// effect, and the others find its result. Each supervisor reports what it
// drove, so with several an action may be reported more than once; its
// effect runs once.
//
// # Errors
//
// [New] fails with [ErrInvalidConfig], [Supervisor.Start] with
// [ErrStarted], [Supervisor.Recovered] with [ErrNotRunning] (or its
// context's error). An error met while supervising does not stop it: it
// is reported as an [Event] whose Op names the stage and whose Err wraps
// the cause, and the work is tried again at the next look or pass.
package supervisor

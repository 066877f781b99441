package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/internal/gatehook"
	"github.com/blackboardkernel/bk/internal/kernelhook"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/toolgate"
)

// defaultInterval is how often the supervisor looks for decided
// approvals when [Config].Interval is 0.
const defaultInterval = time.Second

// Sentinel errors. Errors from [New], [Supervisor.Start] and
// [Supervisor.Recovered] wrap one of these for errors.Is; the Err of an
// [Event] wraps the error met, and its Op names the stage.
var (
	// ErrInvalidConfig: New was given no gate or a bad configuration (a
	// negative interval or recovery period).
	ErrInvalidConfig = errors.New("supervisor: invalid configuration")
	// ErrStarted: Start was called on a supervisor that was started, or
	// closed, before: a supervisor starts once.
	ErrStarted = errors.New("supervisor: already started")
	// ErrNotRunning: Recovered was called on a supervisor that was never
	// started, or that stopped (its context ended, Close) before its
	// first full recovery pass.
	ErrNotRunning = errors.New("supervisor: not running")
)

// stageErr is the error of an [Event] the supervisor could not finish:
// what failed (the stage, which the event's Op names too), the action and
// trace when it is about one, wrapping the error it met.
func stageErr(op Op, traceID, actionID string, err error) error {
	what := "recovery failed"
	if op == OpResume {
		what = "resuming an approval failed"
	}
	where := ""
	if actionID != "" {
		where = ": " + actionID
	}
	if traceID != "" {
		where += " (trace " + traceID + ")"
	}
	return fmt.Errorf("supervisor: %s%s: %w", what, where, err)
}

// Op names what the supervisor was doing.
type Op string

// The supervisor's stages.
const (
	// OpRecover: a pass of [toolgate.Gate.Recover].
	OpRecover Op = "recover"
	// OpResume: executing an action whose approval was decided.
	OpResume Op = "resume"
)

// Event is one thing the supervisor did, or could not do, as the function
// given to [Config.Events] receives it.
type Event struct {
	// Op is the stage: OpRecover for an action a recovery pass finished,
	// OpResume for an action executed once its approval was decided.
	Op Op
	// TraceID and ActionID name the action; both are empty for an error
	// of a whole pass.
	TraceID  string
	ActionID string
	// Result is what came of the action (zero with Err): executed, failed
	// (EFFECT_UNKNOWN for an effect a crash left that may have run),
	// refused with the fallback taken (APPROVAL_DENIED, APPROVAL_EXPIRED).
	Result toolgate.Result
	// Err, when set, says the supervisor could not do it (Op says which
	// stage: OpRecover a recovery pass, OpResume listing the approvals or
	// executing a decided one), and tries again later: it wraps the error
	// met (a store failure, a cancelled context).
	Err error
}

// Config is what [New] builds a supervisor from. Each field's zero value
// means its documented default.
type Config struct {
	// Interval is how often the supervisor looks for approvals that were decided (0:
	// one second). Each look lists the actions that wait
	// ([toolgate.Gate.Pending]): it reads the namespace's decision
	// records, so its cost grows with the history.
	Interval time.Duration
	// RecoverEvery is how often the supervisor runs a recovery pass after the first
	// one (0: the gate's lease, [toolgate.Config.Lease]), for attempts whose
	// lease has run out since: a live driver that died, an effect that
	// hung. A recovery pass reads every decision record of the namespace
	// once.
	RecoverEvery time.Duration
	// Logger logs each event: a finished action at Info, an error at
	// Error. nil: nothing is logged.
	Logger *slog.Logger
	// Events, when set, is called with each event, from the supervisor's
	// goroutine, before it goes on: it should return quickly (hand the event to a
	// channel, say). A function that continues the work (tells a customer,
	// calls the next tool) sees each finished action once per supervisor;
	// with several supervisors on one store, an action's effect still runs
	// once, but each supervisor that drove it reports it.
	Events func(context.Context, Event)
}

// validate reports every problem of c at once (errors.Join), each
// wrapping [ErrInvalidConfig] and naming the field.
func (c Config) validate() error {
	var errs []error
	if c.Interval < 0 {
		errs = append(errs, fmt.Errorf("%w: Interval: %v is negative", ErrInvalidConfig, c.Interval))
	}
	if c.RecoverEvery < 0 {
		errs = append(errs, fmt.Errorf("%w: RecoverEvery: %v is negative", ErrInvalidConfig, c.RecoverEvery))
	}
	return errors.Join(errs...)
}

type config struct {
	interval     time.Duration
	recoverEvery time.Duration
	logger       *slog.Logger
	onEvent      func(context.Context, Event)
}

// Supervisor owns the lifecycle of a gate's actions once they are
// committed: recovery after a crash, approvals resumed as they are
// decided, attempts whose lease ran out. It is safe for concurrent use: its
// configuration is fixed by New; it starts once ([Supervisor.Start]) and
// stops with its context or [Supervisor.Close].
type Supervisor struct {
	g         *toolgate.Gate
	cfg       config
	wake      chan struct{} // Wake's signal: one pending look at most
	recovered chan struct{} // closed by the first full recovery pass

	mu      sync.Mutex
	started bool
	cancel  context.CancelFunc // ends the running loop's context
	done    chan struct{}      // closed when the loop has returned
}

// New returns a supervisor of g, configured by cfg. It fails with
// [ErrInvalidConfig] for a nil gate or a bad configuration (a negative
// Interval or RecoverEvery), reporting every problem at once, each naming
// its field; it starts nothing.
func New(g *toolgate.Gate, cfg Config) (*Supervisor, error) {
	err := cfg.validate()
	if g == nil {
		err = errors.Join(fmt.Errorf("%w: no gate", ErrInvalidConfig), err)
	}
	if err != nil {
		return nil, err
	}
	c := config{interval: cfg.Interval, recoverEvery: cfg.RecoverEvery, logger: cfg.Logger, onEvent: cfg.Events}
	if c.interval == 0 {
		c.interval = defaultInterval
	}
	if c.recoverEvery == 0 {
		c.recoverEvery = gatehook.Lease(g)
	}
	return &Supervisor{g: g, cfg: c, wake: make(chan struct{}, 1), recovered: make(chan struct{}), done: make(chan struct{})}, nil
}

// Start starts supervising the gate on a goroutine of its own, until ctx
// ends or [Supervisor.Close] is called, and returns at once (with
// [ErrStarted] when s was started or closed before; a supervisor starts
// once):
//
//  1. It runs a recovery pass at once ([toolgate.Gate.Recover]: work a
//     crash left long ago, approvals decided while no process ran), and
//     again once the gate's lease, and its margin, has passed since it
//     started, on the gate's kernel's clock: by then no attempt of a
//     process that died just before this one started holds its lease any
//     more. That second pass is the first full one: [Supervisor.Recovered]
//     returns once one has completed without an error.
//  2. Meanwhile, and until it stops, it looks at the interval for actions
//     whose approval has been decided and executes them
//     ([toolgate.Gate.Execute]): an approved one runs, a denied or expired
//     one escalates to the safe fallback. An approved action the gate
//     cannot run alone (a caller-driven tool's, or one with masked
//     arguments) is left to its caller's retry, without an event.
//  3. It runs a recovery pass at each recovery period.
//
// It reports each action it finished, and each error, through the function
// given to [Config.Events] and the logger; an error does not stop it (the work
// is tried again at the next look or pass). What finished is remembered by
// the store, not by the supervisor: an action with a recorded result is
// never driven again, by this supervisor, another, or a restarted one, and
// a recovery pass passes over it. An effect runs on the supervisor's
// goroutine, with a context that ends when the supervisor stops.
func (s *Supervisor) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return ErrStarted
	}
	s.started = true
	ctx, s.cancel = context.WithCancel(ctx)
	go s.run(ctx)
	return nil
}

// Close stops the supervisor and waits until it has stopped: when it
// returns, no look, pass or effect of the supervisor's is running, and none
// will start (a Start after Close returns [ErrStarted]). Call it before
// closing the gate, and the gate before its store. It is safe to call more
// than once, and on a supervisor that was never started or whose context
// has ended; it returns nil.
func (s *Supervisor) Close() error {
	s.mu.Lock()
	cancel, started := s.cancel, s.started
	s.started = true
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	} else if !started {
		close(s.done) // never started: nothing will run
	}
	<-s.done
	return nil
}

// Recovered waits for the supervisor's first full recovery pass: one that
// started once every lease held when the supervisor started had run out
// (with the gate's margin, on the kernel's clock), so that what a crashed
// process left has been finished, or recorded EFFECT_UNKNOWN for a person,
// and reported as an event before Recovered returns. It returns nil once
// such a pass completed without an error (a pass that met one is tried
// again at the recovery period), ctx.Err() when ctx ends first, and
// [ErrNotRunning] when the supervisor was not started or stopped before.
// It may be called any number of times, from any goroutine.
func (s *Supervisor) Recovered(ctx context.Context) error {
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	select {
	case <-s.recovered: // done already: nil, whatever ctx says
		return nil
	default:
	}
	if !started {
		return ErrNotRunning
	}
	select {
	case <-s.recovered:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.done:
		select {
		case <-s.recovered:
			return nil
		default:
			return ErrNotRunning
		}
	}
}

// run is the supervisor's goroutine (see Start). Recovery is scheduled on
// the kernel's clock, which the gate's leases read too; the timers only
// say when to look at it again, so a clock that jumps (a test's) takes
// effect at the next look or Wake.
func (s *Supervisor) run(ctx context.Context) {
	defer close(s.done)
	k := s.g.Kernel()
	lease := gatehook.Lease(s.g)
	// Wait out the lease and the gate's margin past it (a tenth of the
	// lease, at most 5 s), and a little more for clocks that differ.
	full := kernelhook.Now(k).Add(lease + min(lease/10, 5*time.Second) + lease/20)
	var due time.Time // the next recovery pass: at once
	recovered := false
	look := time.NewTicker(s.cfg.interval)
	defer look.Stop()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if now := kernelhook.Now(k); !now.Before(due) && ctx.Err() == nil {
			if s.recover(ctx) && !recovered && !now.Before(full) {
				recovered = true
				close(s.recovered)
			}
			due = now.Add(s.cfg.recoverEvery)
			if !recovered && full.Before(due) {
				due = full
			}
		}
		timer.Reset(max(due.Sub(kernelhook.Now(k)), time.Millisecond))
		select {
		case <-ctx.Done():
			return
		case <-look.C:
			s.resume(ctx)
		case <-s.wake:
			s.resume(ctx)
		case <-timer.C:
		}
	}
}

// Wake makes a started supervisor look for decided approvals now rather than at
// its next interval: the program's approval screen calls it after
// [toolgate.Approver.Approve] or Deny, so that a long interval costs no
// delay. It never blocks; wakes that come while a look is due already
// fold into it, and a wake before Start makes its first look early.
func (s *Supervisor) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// recover runs one recovery pass and reports what it did; it reports
// whether the pass completed without an error.
func (s *Supervisor) recover(ctx context.Context) bool {
	results, err := s.g.Recover(ctx)
	for _, res := range results {
		s.emit(ctx, Event{Op: OpRecover, TraceID: s.traceOf(ctx, res.ActionID), ActionID: res.ActionID, Result: res})
	}
	if err != nil && ctx.Err() == nil {
		s.emit(ctx, Event{Op: OpRecover, Err: stageErr(OpRecover, "", "", err)})
	}
	return err == nil && ctx.Err() == nil
}

// resume executes the actions whose approval has been decided.
func (s *Supervisor) resume(ctx context.Context) {
	pending, err := s.g.Pending(ctx, "")
	if err != nil {
		if ctx.Err() == nil {
			s.emit(ctx, Event{Op: OpResume, Err: stageErr(OpResume, "", "", err)})
		}
		return
	}
	for _, p := range pending {
		if ctx.Err() != nil {
			return
		}
		if p.Decision == nil {
			continue // no answer yet
		}
		res, err := s.g.Execute(ctx, p.ActionID)
		if err != nil {
			if ctx.Err() == nil {
				s.emit(ctx, Event{Op: OpResume, TraceID: p.TraceID, ActionID: p.ActionID,
					Err: stageErr(OpResume, p.TraceID, p.ActionID, err)})
			}
			continue
		}
		if res.Outcome == audit.OutcomePendingApproval {
			continue // the decision was withdrawn from under it: not finished
		}
		if res.Code == reason.EffectUnavailable || res.Code == reason.MaskedUnavailable {
			continue // the caller runs it, with its effect or its real arguments: nothing happened here
		}
		s.emit(ctx, Event{Op: OpResume, TraceID: p.TraceID, ActionID: p.ActionID, Result: res})
	}
}

// traceOf is the trace of a recovered action, for its event ("" when it
// cannot be read: the event still names the action).
func (s *Supervisor) traceOf(ctx context.Context, actionID string) string {
	rec, err := s.g.Kernel().Reader().Get(ctx, actionID)
	if err != nil {
		return ""
	}
	return rec.Provenance.TraceID
}

// emit hands an event to the events function and the logger.
func (s *Supervisor) emit(ctx context.Context, ev Event) {
	if l := s.cfg.logger; l != nil {
		if ev.Err != nil {
			l.ErrorContext(ctx, "supervisor", "op", string(ev.Op), "trace", ev.TraceID, "action", ev.ActionID, "err", ev.Err)
		} else {
			l.InfoContext(ctx, "supervisor", "op", string(ev.Op), "trace", ev.TraceID, "action", ev.ActionID,
				"outcome", string(ev.Result.Outcome), "code", string(ev.Result.Code))
		}
	}
	if s.cfg.onEvent != nil {
		s.cfg.onEvent(ctx, ev)
	}
}

package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/toolgate"
)

// Defaults of the options.
const (
	// DefaultInterval is how often Run looks for decided approvals.
	DefaultInterval = time.Second
)

// Sentinel errors. Errors from [New] and [Supervisor.Run], and the Err of
// an [Event], wrap one of these for errors.Is; the Err of an Event is an
// [*Error] for errors.As.
var (
	// ErrInvalidConfig: New was given no gate or a bad option (an
	// interval or a recovery period that is not positive).
	ErrInvalidConfig = errors.New("supervisor: invalid configuration")
	// ErrRunning: Run was called while another Run of the same
	// Supervisor had not returned.
	ErrRunning = errors.New("supervisor: already running")
	// ErrRecover: a recovery pass ([toolgate.Gate.Recover]) met an error
	// (a store failure, an action it could not read); the actions it
	// could not finish are left for the next pass.
	ErrRecover = errors.New("supervisor: recovery failed")
	// ErrResume: listing the approvals or executing a decided one met an
	// error; it is tried again at the next look.
	ErrResume = errors.New("supervisor: resuming an approval failed")
)

// Error is the typed error of one thing the supervisor could not do: the
// stage (Op), the action and trace when it is about one, and the error it
// met, after the sentinel of the stage.
type Error struct {
	Op       Op     // the stage: OpRecover or OpResume
	TraceID  string // the action's trace, when the error is about one
	ActionID string // the action, when the error is about one
	Err      error  // what went wrong: a store failure, a cancelled context
}

// Error says what failed, where.
func (e *Error) Error() string {
	s := "supervisor: " + string(e.Op)
	if e.ActionID != "" {
		s += " " + e.ActionID
	}
	if e.TraceID != "" {
		s += " (trace " + e.TraceID + ")"
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the stage's sentinel and the error met, so that errors.Is
// finds both.
func (e *Error) Unwrap() []error {
	sentinel := ErrRecover
	if e.Op == OpResume {
		sentinel = ErrResume
	}
	return []error{sentinel, e.Err}
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
// given to [WithEvents] receives it.
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
	// Err, when set, is an [*Error]: the supervisor could not do it, and
	// tries again later.
	Err error
}

// Option configures a Supervisor.
type Option func(*config)

type config struct {
	interval     time.Duration
	recoverEvery time.Duration
	logger       *slog.Logger
	onEvent      func(context.Context, Event)
}

// WithInterval sets how often Run looks for approvals that were decided
// (default [DefaultInterval]). Each look lists the actions that wait
// ([toolgate.Gate.Pending]): it reads the namespace's decision
// records, so its cost grows with the history.
func WithInterval(d time.Duration) Option { return func(c *config) { c.interval = d } }

// WithRecoverEvery sets how often Run runs a recovery pass after the first
// one (default: the gate's lease, [toolgate.Gate.Lease]), for attempts
// whose lease has run out since: a live driver that died, an effect that
// hung. A recovery pass reads every decision record of the namespace once.
func WithRecoverEvery(d time.Duration) Option { return func(c *config) { c.recoverEvery = d } }

// WithLogger logs each event through l: a finished action at Info, an
// error at Error. Without it nothing is logged.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithEvents calls fn with each event, from Run's goroutine, before Run
// goes on: fn should return quickly (hand the event to a channel, say). A
// function that continues the work (tells a customer, calls the next tool)
// sees each finished action once per supervisor; with several supervisors
// on one store, an action's effect still runs once, but each supervisor
// that drove it reports it.
func WithEvents(fn func(context.Context, Event)) Option {
	return func(c *config) { c.onEvent = fn }
}

// Supervisor owns the lifecycle of a gate's actions once they are
// committed: recovery after a crash, approvals resumed as they are
// decided, attempts whose lease ran out. It is safe for concurrent use: its
// configuration is fixed by New, and Run may be running once at a time.
type Supervisor struct {
	g       *toolgate.Gate
	cfg     config
	running atomic.Bool
	wake    chan struct{} // Wake's signal: one pending look at most
}

// New returns a supervisor of g. It fails with [ErrInvalidConfig] for a nil
// gate or an option out of range; it starts nothing.
func New(g *toolgate.Gate, opts ...Option) (*Supervisor, error) {
	if g == nil {
		return nil, fmt.Errorf("%w: no gate", ErrInvalidConfig)
	}
	c := config{interval: DefaultInterval, recoverEvery: g.Lease()}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.interval <= 0 {
		return nil, fmt.Errorf("%w: interval %v", ErrInvalidConfig, c.interval)
	}
	if c.recoverEvery <= 0 {
		return nil, fmt.Errorf("%w: recovery period %v", ErrInvalidConfig, c.recoverEvery)
	}
	return &Supervisor{g: g, cfg: c, wake: make(chan struct{}, 1)}, nil
}

// Run supervises the gate until ctx ends, then returns nil (or
// [ErrRunning] at once when another Run of s has not returned):
//
//  1. It runs a recovery pass at once ([toolgate.Gate.Recover]: work a
//     crash left long ago, approvals decided while no process ran), and
//     again when the gate's lease, and its margin, has passed since it
//     started: by then no attempt of a process that died just before this
//     one started holds its lease any more.
//  2. Meanwhile, and until ctx ends, it looks at the interval for actions
//     whose approval has been decided and executes them
//     ([toolgate.Gate.Execute]): an approved one runs, a denied or expired
//     one escalates to the safe fallback. An approved action the gate
//     cannot run alone (a caller-driven tool's, or one with masked
//     arguments) is left to its caller's retry, without an event.
//  3. It runs a recovery pass at each recovery period.
//
// It reports each action it finished, and each error, through the function given
// to [WithEvents] and the logger; an error does not stop it (the work is tried
// again at the next look or pass). What finished is remembered by the
// store, not by the supervisor: an action with a recorded result is never
// driven again, by this supervisor, another, or a restarted one, and a
// recovery pass passes over it. An effect runs on Run's goroutine.
func (s *Supervisor) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer s.running.Store(false)
	lease := s.g.Lease()
	// Wait out the lease and the gate's margin past it (a tenth of the
	// lease, at most 5 s), and a little more for clocks that differ.
	first := lease + min(lease/10, 5*time.Second) + lease/20
	s.recover(ctx)
	recoverAt := time.NewTimer(first)
	defer recoverAt.Stop()
	look := time.NewTicker(s.cfg.interval)
	defer look.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-look.C:
			s.resume(ctx)
		case <-s.wake:
			s.resume(ctx)
		case <-recoverAt.C:
			s.recover(ctx)
			recoverAt.Reset(s.cfg.recoverEvery)
		}
	}
}

// Wake makes a running Run look for decided approvals now rather than at
// its next interval: the program's approval screen calls it after
// [toolgate.Approver.Approve] or Deny, so that a long interval costs no
// delay. It never blocks; wakes that come while a look is due already
// fold into it, and a wake before Run starts makes its first look early.
func (s *Supervisor) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// recover runs one recovery pass and reports what it did.
func (s *Supervisor) recover(ctx context.Context) {
	results, err := s.g.Recover(ctx)
	for _, res := range results {
		s.emit(ctx, Event{Op: OpRecover, TraceID: s.traceOf(ctx, res.ActionID), ActionID: res.ActionID, Result: res})
	}
	if err != nil && ctx.Err() == nil {
		s.emit(ctx, Event{Op: OpRecover, Err: &Error{Op: OpRecover, Err: err}})
	}
}

// resume executes the actions whose approval has been decided.
func (s *Supervisor) resume(ctx context.Context) {
	pending, err := s.g.Pending(ctx, "")
	if err != nil {
		if ctx.Err() == nil {
			s.emit(ctx, Event{Op: OpResume, Err: &Error{Op: OpResume, Err: err}})
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
					Err: &Error{Op: OpResume, TraceID: p.TraceID, ActionID: p.ActionID, Err: err}})
			}
			continue
		}
		if res.Outcome == audit.OutcomePendingApproval {
			continue // the decision was withdrawn from under it: not finished
		}
		if res.Code == toolgate.CodeEffectUnavailable || res.Code == toolgate.CodeMaskedUnavailable {
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
	return rec.TraceID()
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

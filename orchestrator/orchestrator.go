package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/internal/telemetry"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// Sentinel errors. Errors returned by this package wrap one of these (or
// [blackboard.ErrInvalidInput] for an empty trace id), so callers branch with
// errors.Is.
var (
	// ErrInvalidWorker: a nil worker, an empty id, a nil handle, an invalid
	// slot in Reads or Writes, a worker whose ID, Handle, Reads or Writes
	// panicked, or an id already registered.
	ErrInvalidWorker = errors.New("orchestrator: invalid worker")
	// ErrInvalidOption: a round limit below 1, a nil option, a telemetry
	// option given to a run, or a runtime option ([WithBudget],
	// [WithLoopGuard], [WithRepair], [WithLane]) without [WithKernel]: the
	// runtime's decisions would have nowhere to be recorded.
	ErrInvalidOption = errors.New("orchestrator: invalid option")
	// ErrPanic is wrapped by the [Error] recorded for a worker that
	// panicked.
	ErrPanic = errors.New("orchestrator: worker panicked")
)

// Worker is one component of an agent (paper §11.1): it reads the
// blackboard through a view and writes through the single role-bound
// handle it was built with, so it can never write outside that role's
// authority. Package worker has helpers for workers that must not repeat
// themselves within a trace.
//
// The orchestrator calls a worker's methods from one goroutine per run; a
// worker shared between concurrent runs must be safe for that.
type Worker interface {
	// ID names the worker in logs and step records.
	ID() string
	// Handle is the role-bound handle the worker writes through.
	Handle() kernel.Handle
	// Reads lists the slots the worker reads; Writes the slots it writes.
	// The orchestrator runs writers of a slot before its readers.
	Reads() []blackboard.Slot
	Writes() []blackboard.Slot
	// ShouldActivate reports whether the worker has something to do given
	// the current view of the trace.
	ShouldActivate(v kernel.View) bool
	// Step does one unit of work on the step's trace (s.TraceID(), whose
	// view is s.View()), under what the run grants it (s.Budget(),
	// s.Guard(), s.Grant()). produced reports whether it wrote anything;
	// the orchestrator stops when a round produces nothing.
	Step(ctx context.Context, s *StepContext) (produced bool, err error)
}

// DefaultMaxRounds is the round limit when none is set.
const defaultMaxRounds = 20

// Phase names the part of a worker's turn in which a failure happened.
type Phase string

// The phases of a worker's turn.
const (
	PhaseShouldActivate Phase = "should_activate"
	PhaseStep           Phase = "step"
	// PhaseFinding: after the step returned, the worker reported a
	// failure in its finding, or its finding was refused by its contract.
	PhaseFinding Phase = "finding"
)

// Error is a failure in a worker's turn: a worker that returned an error
// or panicked, a failure it reported in its finding, or its finding
// refused by its contract. It wraps the worker's error, [ErrPanic] for a
// panic (and then also the panic value if that was an error), or
// [ErrFindingRefused] for a refused finding, so errors.Is works through
// it.
type Error struct {
	WorkerID string
	Phase    Phase
	Round    int
	// Code types a refused finding (CodeFinding...); "" otherwise.
	Code reason.Code
	// Err is what the worker returned or reported, the panic turned into
	// an error, or the refusal.
	Err error
	// Stack is the goroutine stack at the panic; nil otherwise.
	Stack []byte
}

// Error describes the failure with the worker id, the round and the phase.
func (e *Error) Error() string {
	return fmt.Sprintf("orchestrator: worker %q round %d %s: %v", e.WorkerID, e.Round, e.Phase, e.Err)
}

// Unwrap returns the wrapped error.
func (e *Error) Unwrap() error { return e.Err }

// Step is one entry of a run's log: a worker that was activated and
// stepped.
type Step struct {
	Round    int
	WorkerID string
	// Produced is what the worker reported.
	Produced bool
	// Err is the step's failure (also in [Summary.Errors]), or nil.
	Err *Error
	// Attempt is 1 for a worker's first try in its turn, then 2, 3, ...
	// for the retries the repair router ordered ([WithRepair]).
	Attempt int
	// Trajectory is what the worker did under its grant of turns
	// ([StepContext.Grant]), one compact entry per tool call: "T1(lint) ×
	// code_syntax → T2(run_tests) ✓". GrantEnd is how the grant ended. Both
	// are empty for a worker that used no grant.
	Trajectory string
	GrantEnd   failure.GrantEnd
}

// Summary is what a run did.
type Summary struct {
	// Rounds is the number of rounds started.
	Rounds int
	// Steps logs every activated worker in execution order.
	Steps []Step
	// Errors lists every worker failure, in order, in both phases.
	Errors []*Error
	// View is the trace as it stood at the end of the run (on an error,
	// the last view taken).
	View kernel.View

	// End says how the run ended ([EndQuiescent] when a round produced
	// nothing); "" when Run returned an error.
	End End
	// Stop says why a run ended before quiescence or its round limit: a
	// budget, a loop, an escalation or an abort. Nil otherwise.
	Stop *Stop
	// Repairs lists the repair router's decisions, in order ([WithRepair]).
	Repairs []Repair
	// States holds the functional state measured at the start of each
	// round, when the run has a runtime (see [WithBudget]).
	States []budget.State
	// Findings are the findings workers reported that met their
	// contracts, in order ([StepContext.Report]).
	Findings []Finding
}

// Option configures an [Orchestrator] in [New], where it sets the default
// of every run, or one run in [Orchestrator.Run], where it overrides that
// default. The telemetry providers ([WithTracerProvider],
// [WithMeterProvider]) are New's only: given to Run they are
// [ErrInvalidOption].
type Option func(*config)

type config struct {
	maxRounds  int
	persistent bool // views include shared persistent records
	tpSet      bool
	tp         trace.TracerProvider
	mpSet      bool
	mp         metric.MeterProvider
	newOnly    int // telemetry options applied
	rt         runtimeConfig
}

// WithTracerProvider sets the OpenTelemetry provider the orchestrator
// traces with: an orchestrator.run span per Run and a worker.step span per
// worker step, under which the worker's kernel calls nest. Without it the
// global provider is used (a no-op until the application installs an
// SDK); nil turns tracing off.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tpSet, c.tp, c.newOnly = true, tp, c.newOnly+1 }
}

// WithMeterProvider sets the OpenTelemetry provider for the orchestrator's
// metrics (bk.worker.steps, bk.orchestrator.runs). Without it the global
// provider is used; nil turns metrics off.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.mpSet, c.mp, c.newOnly = true, mp, c.newOnly+1 }
}

// WithMaxRounds sets the round limit (default 20). A limit
// below 1 is [ErrInvalidOption].
func WithMaxRounds(n int) Option { return func(c *config) { c.maxRounds = n } }

// WithPersistentView has the views given to workers include the
// persistent records other traces share (learned constraints; see
// [kernel.Reader.View]). Default: the trace's own records only.
func WithPersistentView() Option { return func(c *config) { c.persistent = true } }

// with applies options and checks the result; among a run's options
// (run true) a telemetry option is refused.
func (c config) with(opts []Option, run bool) (config, error) {
	n := c.newOnly
	for _, o := range opts {
		if o == nil {
			return c, fmt.Errorf("%w: nil option", ErrInvalidOption)
		}
		o(&c)
	}
	if run && c.newOnly != n {
		return c, fmt.Errorf("%w: WithTracerProvider and WithMeterProvider are options of New, not of Run", ErrInvalidOption)
	}
	return c.check()
}

func (c config) check() (config, error) {
	if c.maxRounds < 1 {
		return c, fmt.Errorf("%w: round limit %d below 1", ErrInvalidOption, c.maxRounds)
	}
	if err := c.rt.check(); err != nil {
		return c, err
	}
	return c, nil
}

// entry is a registered worker with what it declared at registration.
type entry struct {
	w      Worker
	id     string
	handle kernel.Handle
	reads  []blackboard.Slot
	writes []blackboard.Slot
}

// Orchestrator runs registered workers on a trace in dependency order, round
// after round, until a round produces nothing or the round limit is hit.
// See the package documentation for the ordering rule and failure
// isolation.
type Orchestrator struct {
	cfg   config
	mu    sync.RWMutex
	byReg []entry // registration order
	order []entry // execution order; replaced, never modified in place

	tracer      telemetry.Tracer
	steps, runs metric.Int64Counter // nil: metrics off
}

// New returns an orchestrator with no workers. It returns an error wrapping
// [ErrInvalidOption] for a bad option.
func New(opts ...Option) (*Orchestrator, error) {
	cfg, err := config{maxRounds: defaultMaxRounds}.with(opts, false)
	if err != nil {
		return nil, err
	}
	o := &Orchestrator{cfg: cfg, tracer: telemetry.NewTracer(instrumentation, cfg.tpSet, cfg.tp)}
	if m := telemetry.Meter(instrumentation, cfg.mpSet, cfg.mp); m != nil {
		o.steps, _ = m.Int64Counter("bk.worker.steps", metric.WithUnit("{step}"),
			metric.WithDescription("Worker steps the orchestrator ran, by worker and whether they produced."))
		o.runs, _ = m.Int64Counter("bk.orchestrator.runs", metric.WithUnit("{run}"),
			metric.WithDescription("Orchestrator runs, by whether they reached quiescence."))
	}
	return o, nil
}

// instrumentation is the name the orchestrator's tracer and meter report.
const instrumentation = "github.com/blackboardkernel/bk/orchestrator"

// Register adds workers. Their ID, Handle, Reads and Writes are read once,
// here. Either all of them are added or, on error, none: a bad worker is
// [ErrInvalidWorker], and so is an id already registered or repeated.
func (o *Orchestrator) Register(ws ...Worker) error {
	entries := make([]entry, 0, len(ws))
	for i, w := range ws {
		e, err := describe(w)
		if err != nil {
			return fmt.Errorf("worker %d: %w", i, err)
		}
		entries = append(entries, e)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	seen := make(map[string]bool, len(o.byReg)+len(entries))
	for _, e := range o.byReg {
		seen[e.id] = true
	}
	for _, e := range entries {
		if seen[e.id] {
			return fmt.Errorf("%w: duplicate id %q", ErrInvalidWorker, e.id)
		}
		seen[e.id] = true
	}
	all := append(append(make([]entry, 0, len(o.byReg)+len(entries)), o.byReg...), entries...)
	o.byReg, o.order = all, schedule(all)
	return nil
}

// describe reads a worker's declaration, refusing a bad one.
func describe(w Worker) (e entry, err error) {
	if w == nil {
		return entry{}, fmt.Errorf("%w: nil", ErrInvalidWorker)
	}
	defer func() {
		if r := recover(); r != nil {
			e, err = entry{}, fmt.Errorf("%w: panic while reading its declaration: %v", ErrInvalidWorker, r)
		}
	}()
	e = entry{w: w, id: w.ID(), handle: w.Handle(), reads: w.Reads(), writes: w.Writes()}
	switch {
	case e.id == "":
		return entry{}, fmt.Errorf("%w: empty id", ErrInvalidWorker)
	case e.handle == nil:
		return entry{}, fmt.Errorf("%w: %q has no handle", ErrInvalidWorker, e.id)
	}
	for _, s := range append(append([]blackboard.Slot(nil), e.reads...), e.writes...) {
		if !s.Valid() {
			return entry{}, fmt.Errorf("%w: %q declares %v", ErrInvalidWorker, e.id, s)
		}
	}
	e.reads = append([]blackboard.Slot(nil), e.reads...)
	e.writes = append([]blackboard.Slot(nil), e.writes...)
	return e, nil
}

// schedule orders workers so that a worker writing a slot runs before every
// other worker reading it. Among workers free to run, the earliest
// registered goes first; a dependency cycle is broken the same way, by
// running the earliest registered worker left.
func schedule(reg []entry) []entry {
	n := len(reg)
	// after[i][j]: j must wait for i.
	indeg := make([]int, n)
	succ := make([][]int, n)
	for i := range reg {
		for j := range reg {
			if i != j && feeds(reg[i], reg[j]) {
				succ[i] = append(succ[i], j)
				indeg[j]++
			}
		}
	}
	done := make([]bool, n)
	out := make([]entry, 0, n)
	for len(out) < n {
		next := -1
		for i := range reg {
			if !done[i] && indeg[i] == 0 {
				next = i
				break
			}
		}
		if next < 0 { // a cycle: take the earliest registered worker left
			for i := range reg {
				if !done[i] {
					next = i
					break
				}
			}
		}
		done[next] = true
		out = append(out, reg[next])
		for _, j := range succ[next] {
			indeg[j]--
		}
	}
	return out
}

// feeds reports whether a writes a slot that b reads.
func feeds(a, b entry) bool {
	for _, w := range a.writes {
		for _, r := range b.reads {
			if w == r {
				return true
			}
		}
	}
	return false
}

// ids returns the ids of the registered workers in the order a round runs
// them.
func (o *Orchestrator) ids() []string {
	o.mu.RLock()
	defer o.mu.RUnlock()
	ids := make([]string, len(o.order))
	for i, e := range o.order {
		ids[i] = e.id
	}
	return ids
}

// Run runs the registered workers on the trace, round after round, until a
// round in which no activated worker reports having produced something
// ([EndQuiescent]) or until the round limit. opts override the
// orchestrator's options for this run.
//
// Before each worker's turn Run gives it the current view of the trace
// (rebuilt after any step, since a step may write). A worker whose
// ShouldActivate or Step returns an error or panics is recorded in
// [Summary.Errors] (and in [Summary.Steps] for a step) and the run goes on
// with the others; no panic escapes Run.
//
// Run starts no goroutines. It checks ctx before every worker's turn and,
// once ctx is done, returns the result so far with ctx's error. It also
// returns an error, with the result so far, when a view cannot be built
// (wrapping the store's or kernel's error), for an empty trace id
// ([blackboard.ErrInvalidInput]) and for a bad option ([ErrInvalidOption]);
// in the last two cases nothing runs. A run with a runtime option
// ([WithBudget], [WithLoopGuard], [WithRepair], [WithLane]) and no
// [WithKernel], in New's options or the run's, is [ErrInvalidOption]: its
// stops and repairs are recorded as decision records, which need the
// kernel.
func (o *Orchestrator) Run(ctx context.Context, traceID string, opts ...Option) (res Summary, err error) {
	ctx, sp := o.tracer.Start(ctx, "orchestrator.run")
	defer func() {
		if sp != nil {
			sp.SetAttributes(attribute.String(telemetry.AttrTraceID, traceID), attribute.Int("bk.rounds", res.Rounds),
				attribute.Int("bk.steps", len(res.Steps)), attribute.Bool("bk.quiescent", res.End == EndQuiescent),
				attribute.Int("bk.worker_errors", len(res.Errors)))
			if err != nil {
				sp.RecordError(err)
				sp.SetStatus(codes.Error, err.Error())
			} else if len(res.Errors) > 0 {
				sp.SetStatus(codes.Error, res.Errors[0].Error())
			}
			sp.End()
		}
		if o.runs != nil && o.runs.Enabled(ctx) {
			o.runs.Add(ctx, 1, metric.WithAttributes(attribute.Bool("bk.quiescent", res.End == EndQuiescent)))
		}
	}()
	res = Summary{View: kernel.View{TraceID: traceID}}
	if traceID == "" {
		return res, fmt.Errorf("orchestrator: %w: empty trace id", blackboard.ErrInvalidInput)
	}
	cfg, err := o.cfg.with(opts, true)
	if err != nil {
		return res, err
	}
	if cfg.rt.records() && cfg.rt.k == nil {
		return res, fmt.Errorf("%w: WithBudget, WithLoopGuard, WithRepair and WithLane need WithKernel, to record their decisions", ErrInvalidOption)
	}
	o.mu.RLock()
	order := o.order
	o.mu.RUnlock()

	fresh := false
	refresh := func(h kernel.Handle) error {
		if fresh {
			return nil
		}
		v, err := h.View(ctx, traceID, cfg.persistent)
		if err != nil {
			return fmt.Errorf("orchestrator: view of trace %q: %w", traceID, err)
		}
		res.View, fresh = v, true
		return nil
	}
	rt, err := newRunner(o, cfg, traceID, &res, order, refresh, func() { fresh = false })
	if err != nil {
		return res, err
	}
	for round := 1; round <= cfg.maxRounds; round++ {
		res.Rounds = round
		if err := rt.beginRound(ctx, round); err != nil || rt.stopped() {
			if err != nil {
				return res, err
			}
			break
		}
		produced := false
		for _, e := range order {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			if err := refresh(e.handle); err != nil {
				return res, err
			}
			active, werr := activate(e, res.View)
			if werr != nil {
				werr.Round = round
				res.Errors = append(res.Errors, werr)
				continue
			}
			if !active {
				continue
			}
			p, err := rt.turn(ctx, e, round)
			if err != nil {
				return res, err
			}
			produced = produced || p
			if rt.stopped() {
				break
			}
		}
		if rt.stopped() {
			break
		}
		if !produced {
			rt.quiescent = true
			break
		}
		if err := rt.endRound(ctx, round); err != nil {
			return res, err
		}
		if rt.stopped() {
			break
		}
	}
	rt.finish()
	if len(order) > 0 {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if err := refresh(order[0].handle); err != nil {
			return res, err
		}
	}
	return res, nil
}

// activate calls ShouldActivate, turning a panic into a *Error.
func activate(e entry, v kernel.View) (active bool, werr *Error) {
	defer func() {
		if r := recover(); r != nil {
			active, werr = false, panicked(e.id, PhaseShouldActivate, r)
		}
	}()
	return e.w.ShouldActivate(v), nil
}

// step runs one worker step in its span and counts it.
func (o *Orchestrator) step(ctx context.Context, e entry, sc *StepContext) (bool, *Error) {
	sctx, sp := o.tracer.Start(ctx, "worker.step")
	p, werr := step(sctx, e, sc)
	if sp != nil {
		sp.SetAttributes(attribute.String("bk.worker", e.id), attribute.String(telemetry.AttrRole, string(e.handle.Role())),
			attribute.String(telemetry.AttrTraceID, sc.traceID), attribute.Int("bk.round", sc.round), attribute.Bool("bk.produced", p))
		if werr != nil {
			sp.RecordError(werr)
			sp.SetStatus(codes.Error, werr.Error())
		}
		sp.End()
	}
	if o.steps != nil && o.steps.Enabled(ctx) {
		o.steps.Add(ctx, 1, metric.WithAttributes(attribute.String("bk.worker", e.id), attribute.Bool("bk.produced", p)))
	}
	return p, werr
}

// step calls Step, turning an error or a panic into a *Error.
func step(ctx context.Context, e entry, sc *StepContext) (produced bool, werr *Error) {
	defer func() {
		if r := recover(); r != nil {
			produced, werr = false, panicked(e.id, PhaseStep, r)
		}
	}()
	p, err := e.w.Step(ctx, sc)
	if err != nil {
		return p, &Error{WorkerID: e.id, Phase: PhaseStep, Err: err}
	}
	return p, nil
}

func panicked(id string, phase Phase, r any) *Error {
	err := fmt.Errorf("%w: %v", ErrPanic, r)
	if perr, ok := r.(error); ok {
		err = fmt.Errorf("%w: %w", ErrPanic, perr)
	}
	return &Error{WorkerID: id, Phase: phase, Err: err, Stack: debug.Stack()}
}

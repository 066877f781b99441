package orchestrator

import (
	"slices"
	"sync"

	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/kernel"
)

// StepContext is the step the orchestrator asks of a worker, passed to
// [Worker.Step]: the trace and its view, what the run grants the step
// (its lane's budget, loop guard and grant), what the run knows so far
// (the functional state, the accepted findings, the repair that led to
// the step), and the way back for the worker's finding.
//
// Everything it hands out is a copy or a value the worker can only spend
// from: the functional state is an observation, the budget a lane's
// sub-run, the grant a number of turns the worker cannot extend. A StepContext is
// safe for concurrent use by the goroutines of one step.
type StepContext struct {
	traceID, workerID string
	view              kernel.View
	round, attempt    int
	repair            *Repair
	state             budget.State
	hasState          bool
	findings          []Finding
	run               *budget.Run
	guard             *budget.Guard
	grant             *failure.Grant

	mu      sync.Mutex
	finding *Finding
}

// NewStepContext returns the context of a step taken outside an
// orchestrator's run, for a program or a test that drives a worker
// itself: the trace and the view, and nothing else (no budget, guard,
// grant, state, findings or repair). A finding reported to it is kept by
// no one.
func NewStepContext(traceID string, v kernel.View) *StepContext {
	return &StepContext{traceID: traceID, view: v, round: 1, attempt: 1}
}

// TraceID is the trace the step works on.
func (s *StepContext) TraceID() string { return s.traceID }

// View is the view of the trace the step starts from, taken after the
// previous worker's step. It is shared by the workers of a round: the
// worker must not modify it.
func (s *StepContext) View() kernel.View { return s.view }

// Repair returns the repair decision that led to this step, and false for
// a first try. For a retry it holds the worker's own failure (the fast
// loop: correct it with the error in hand); for a research, reauth or
// failover worker, the failure of the worker it stands in for
// ([Repair.WorkerID]).
func (s *StepContext) Repair() (Repair, bool) {
	if s.repair == nil {
		return Repair{}, false
	}
	return *s.repair, true
}

// State returns the functional state measured at the start of the round,
// and false when the run measures none. It is an observation: a worker
// may read it (a critic may prefer to escalate under pressure), and
// nothing the orchestrator or the kernel decides reads it.
func (s *StepContext) State() (budget.State, bool) { return s.state, s.hasState }

// Findings returns the findings accepted so far in the run, oldest first,
// as copies: how typed findings cross from one worker to the next.
func (s *StepContext) Findings() []Finding {
	out := make([]Finding, len(s.findings))
	for i, f := range s.findings {
		out[i] = f.clone()
	}
	return out
}

// Budget is the worker's lane budget for this run ([Lane.Budget]): a
// sub-run that draws on the run's budget, the run's own budget when the
// lane sets no limits, or nil when the run has no budget. Pass it to an
// LLM agent's task so that its model and tool calls are charged to it, or
// to the worker's own gate calls (toolgate.Call.Budget).
// It is passed here, with the step, and never through ctx, so that it
// reaches only the worker it was granted to.
func (s *StepContext) Budget() *budget.Run { return s.run }

// Guard is the worker's own loop guard for its tool calls ([WithLoopGuard]),
// or nil: an LLM agent's task's, or the worker's gate calls'
// (toolgate.Call.Guard).
func (s *StepContext) Guard() *budget.Guard { return s.guard }

// Grant is the grant of turns for this step ([Lane.Turns] turns, 1 by
// default). The worker spends its turns (an LLM agent takes it as its
// task's grant); the orchestrator reads its trajectory when the step
// returns ([Step.Trajectory]). Nil when the run has no runtime (no
// runtime option and no [WithKernel]).
func (s *StepContext) Grant() *failure.Grant { return s.grant }

// Report hands the worker's finding to the orchestrator. When the step
// returns, the orchestrator checks it against the worker's contract
// ([Lane.Contract]; the zero Contract without one): a finding that meets
// it joins [Summary.Findings] and the next workers' [StepContext.Findings];
// one that does not is refused with an [*Error] wrapping
// [ErrFindingRefused]. A finding that
// reports failures makes the step fail with the first of them, which the
// repair router routes when it is on ([WithRepair]). A later Report
// replaces an earlier one.
func (s *StepContext) Report(f Finding) {
	c := f.clone()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finding = &c
}

// reported returns the finding reported, if any.
func (s *StepContext) reported() (Finding, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finding == nil {
		return Finding{}, false
	}
	return *s.finding, true
}

// clone copies a finding's slices; assertion values are shared.
func (f Finding) clone() Finding {
	f.Assertions = slices.Clone(f.Assertions)
	for i := range f.Assertions {
		f.Assertions[i].Evidence = slices.Clone(f.Assertions[i].Evidence)
	}
	f.Failures = slices.Clone(f.Failures)
	return f
}

package orchestrator

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"time"

	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/internal/kernelhook"
	"github.com/blackboardkernel/bk/internal/wait"
	"github.com/blackboardkernel/bk/kernel"
)

// DefaultMaxAttempts is how many attempts the repair router allows a
// worker's turn when [WithRepair] is given 0.
const defaultMaxAttempts = 3

// End says how a run ended.
type End string

// The ends of a run.
const (
	// EndQuiescent: a round produced nothing.
	EndQuiescent End = "quiescent"
	// EndRoundLimit: the orchestrator's round limit ([WithMaxRounds])
	// was reached.
	EndRoundLimit End = "round_limit"
	// EndBudgetExceeded: a budget refused the next round or a worker's
	// call (BUDGET_EXCEEDED).
	EndBudgetExceeded End = "budget_exceeded"
	// EndLoopDetected: rounds went by without progress, or a worker's
	// grant ended on a repeated call (LOOP_DETECTED).
	EndLoopDetected End = "loop_detected"
	// EndEscalated: the repair router handed a failure to a person;
	// the review action was committed ([Stop.ReviewID]).
	EndEscalated End = "escalated"
	// EndAborted: the repair router stopped the run on a failure that
	// retrying cannot fix, or whose attempts ran out.
	EndAborted End = "aborted"
)

// Stop is the typed reason a run ended early; [Summary.End] says how it
// ended.
type Stop struct {
	// WorkerID and Round say where it happened ("" for a round-level stop).
	WorkerID string
	Round    int
	// Reason is the budget's or the loop guard's reason, for a limit
	// (its Code is BUDGET_EXCEEDED or LOOP_DETECTED); nil for an
	// escalation or an abort.
	Reason *budget.Refusal
	// DecisionID names the decision record written for the stop, and
	// ReviewID the review action committed for an escalation. For an
	// escalation or an abort it is the last [Summary.Repairs] entry's,
	// which holds the failure and the router's remedy.
	DecisionID string
	ReviewID   string
	// State is the functional state measured as the run stopped.
	State budget.State
}

// Repair is one decision of the repair router and what the orchestrator
// did about it.
type Repair struct {
	Round    int
	WorkerID string
	// Attempt is the attempt that failed (from 1).
	Attempt int
	// Failure is the typed failure, Decision the router's answer for it
	// (after the orchestrator resolved the route: a route whose worker is
	// not configured becomes the category's stop route).
	Failure failure.Failure
	Remedy  failure.Remedy
	// Wait is the wait before the retry, jitter drawn; zero for routes
	// that do not wait.
	Wait time.Duration
	// Next names the worker that runs next: the same worker (fast loop,
	// backoff, retry), the research or reauth worker before it, or the
	// alternate (failover). "" when the run stops.
	Next string
	// DecisionID names the decision record.
	DecisionID string
}

// Lane is what the orchestrator knows about one worker as a sub-agent:
// its budget, its grant, the contract its findings must meet, and the
// workers the repair router sends for it.
type Lane struct {
	// Worker is the worker's id.
	Worker string
	// Budget are the limits of the worker's own sub-run for one run: a
	// sub-run of the run's budget ([WithBudget]) that draws on it, or a
	// budget of its own when the run has none. Zero limits only draw on
	// the run's.
	Budget budget.Limits
	// Turns is the number of turns (tool calls) the worker is granted per
	// step; 0 means 1. The worker cannot extend it.
	Turns int
	// Contract is what its findings must meet; nil applies the zero
	// Contract (well-formed assertions, resolvable evidence).
	Contract *FindingContract
	// Helpers names, by route, the worker the repair router sends for:
	// failure.RouteSlowLoop the one that researches first
	// (endpoint_unknown, not_found), failure.RouteReauth the one that
	// renews credentials (auth_error), failure.RouteFailover the
	// alternate that runs instead (provider_down). A route whose worker
	// is not named stops the run as the category's row says (escalate or
	// abort); any other route is [ErrInvalidOption].
	Helpers map[failure.Route]string
}

// runtimeConfig holds the runtime options.
type runtimeConfig struct {
	limits      *budget.Limits
	guard       [2]int // the guard's maxIdentical and maxIdleRounds
	guardOn     bool
	maxAttempts int // 0: repair router off
	lanes       map[string]Lane
	k           *kernel.Kernel
	sleep       func(context.Context, time.Duration) error
	jitter      func() float64
	risk        float64
}

// on reports whether a run needs a runner beyond the plain loop.
func (rc runtimeConfig) on() bool { return rc.records() || rc.k != nil }

// records reports whether a run may take decisions it must record: a
// stop on a budget or a loop, a repair.
func (rc runtimeConfig) records() bool {
	return rc.limits != nil || rc.guardOn || rc.maxAttempts > 0 || len(rc.lanes) > 0
}

func (rc runtimeConfig) check() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, a...)...)
	}
	if rc.limits != nil {
		if _, err := budget.New(*rc.limits, "", nil); err != nil {
			return bad("budget: %v", err)
		}
	}
	if rc.guardOn {
		if _, err := budget.NewGuard(rc.guard[0], rc.guard[1]); err != nil {
			return bad("loop guard: %v", err)
		}
	}
	for id, l := range rc.lanes {
		if id == "" || l.Turns < 0 {
			return bad("lane %q: empty worker id or negative grant", id)
		}
		for r := range l.Helpers {
			if r != failure.RouteSlowLoop && r != failure.RouteReauth && r != failure.RouteFailover {
				return bad("lane %q: route %s takes no helper", id, r)
			}
		}
		probe, _ := budget.New(budget.Limits{Rounds: 1}, "", nil) // limits as a lane's sub-run would have them
		if _, err := probe.Sub(l.Budget, ""); err != nil {
			return bad("lane %q: %v", id, err)
		}
	}
	if rc.maxAttempts < 0 {
		return bad("max attempts %d", rc.maxAttempts)
	}
	if rc.risk < 0 || rc.risk > 1 || rc.risk != rc.risk {
		return bad("risk %v outside [0, 1]", rc.risk)
	}
	return nil
}

// WithBudget gives every run a budget with these limits, named after its
// trace: the orchestrator counts a round before each one (Allow of
// budget.Rounds; a refusal ends the run with [EndBudgetExceeded]), lanes
// draw on it ([Lane]), and its snapshot feeds the functional state.
// Limits that limit nothing are [ErrInvalidOption].
func WithBudget(l budget.Limits) Option { return func(c *config) { c.rt.limits = &l } }

// WithLoopGuard gives every run a loop guard ([budget.NewGuard]) that lets
// maxIdentical identical tool calls through and stops after maxIdleRounds
// rounds without progress (0 for either: its default): after
// each round that produced something, the guard is told whether the
// blackboard changed, and its no-progress refusal ends the run with
// [EndLoopDetected]. Each lane gets a guard of its own, with the same
// limits, for its tool calls ([StepContext.Guard]).
func WithLoopGuard(maxIdentical, maxIdleRounds int) Option {
	return func(c *config) { c.rt.guard, c.rt.guardOn = [2]int{maxIdentical, maxIdleRounds}, true }
}

// WithRepair turns the repair router on, allowing maxAttempts attempts
// per worker turn (0 means 3). A failed step, a
// failure a worker reports in its finding, or a finding refused by its
// contract is typed (failure.Classify), routed (failure.RemedyFor), recorded
// and acted on; see the package documentation.
func WithRepair(maxAttempts int) Option {
	return func(c *config) {
		if maxAttempts == 0 {
			maxAttempts = defaultMaxAttempts
		}
		c.rt.maxAttempts = maxAttempts
	}
}

// WithLane configures one worker's lane; a later lane for the same worker
// replaces it.
func WithLane(l Lane) Option {
	return func(c *config) {
		lanes := maps.Clone(c.rt.lanes)
		if lanes == nil {
			lanes = make(map[string]Lane)
		}
		l.Helpers = maps.Clone(l.Helpers)
		lanes[l.Worker] = l
		c.rt.lanes = lanes
	}
}

// WithKernel lets the orchestrator write on the blackboard: a decision
// record for each repair decision and each stop ([audit.Append], through
// the kernel's Governor), and the review action of an escalation
// (the kernel's safe fallback queue_for_review, with the failure's status
// as its reason). A run with [WithBudget], [WithLoopGuard], [WithRepair]
// or [WithLane] needs it ([ErrInvalidOption] otherwise); a run with
// WithKernel alone measures the functional state from the trace. The
// runtime's clock (budgets, functional state) is the kernel's.
func WithKernel(k *kernel.Kernel) Option { return func(c *config) { c.rt.k = k } }

// WithRisk sets the risk class of the runs' intents, in [0, 1], which
// amplifies the escalation propensity of the functional state
// ([budget.State.Escalation]).
func WithRisk(r float64) Option { return func(c *config) { c.rt.risk = r } }

// WithWait sets how the orchestrator waits before a backoff or a
// jittered retry: sleep waits (default: a timer that gives up when the
// context ends) and must return the context's error once the context is
// done; jitter is the source of the numbers in [0, 1) that spread a
// jittered wait (failure.Remedy.Jittered; default math/rand/v2). A nil
// function keeps its default. Tests give both, to run without wall time.
func WithWait(sleep func(ctx context.Context, d time.Duration) error, jitter func() float64) Option {
	return func(c *config) { c.rt.sleep, c.rt.jitter = sleep, jitter }
}

// clock returns the runtime's clock.
func (rc runtimeConfig) clock() func() time.Time {
	if rc.k != nil {
		k := rc.k
		return func() time.Time { return kernelhook.Now(k) }
	}
	return time.Now
}

func (rc runtimeConfig) sleeper() func(context.Context, time.Duration) error {
	if rc.sleep != nil {
		return rc.sleep
	}
	return wait.Sleep
}

func (rc runtimeConfig) jitterer() func() float64 {
	if rc.jitter != nil {
		return rc.jitter
	}
	return rand.Float64
}

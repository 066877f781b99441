package budget

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The counted resources, as indexes into a run's counters.
const (
	iTokens = iota
	iModelCalls
	iToolCalls
	iTurnCalls
	iRounds
	iReplans
	nCounters
)

// counterIndex maps a counted resource to its index.
var counterIndex = map[Resource]int{
	Tokens: iTokens, ModelCalls: iModelCalls, ToolCalls: iToolCalls, toolCallsPerTurn: iTurnCalls,
	Rounds: iRounds, Replans: iReplans,
}

// drawsOnParent reports whether a sub-run's use of r counts on its
// ancestors too. Consumables do; the counters that describe one loop's
// structure (its turns, rounds and re-plans) do not.
func drawsOnParent(r Resource) bool {
	switch r {
	case Tokens, ModelCalls, ToolCalls, Cost:
		return true
	}
	return false
}

var runSeq atomic.Int64

// Run is the budget of one run: its limits and what has been used of them.
// Every method is safe for concurrent use by any number of goroutines: a
// check and the count it allows happen together under one lock that the
// run shares with its ancestors and sub-runs, so parallel workers can
// neither race past a limit nor see a count half-applied.
type Run struct {
	id     string
	limits Limits
	parent *Run
	mu     *sync.Mutex // the tree's lock, shared with every ancestor and sub-run
	now    func() time.Time
	start  time.Time
	subs   atomic.Int64

	// Guarded by *mu.
	counts     [nCounters]int64
	prompt     int64
	completion int64
	held       int64 // tokens reserved for model calls not yet settled
	turn       int64
	cost       float64
	refused    map[Resource]int64
}

// New starts the budget of a root run with the given limits. id names the
// run in refusals and snapshots: use the trace id the run works on ("" for
// "run-N"). now is the clock the run reads its deadline from (nil for
// time.Now); tests pass a fake one. New fails with [ErrInvalid] when a
// limit is negative, the soft threshold lies outside (0, 1], or the limits
// limit nothing at all. The deadline counts from now, as the run's clock
// says.
func New(limits Limits, id string, now func() time.Time) (*Run, error) {
	if now == nil {
		now = time.Now
	}
	l, err := limits.check(defaultSoft)
	if err != nil {
		return nil, err
	}
	if !l.any() {
		return nil, fmt.Errorf("%w: the limits limit nothing; set at least one counter, a cost or a deadline (see DefaultLimits)", ErrInvalid)
	}
	if id == "" {
		id = "run-" + strconv.FormatInt(runSeq.Add(1), 10)
	}
	return &Run{id: id, limits: l, mu: new(sync.Mutex), now: now, start: now()}, nil
}

// Sub starts a sub-run: an isolated budget of its own, for a sub-agent
// lane, that draws on r. The sub-run's limits apply to it alone (zero
// fields leave that resource bounded by r only); every token, model call,
// tool call and cost it spends also counts on r and r's ancestors, in the
// same step, and is refused when any of them lacks it. The sub-run's
// deadline counts from now and never outlasts r's. Its turns, rounds and
// re-plans are its own: they neither count on r nor reset r's. A sub-run
// has no method that reaches r: it cannot change r's limits or counters
// except by spending. id names the sub-run ("" for "PARENT/N"); it keeps
// r's clock. Sub fails with [ErrInvalid] for bad limits.
func (r *Run) Sub(limits Limits, id string) (*Run, error) {
	l, err := limits.check(r.limits.Soft)
	if err != nil {
		return nil, err
	}
	if id == "" {
		id = r.id + "/" + strconv.FormatInt(r.subs.Add(1), 10)
	}
	return &Run{id: id, limits: l, parent: r, mu: r.mu, now: r.now, start: r.now()}, nil
}

// request is one check-and-count: n of res, plus, for a model call, the
// tokens that must still be free and the tokens to hold.
type request struct {
	res      Resource
	n        int64
	tokens   int64 // tokens that must be free at every level (model calls)
	hold     int64 // tokens to hold at every level until settled
	costGate bool  // refuse when the cost budget is spent (model and tool calls)
	newTurn  bool  // begin a new turn once counted (rounds)
}

// Allow asks, before a call is made, for n units of res, and counts them
// if every limit has room; otherwise it counts nothing and returns a
// [*Refusal] naming the budget that refused. Every request is also
// refused once the deadline of the run or of an ancestor has passed.
//
//   - ToolCalls: n tool calls, against the run's per-turn and per-run
//     limits and the per-run limits of its ancestors; refused too once the
//     cost budget is spent.
//   - ModelCalls: n model calls; refused too once the tokens or the cost
//     are spent. Charge the tokens with [Run.ChargeTokens] when the model
//     answers, or let a [Meter] hold an estimate of them first.
//   - Tokens: n tokens spent now, for a cost known in advance.
//   - Rounds: n rounds of the run's loop, against the run's own Rounds
//     limit, asked for before each round; a counted round also begins a
//     new turn (see [Run.NextTurn]). A refused round is not counted and the
//     turn goes on; stop the loop.
//   - Replans: n re-planning attempts against the run's own Replans
//     limit, asked for before the planner is asked again.
//
// Cost and the deadline are not asked for: cost is charged after the fact
// with [Run.ChargeCost], and the deadline is checked on every request.
// Allow fails with [ErrInvalid] for n < 1 or any other resource.
func (r *Run) Allow(res Resource, n int64) error {
	if n < 1 {
		return fmt.Errorf("%w: allow %d %s", ErrInvalid, n, res)
	}
	q := request{res: res, n: n}
	switch res {
	case ToolCalls:
		q.costGate = true
	case ModelCalls:
		q.tokens, q.costGate = 1, true
	case Rounds:
		q.newTurn = true
	case Tokens, Replans:
	default:
		return fmt.Errorf("%w: %q cannot be asked for (ask for tool_calls, model_calls, tokens, rounds or replans)", ErrInvalid, res)
	}
	return r.admit(q)
}

// NextTurn begins a new turn of the run: the per-turn tool-call count
// starts again from zero. It resets the run's own turn only, never a
// parent's, and charges nothing. It returns the number of turns begun.
func (r *Run) NextTurn() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.beginTurn()
	return r.turn
}

func (r *Run) beginTurn() {
	r.turn++
	r.counts[iTurnCalls] = 0
}

// ChargeTokens records the tokens a model call used, as the API reported
// them, on the run and its ancestors. Usage already happened, so it is
// recorded even past the limit (counts saturate at the largest int64, they
// never wrap). Usage beyond the token limit of the run or an ancestor ends
// the run: ChargeTokens returns a [*Refusal] (BUDGET_EXCEEDED, tokens),
// and every later request of the run is refused. Negative counts fail with
// [ErrInvalid] and change nothing.
func (r *Run) ChargeTokens(prompt, completion int64) error {
	if prompt < 0 || completion < 0 {
		return fmt.Errorf("%w: negative token usage %d + %d", ErrInvalid, prompt, completion)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.chargeTokens(prompt, completion)
}

// chargeTokens records usage on r and its ancestors and returns the
// overrun it caused, if any. r.mu is held.
func (r *Run) chargeTokens(prompt, completion int64) error {
	for x := r; x != nil; x = x.parent {
		x.prompt = satAdd(x.prompt, prompt)
		x.completion = satAdd(x.completion, completion)
		x.counts[iTokens] = satAdd(x.counts[iTokens], satAdd(prompt, completion))
	}
	return r.overrun()
}

// ChargeCost records a cost already incurred (a model call's price, a paid
// API's fee) on the run and its ancestors, even past the limit (the sum
// saturates at the largest finite float64). Once the cost budget is spent,
// model and tool calls are refused; a cost beyond the limit ends the run:
// ChargeCost returns a [*Refusal] (BUDGET_EXCEEDED, cost) and every later
// request is refused. A negative, NaN or infinite cost fails with
// [ErrInvalid] and changes nothing.
func (r *Run) ChargeCost(c float64) error {
	if c < 0 || math.IsNaN(c) || math.IsInf(c, 0) {
		return fmt.Errorf("%w: cost %v", ErrInvalid, c)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for x := r; x != nil; x = x.parent {
		x.cost = satAddCost(x.cost, c)
	}
	return r.overrun()
}

// overrun returns a [*Refusal] when the recorded usage of r or an
// ancestor is beyond its token or cost limit: usage that already happened
// past the budget ends the run, whatever the request. r.mu is held.
func (r *Run) overrun() error {
	if !overrunChecked() {
		return nil
	}
	for x := r; x != nil; x = x.parent {
		if l := x.limits.Tokens; l > 0 && x.counts[iTokens] > l {
			return exceeded(Tokens, float64(l), float64(x.counts[iTokens]), 0, x.id)
		}
		if l := x.limits.Cost; l > 0 && x.cost > l {
			return exceeded(Cost, l, x.cost, 0, x.id)
		}
	}
	return nil
}

// satAdd returns a+b for counts a, b ≥ 0, or the largest int64 when the
// sum would pass it: a counter that wrapped would read as room left.
func satAdd(a, b int64) int64 {
	if saturates() && b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}

// satAddCost returns a+b for costs a, b ≥ 0, or the largest finite
// float64 when the sum would be infinite (an infinity cannot be recorded in
// a snapshot's JSON).
func satAddCost(a, b float64) float64 {
	if s := a + b; !saturates() || !math.IsInf(s, 1) {
		return s
	}
	return math.MaxFloat64
}

// reservation is a model call admitted with an estimate of the tokens it
// will use. The estimate is held on the run and its ancestors, so that
// parallel callers cannot all be admitted against the same remaining
// tokens, until Settle replaces it with the usage the API reported or
// Release gives it back. Safe for concurrent use;
// only the first Settle or Release has an effect.
type reservation struct {
	run  *Run
	hold int64
	done bool // guarded by run.mu
}

// reserveModelCall asks for one model call before it is made, holding
// estimate tokens for it (0 holds none). It is refused, with nothing
// counted, when the model calls or the cost are spent, or when the run or
// an ancestor has fewer than max(estimate, 1) tokens left after what the
// others hold. A negative estimate fails with [ErrInvalid].
func (r *Run) reserveModelCall(estimate int64) (*reservation, error) {
	if estimate < 0 {
		return nil, fmt.Errorf("%w: negative token estimate %d", ErrInvalid, estimate)
	}
	if err := r.admit(request{res: ModelCalls, n: 1, tokens: max(estimate, 1), hold: estimate, costGate: true}); err != nil {
		return nil, err
	}
	return &reservation{run: r, hold: estimate}, nil
}

// Settle releases the held estimate and charges the tokens the call used
// (see [Run.ChargeTokens]: usage beyond the token limit returns an
// [*Refusal] and ends the run). Negative counts fail with [ErrInvalid] and
// change nothing.
func (v *reservation) Settle(prompt, completion int64) error {
	if prompt < 0 || completion < 0 {
		return fmt.Errorf("%w: negative token usage %d + %d", ErrInvalid, prompt, completion)
	}
	r := v.run
	r.mu.Lock()
	defer r.mu.Unlock()
	if v.done {
		return nil
	}
	v.release()
	return r.chargeTokens(prompt, completion)
}

// Release gives the held estimate back without charging tokens, for a
// call that was not made or whose usage is charged otherwise. The model
// call stays counted.
func (v *reservation) Release() {
	v.run.mu.Lock()
	defer v.run.mu.Unlock()
	if !v.done {
		v.release()
	}
}

func (v *reservation) release() {
	v.done = true
	for x := v.run; x != nil; x = x.parent {
		x.held -= v.hold
	}
}

// admit is the one check-and-count: under the tree's lock, every check
// for every level first, then every count, so a request is counted
// everywhere or nowhere.
func (r *Run) admit(q request) error {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.check(q, now); e != nil {
		if r.refused == nil {
			r.refused = make(map[Resource]int64, 2)
		}
		r.refused[e.Resource]++
		return e
	}
	i := counterIndex[q.res]
	if drawsOnParent(q.res) {
		for x := r; x != nil; x = x.parent {
			x.counts[i] = satAdd(x.counts[i], q.n)
			x.held += q.hold // check made sure it cannot pass the maximum
		}
	} else {
		r.counts[i] = satAdd(r.counts[i], q.n)
	}
	if q.res == ToolCalls {
		r.counts[iTurnCalls] = satAdd(r.counts[iTurnCalls], q.n)
	}
	if q.newTurn {
		r.beginTurn()
	}
	return nil
}

// check returns the first limit q would break, or nil. r.mu is held.
func (r *Run) check(q request, now time.Time) *Refusal {
	for x := r; x != nil; x = x.parent {
		if d := x.limits.Deadline; d > 0 {
			if el := now.Sub(x.start); el >= d {
				return exceeded(Deadline, float64(d.Milliseconds()), float64(el.Milliseconds()), 0, x.id)
			}
		}
	}
	if e, ok := r.overrun().(*Refusal); ok {
		return e
	}
	over := func(x *Run, res Resource, used, n int64) *Refusal {
		if l := x.limits.counter(res); l > 0 && satAdd(used, n) > l {
			return exceeded(res, float64(l), float64(used), float64(n), x.id)
		}
		return nil
	}
	if q.res == ToolCalls {
		if e := over(r, toolCallsPerTurn, r.counts[iTurnCalls], q.n); e != nil {
			return e
		}
	}
	if !drawsOnParent(q.res) {
		return over(r, q.res, r.counts[counterIndex[q.res]], q.n)
	}
	for x := r; x != nil; x = x.parent {
		used := x.counts[counterIndex[q.res]]
		if q.res == Tokens {
			used = satAdd(used, x.held)
		}
		if e := over(x, q.res, used, q.n); e != nil {
			return e
		}
		if q.tokens > 0 {
			if e := over(x, Tokens, satAdd(x.counts[iTokens], x.held), q.tokens); e != nil {
				return e
			}
		}
		// Held tokens are given back by subtraction, so they must stay
		// exact: a hold that would pass the maximum is refused, with a
		// token limit or without.
		if q.hold > 0 && saturates() && x.held > math.MaxInt64-q.hold {
			return exceeded(Tokens, float64(x.limits.Tokens), float64(satAdd(x.counts[iTokens], x.held)),
				float64(q.hold), x.id)
		}
		if q.costGate && x.limits.Cost > 0 && x.cost >= x.limits.Cost {
			return exceeded(Cost, x.limits.Cost, x.cost, 0, x.id)
		}
	}
	return nil
}

// overrunChecked reports whether usage already past a limit ends the run
// (off only under the budget.overrun mutation switch).
func overrunChecked() bool {
	return !mutOverrun
}

// saturates reports whether counts saturate instead of wrapping (off only
// under the budget.saturate mutation switch).
func saturates() bool {
	return !mutSaturate
}

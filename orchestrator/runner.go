package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/failure"
	"github.com/blackboardkernel/bk/internal/pressure"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// writer is the planner writer the orchestrator commits review actions
// with.
const writer = "orchestrator"

// runner is one run's runtime: its budget, guard and lanes, the state it
// measures, the repair router's loop, and how the run stopped.
type runner struct {
	o       *Orchestrator
	cfg     config
	rc      runtimeConfig
	on      bool
	traceID string
	res     *Summary
	order   []entry
	byID    map[string]entry
	refresh func(kernel.Handle) error
	stale   func()
	now     func() time.Time

	run      *budget.Run
	guard    *budget.Guard
	lanes    map[string]*laneState
	state    budget.State
	hasState bool
	before   kernel.View
	stop     *Stop
	end      End // how a stopped run ended
	// quiescent: a round produced nothing.
	quiescent bool
}

// laneState is a lane's budget and guard for one run.
type laneState struct {
	cfg   Lane
	run   *budget.Run
	guard *budget.Guard
}

func newRunner(o *Orchestrator, cfg config, traceID string, res *Summary, order []entry,
	refresh func(kernel.Handle) error, stale func()) (*runner, error) {
	rt := &runner{o: o, cfg: cfg, rc: cfg.rt, on: cfg.rt.on(), traceID: traceID, res: res, order: order,
		refresh: refresh, stale: stale, now: cfg.rt.clock()}
	if !rt.on {
		return rt, nil
	}
	rt.byID = make(map[string]entry, len(order))
	for _, e := range order {
		rt.byID[e.id] = e
	}
	rt.lanes = make(map[string]*laneState)
	var err error
	if l := rt.rc.limits; l != nil {
		if rt.run, err = budget.New(*l, traceID, rt.now); err != nil {
			return nil, fmt.Errorf("%w: budget: %v", ErrInvalidOption, err)
		}
	}
	if rt.rc.guardOn {
		if rt.guard, err = budget.NewGuard(rt.rc.guard[0], rt.rc.guard[1]); err != nil {
			return nil, fmt.Errorf("%w: loop guard: %v", ErrInvalidOption, err)
		}
	}
	return rt, nil
}

// stopped reports whether the run has stopped early.
func (rt *runner) stopped() bool { return rt.stop != nil }

// lane returns the lane of worker id for this run, starting its budget
// and guard on first use.
func (rt *runner) lane(id string) (*laneState, error) {
	if ls := rt.lanes[id]; ls != nil {
		return ls, nil
	}
	ls := &laneState{cfg: rt.rc.lanes[id]}
	var err error
	switch {
	case rt.run != nil:
		ls.run, err = rt.run.Sub(ls.cfg.Budget, rt.traceID+"/"+id)
	case ls.cfg.Budget != budget.Limits{}:
		ls.run, err = budget.New(ls.cfg.Budget, rt.traceID+"/"+id, rt.now)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: lane %q: %v", ErrInvalidOption, id, err)
	}
	if rt.rc.guardOn {
		if ls.guard, err = budget.NewGuard(rt.rc.guard[0], rt.rc.guard[1]); err != nil {
			return nil, fmt.Errorf("%w: lane %q: %v", ErrInvalidOption, id, err)
		}
	}
	rt.lanes[id] = ls
	return ls, nil
}

// beginRound counts the round on the run's budget (a refusal stops the
// run), takes the view the round starts from, and measures the
// functional state.
func (rt *runner) beginRound(ctx context.Context, round int) error {
	if !rt.on {
		return nil
	}
	if rt.run != nil {
		if err := rt.run.Allow(budget.Rounds, 1); err != nil {
			rt.res.Rounds = round - 1
			return rt.stopLimit(ctx, "", round, err)
		}
	}
	if len(rt.order) > 0 {
		if err := rt.refresh(rt.order[0].handle); err != nil {
			return err
		}
		rt.before = rt.res.View
	}
	s, err := rt.measure(ctx, round)
	if err != nil {
		return err
	}
	rt.state, rt.hasState = s, true
	rt.res.States = append(rt.res.States, s)
	return nil
}

// measure computes the functional state now: pressure.Measure over the
// trace's records, the run's budget snapshot and the guards. The budget
// pressure is the highest of the run's and its lanes' (a lane's spent
// budget is pressure on the run); the loop pressure folds in the lanes'
// repeated calls.
func (rt *runner) measure(ctx context.Context, round int) (budget.State, error) {
	recs, err := rt.records(ctx)
	if err != nil {
		return budget.State{}, err
	}
	in := pressure.Inputs{Loop: rt.loopPressure(), Trace: recs, Now: rt.now(), Risk: rt.rc.risk}
	if rt.run != nil {
		in.Budget = rt.run.Snapshot()
	}
	for _, ls := range rt.lanes {
		if ls.run != nil {
			in.Budget.Budget = max(in.Budget.Budget, ls.run.Snapshot().Budget)
		}
	}
	s := pressure.Measure(in)
	s.Round = int64(round)
	return s, nil
}

// endRound tells the loop guard whether the round changed the blackboard;
// its refusal stops the run.
func (rt *runner) endRound(ctx context.Context, round int) error {
	if !rt.on || rt.guard == nil || len(rt.order) == 0 {
		return nil
	}
	if err := rt.refresh(rt.order[0].handle); err != nil {
		return err
	}
	if err := rt.guard.Round(progressed(rt.before, rt.res.View)); err != nil {
		return rt.stopLimit(ctx, "", round, err)
	}
	return nil
}

// finish sets how the run ended.
func (rt *runner) finish() {
	switch {
	case rt.stop != nil:
		rt.res.End, rt.res.Stop = rt.end, rt.stop
	case rt.quiescent:
		rt.res.End = EndQuiescent
	default:
		rt.res.End = EndRoundLimit
	}
}

// turn runs one activated worker's turn: its step and, with the repair
// router on, the repairs its failures call for, until it succeeds or the
// run stops. It returns whether any step produced something, and an error
// only when the run cannot go on (the context, the store).
func (rt *runner) turn(ctx context.Context, e entry, round int) (produced bool, err error) {
	w, attempt := e, 1
	var rep *Repair
	for {
		p, werr, err := rt.stepOnce(ctx, w, round, attempt, rep)
		produced = produced || p
		if err != nil || werr == nil || !rt.on {
			return produced, err
		}
		if err := ctx.Err(); err != nil {
			return produced, err
		}
		var rf *budget.Refusal
		if errors.As(werr.Err, &rf) {
			return produced, rt.stopLimit(ctx, w.id, round, werr.Err)
		}
		if rt.rc.maxAttempts == 0 {
			return produced, nil // failures are recorded, not routed
		}
		f := failureOf(werr)
		r := Repair{Round: round, WorkerID: w.id, Attempt: attempt, Failure: f,
			Remedy: failure.RemedyFor(f, attempt, rt.rc.maxAttempts)}
		next := rt.resolve(e, w, &r)
		if r.Remedy.Retry && (r.Remedy.Route == failure.RouteBackoff || r.Remedy.Route == failure.RouteRetryJitter) {
			r.Wait = r.Remedy.Jittered(rt.rc.jitterer()())
		}
		if err := rt.recordRepair(ctx, &r); err != nil {
			return produced, err
		}
		rt.res.Repairs = append(rt.res.Repairs, r)
		if !r.Remedy.Retry {
			return produced, rt.stopFailure(ctx, &r)
		}
		if r.Wait > 0 {
			if err := rt.rc.sleeper()(ctx, r.Wait); err != nil {
				return produced, err
			}
		}
		switch r.Remedy.Route {
		case failure.RouteSlowLoop, failure.RouteReauth:
			p, _, err := rt.stepOnce(ctx, next, round, 1, &r) // a helper's failure is recorded, not routed
			produced = produced || p
			if err != nil {
				return produced, err
			}
			if err := ctx.Err(); err != nil {
				return produced, err
			}
		case failure.RouteFailover:
			w = next
		}
		attempt++
		rep = &r
	}
}

// resolve fills in the worker a retrying decision sends for, from the
// lane of the worker whose turn it is (origin); cur is the worker that
// failed. A route whose worker is not configured, or not registered,
// becomes the category's stop route.
func (rt *runner) resolve(origin, cur entry, r *Repair) entry {
	d := r.Remedy
	if !d.Retry {
		return entry{}
	}
	var what string
	switch d.Route {
	case failure.RouteSlowLoop:
		what = "research"
	case failure.RouteReauth:
		what = "reauth"
	case failure.RouteFailover:
		what = "failover"
	default: // fast loop, backoff, retry with jitter: the same worker again
		r.Next = cur.id
		return cur
	}
	name := rt.rc.lanes[origin.id].Helpers[d.Route]
	if e, ok := rt.byID[name]; ok && name != "" {
		r.Next = name
		return e
	}
	stop := failure.RemedyFor(r.Failure, 0, 0) // the category's route when it is not retried
	why := fmt.Sprintf("no %s worker for %s", what, origin.id)
	if name != "" {
		why = fmt.Sprintf("%s worker %q is not registered", what, name)
	}
	r.Remedy = failure.Remedy{Route: stop.Route, Loop: stop.Loop,
		Reason: d.Reason + "; " + why + ": " + string(stop.Route)}
	return entry{}
}

// failureOf types a step's failure: a refused finding is the worker's
// own mistake (FAILED_SCHEMA_INCOMPLETE, format_error), so the fast loop
// gives it back with the refusal in hand; anything else goes through
// failure.Classify.
func failureOf(werr *Error) failure.Failure {
	if werr.Code != "" && errors.Is(werr.Err, ErrFindingRefused) {
		return failure.New(failure.StatusSchemaIncomplete, werr.Err.Error()).WithCause(werr.Err)
	}
	return failure.Classify(werr.Err)
}

// stepOnce runs one step of e with its step context, records it, and
// checks the finding it reported. It returns the step's failure, if any,
// and an error when a view or the trace cannot be read.
func (rt *runner) stepOnce(ctx context.Context, e entry, round, attempt int, rep *Repair) (bool, *Error, error) {
	if err := rt.refresh(e.handle); err != nil {
		return false, nil, err
	}
	sc := &StepContext{traceID: rt.traceID, workerID: e.id, view: rt.res.View, round: round, attempt: attempt, repair: rep,
		findings: rt.res.Findings}
	if rt.on {
		ls, err := rt.lane(e.id)
		if err != nil {
			return false, nil, err
		}
		sc.state, sc.hasState = rt.state, rt.hasState
		sc.run, sc.guard, sc.grant = ls.run, ls.guard, failure.NewGrant(ls.cfg.Turns)
	}
	p, werr := rt.o.step(ctx, e, sc)
	rt.stale() // a step may write, even one that fails
	st := Step{Round: round, WorkerID: e.id, Produced: p, Attempt: attempt}
	if sc.grant != nil && len(sc.grant.Trajectory()) > 0 {
		st.Trajectory, st.GrantEnd = sc.grant.String(), sc.grant.End()
	}
	if werr == nil {
		var err error
		if werr, err = rt.checkFinding(ctx, sc, e, round); err != nil {
			return p, nil, err
		}
	}
	if werr != nil {
		werr.Round = round
		st.Err = werr
		rt.res.Errors = append(rt.res.Errors, werr)
	}
	rt.res.Steps = append(rt.res.Steps, st)
	return p, werr, nil
}

// checkFinding takes the finding a step reported: failures it reports
// become the step's failure; otherwise it is checked against the lane's
// contract, and accepted or refused.
func (rt *runner) checkFinding(ctx context.Context, sc *StepContext, e entry, round int) (*Error, error) {
	f, ok := sc.reported()
	if !ok {
		return nil, nil
	}
	f.WorkerID, f.Round = e.id, round
	if len(f.Failures) > 0 {
		if f.Failures[0].Status() == "" {
			r := refusal(reason.FindingInvalid, "", "failure 0 is untyped")
			r.WorkerID = e.id
			return r, nil
		}
		return &Error{WorkerID: e.id, Phase: PhaseFinding, Err: f.Failures[0]}, nil
	}
	var contract FindingContract
	if c := rt.rc.lanes[e.id].Contract; c != nil {
		contract = *c
	}
	ids := map[string]bool{}
	needIDs := slices.ContainsFunc(f.Assertions, func(c Assertion) bool { return len(c.Evidence) > 0 })
	if needIDs {
		recs, err := rt.records(ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			ids[r.ID] = true
		}
	}
	if r := contract.check(f, func(id string) bool { return ids[id] }); r != nil {
		r.WorkerID = e.id
		return r, nil
	}
	rt.res.Findings = append(rt.res.Findings, f)
	return nil, nil
}

// records reads the trace's records, decision records and rejected
// proposals included.
func (rt *runner) records(ctx context.Context) ([]blackboard.Record, error) {
	var h kernel.Handle
	switch {
	case rt.rc.k != nil:
		h = rt.rc.k.Handle(blackboard.RoleTool, writer)
	case len(rt.order) > 0:
		h = rt.order[0].handle
	default:
		return nil, nil
	}
	var out []blackboard.Record
	for r, err := range h.Trace(ctx, rt.traceID) {
		if err != nil {
			return nil, fmt.Errorf("orchestrator: trace %q: %w", rt.traceID, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// loopPressure is the highest loop pressure of the run's guard and the
// lanes' guards.
func (rt *runner) loopPressure() float64 {
	var p float64
	if rt.guard != nil {
		p = rt.guard.Pressure()
	}
	for _, ls := range rt.lanes {
		if ls.guard != nil {
			p = max(p, ls.guard.Pressure())
		}
	}
	return p
}

// snapshotFor is the budget snapshot a stop in worker id's lane records:
// the lane's, else the run's.
func (rt *runner) snapshotFor(id string) budget.Snapshot {
	if ls := rt.lanes[id]; ls != nil && ls.run != nil {
		return ls.run.Snapshot()
	}
	if rt.run != nil {
		return rt.run.Snapshot()
	}
	return budget.Snapshot{}
}

// stopLimit stops the run on a budget's or the loop guard's refusal,
// recording it.
func (rt *runner) stopLimit(ctx context.Context, workerID string, round int, err error) error {
	var why *budget.Refusal
	if !errors.As(err, &why) {
		why = &budget.Refusal{}
	}
	st := &Stop{WorkerID: workerID, Round: round, Reason: why}
	rt.stop, rt.end = st, EndBudgetExceeded
	if why.Code == reason.LoopDetected {
		rt.end = EndLoopDetected
	}
	if err := rt.closingState(ctx, st, round); err != nil {
		return err
	}
	kind := "round"
	if workerID != "" {
		kind = "worker:" + workerID
	}
	d, _ := budget.RefusalRecord(rt.traceID, kind, err, rt.snapshotFor(workerID))
	rt.annotate(d.Context, workerID, round)
	dr, rerr := audit.Append(ctx, rt.rc.k.Governor(), d)
	if rerr != nil {
		return rerr
	}
	st.DecisionID = dr.ID
	return nil
}

// closingState measures the functional state as the run stops.
func (rt *runner) closingState(ctx context.Context, st *Stop, round int) error {
	s, err := rt.measure(ctx, round)
	if err != nil {
		return err
	}
	st.State = s
	return nil
}

// annotate adds where a decision was taken and the functional state.
func (rt *runner) annotate(c blackboard.Payload, workerID string, round int) {
	c["round"] = round
	if workerID != "" {
		c["worker"] = workerID
	}
	if rt.hasState {
		c["functional_state"] = rt.state // audit encodes it as JSON
	}
}

// recordRepair writes the decision record of a repair decision.
func (rt *runner) recordRepair(ctx context.Context, r *Repair) error {
	f, d := r.Failure, r.Remedy
	c := blackboard.Payload{
		"attempt": r.Attempt, "category": string(f.Category()), "status": string(f.Status()),
		"retryable": f.Retryable(), "message": f.Message(),
		"route": string(d.Route), "loop": string(d.Loop), "retry": d.Retry,
	}
	if f.Legacy() {
		c["legacy"] = true
	}
	if r.Wait > 0 {
		c["wait_ms"] = r.Wait.Milliseconds()
	}
	if r.Next != "" {
		c["next"] = r.Next
	}
	rt.annotate(c, r.WorkerID, r.Round)
	if snap := rt.snapshotFor(r.WorkerID); snap.RunID != "" {
		c["budget"] = map[string]any(snap.Payload())
	}
	outcome := audit.OutcomeFailed
	if d.Route == failure.RouteEscalate {
		outcome = audit.OutcomeEscalated
	}
	dr, err := audit.Append(ctx, rt.rc.k.Governor(), audit.Entry{TraceID: rt.traceID, Kind: "worker:" + r.WorkerID,
		Outcome: outcome, Code: statusCode(f), Detail: d.Reason, Context: c})
	if err != nil {
		return err
	}
	r.DecisionID = dr.ID
	return nil
}

// statusCode is a failure's status as a code.
func statusCode(f failure.Failure) reason.Code {
	if f.Status() == "" {
		return reason.Code(failure.StatusUnknown)
	}
	return reason.Code(f.Status())
}

// stopFailure stops the run on a decision not to retry: an escalation
// commits the review action, an abort nothing.
func (rt *runner) stopFailure(ctx context.Context, r *Repair) error {
	st := &Stop{WorkerID: r.WorkerID, Round: r.Round, DecisionID: r.DecisionID}
	rt.stop, rt.end = st, EndAborted
	if err := rt.closingState(ctx, st, r.Round); err != nil {
		return err
	}
	if r.Remedy.Route != failure.RouteEscalate {
		return nil
	}
	rt.end = EndEscalated
	c := blackboard.Payload{"escalates": r.DecisionID}
	rt.annotate(c, r.WorkerID, r.Round)
	d, err := rt.rc.k.Governor().Submit(ctx, writer, kernel.Entry{TraceID: rt.traceID, Slot: blackboard.Actions,
		Kind: kernel.FallbackQueueForReview,
		Payload: blackboard.Payload{"reason": string(statusCode(r.Failure)), "worker": r.WorkerID,
			"failure": clipMessage(r.Failure.Message()), "requires_beliefs": []string{}}},
		func(d kernel.Decision, committed blackboard.Record) ([]kernel.Follow, error) {
			dr := audit.ForDecision(rt.traceID, kernel.FallbackQueueForReview, d, committed)
			dr.Context = c
			f, err := dr.Follow()
			return []kernel.Follow{f}, err
		})
	if err != nil {
		return err
	}
	if d.Committed() {
		st.ReviewID = d.CommittedID
	}
	return nil
}

// clipMessage keeps a review action's copy of a failure message short.
func clipMessage(s string) string {
	const limit = 512
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.ToValidUTF8(s[:cut], "") + "…"
}

// progressed reports whether the committed state changed between two
// views of a trace: a kind committed, retracted, or its payload changed.
// Pending proposals do not count: a proposal only changes the blackboard
// once the kernel commits it.
func progressed(before, after kernel.View) bool {
	count := func(v kernel.View) int {
		n := 0
		for _, kinds := range v.Committed {
			n += len(kinds)
		}
		return n
	}
	if count(before) != count(after) {
		return true
	}
	for slot, kinds := range after.Committed {
		for kind, p := range kinds {
			q, ok := before.Committed[slot][kind]
			if !ok || !reflect.DeepEqual(p, q) {
				return true
			}
		}
	}
	return false
}

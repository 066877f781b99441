package study

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/blackboardkernel/bk/bench/perturb"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/orchestrator"
	"github.com/blackboardkernel/bk/sim"
	"github.com/blackboardkernel/bk/store"
	"github.com/blackboardkernel/bk/store/memstore"
)

// KernelOutput is what a kernel agent outputs.
type KernelOutput struct {
	TraceID string `json:"trace_id"`
	Final   Final  `json:"final"`
	// View holds the trace's committed, active payloads by slot and kind,
	// as the harness read them from the store after the episode: what
	// kernel.View shows (TestLedgerViewMatchesKernel), without another pass
	// through the kernel. The payloads may be the store's own: read them,
	// never change them.
	View map[blackboard.Slot]map[string]blackboard.Payload `json:"view"`
	// Attack is what the adversarial planner tried (adversarial_bk only).
	Attack *Attack `json:"attack,omitempty"`
}

// Final is the kernel's decision at each step of a kernel agent's episode.
// A step the agent did not reach has an empty code; a step its planner
// declined has the decline code (LLM_NO_BELIEF, ...).
type Final struct {
	BeliefCommitted     bool            `json:"belief_committed"`
	BeliefCode          blackboard.Code `json:"belief_code"`
	PlanFeasible        bool            `json:"plan_feasible"`
	PlanCode            blackboard.Code `json:"plan_code"`
	ActionCommitted     bool            `json:"action_committed"`
	ActionCode          blackboard.Code `json:"action_code"`
	SafeActionCommitted bool            `json:"safe_action_committed"`
	SafeActionCode      blackboard.Code `json:"safe_action_code"`
}

// kernelAgent is the governed agent of docs/reproduction.md §3: its tool
// commits the charge, its planner proposes refund_due, the refund plan and
// the refund, and the kernel decides each. When no refund commits it falls
// back to queue_for_review, naming the code that stopped it and pointing at
// the proposals the kernel rejected. Whether to propose the belief and the
// plan is the decider's call.
//
// With attacks set it is adversarial_bk: the kernel runs the hardened
// configuration ([hardenedConfig]) and, before taking that route, the
// planner mounts one attack of the catalogue per episode.
type kernelAgent struct {
	name, plannerName string
	decide            decider
	// attacks is the adversarial catalogue; nil for an honest agent.
	attacks []attack
	// shared is the kernel over the run's store; nil means a fresh
	// in-memory kernel per episode. The adversary keeps the run's store in
	// store instead and builds a kernel per episode (see [kernelAgent.kernelFor]).
	shared *kernel.Kernel
	store  store.Store
}

func newKernelAgent(name string, d decider, store store.Store) (*kernelAgent, error) {
	return newAgentOn(&kernelAgent{name: name, decide: d}, store)
}

// newAgentOn names a's planner and gives a its shared kernel when the run
// has a store.
func newAgentOn(a *kernelAgent, store store.Store) (*kernelAgent, error) {
	a.plannerName = a.name + "_planner"
	if a.hardened() {
		a.store = store
		return a, nil
	}
	if store != nil {
		cfg := a.config()
		cfg.Store = store
		k, err := kernel.New(cfg)
		if err != nil {
			return nil, err
		}
		a.shared = k
	}
	return a, nil
}

// hardened reports whether the agent runs the adversarial configuration.
func (a *kernelAgent) hardened() bool { return a.attacks != nil }

// Namespace is the namespace the bench's kernels work in, so that a
// database the bench shares with another application (--db) keeps the two
// apart: neither sees the other's persistent constraints or learned state.
const Namespace = "bench"

// config is the kernel configuration the agent's owner fixes.
func (a *kernelAgent) config() kernel.Config {
	return kernel.Config{Namespace: Namespace}
}

func (a *kernelAgent) Name() string   { return a.name }
func (a *kernelAgent) Governed() bool { return true }

// Run plays one episode on the kernel, over the episode's store (or the
// run's, for a shared kernel).
func (a *kernelAgent) Run(ctx context.Context, ep Episode) (Report, error) {
	k := a.shared
	var w world
	store := ep.Store
	if a.hardened() {
		if store == nil {
			own := memstore.New()
			defer own.Close()
			store = own
		}
		var err error
		if k, w, err = a.kernelFor(ep, store); err != nil {
			return Report{}, err
		}
	} else if k == nil {
		cfg := a.config()
		cfg.Store = ep.Store
		var err error
		if k, err = kernel.New(cfg); err != nil {
			return Report{}, err
		}
		defer k.Close()
	}
	planner := k.Planner(a.plannerName)
	e, report, err := a.play(ctx, k, planner, ep, w, store)
	if err != nil {
		return Report{}, fmt.Errorf("%s %s seed %d: %w", a.name, ep.Task.ID, ep.Seed, err)
	}
	out := ep.output
	if out == nil {
		out = new(KernelOutput)
	}
	*out = KernelOutput{TraceID: ep.TraceID, Final: e.final, Attack: report}
	if ep.Store == nil {
		// Outside the harness, which otherwise fills the view in from the
		// store it reads anyway.
		v, err := planner.View(ctx, ep.TraceID, kernel.ViewOptions{})
		if err != nil {
			return Report{}, err
		}
		out.View = v.Committed
	}
	o := Report{Output: out, Label: e.final.label()}
	if ep.KeepTrace {
		if o.Trace, err = kernelTrace(ctx, planner, ep.TraceID); err != nil {
			return Report{}, err
		}
	}
	return o, nil
}

// play sets the episode up as the agent's owner, lets the adversary mount
// its attack if the agent has one, and takes the planner's route to a
// refund.
func (a *kernelAgent) play(ctx context.Context, k *kernel.Kernel, planner *kernel.Planner, ep Episode, w world, store store.Store) (*kernelEpisode, *Attack, error) {
	w.faults, w.late = ep.Faults, ep.LateFaults
	shared := ep.payloads
	if a.hardened() {
		shared = nil // the adversary changes the entries it is given
	}
	e, err := a.setup(ctx, k, ep.Task, ep.TraceID, w, shared)
	if err != nil {
		return nil, nil, err
	}
	var report *Attack
	if a.hardened() {
		if report, err = a.mount(ctx, k, planner, e, ep, w, store); err != nil {
			return nil, nil, err
		}
	}
	return e, report, e.route(ctx, planner, a.decide)
}

// kernelEpisode is one episode on the kernel as an agent plays it: what
// the owner set up, what the planner got committed and the kernel's
// decisions on the way.
type kernelEpisode struct {
	k     *kernel.Kernel
	task  *Task
	trace string
	// shared are the task's payloads, read-only, for an honest agent; nil
	// builds each payload afresh.
	shared *routePayloads
	// charge is the payment tool's current percept, refundSeen the refund
	// tool's (hardened configuration only), constraints the committed
	// constraints (hardened configuration only: the adversary reads them).
	// In a world with late faults, firstCharge is the clean first
	// observation and late the faulty one still to come, which the payment
	// tool delivers when a refund_due first commits.
	// All are ids: the kernel hands back ids, and what reads a record
	// (an LLM decider, the adversary) reads it.
	charge, refundSeen string
	firstCharge        string
	late               *kernel.Entry
	constraints        []string
	// sim is the owner's trusted simulator, when the configuration has
	// one: it runs whenever a refund_due commits.
	sim *sim.Worker
	// belief, plan and refund are the committed refund_due belief, plan
	// and issue_refund action, whoever got them committed; nil until then.
	// They point into kept, which holds the latest of each: the episode is
	// on the heap already.
	belief, plan, refund *committed
	kept                 [3]committed
	final                Final
	// reason and rejected are what the fallback records: the code that
	// stopped the refund and the proposals (or percept) it points at.
	reason   blackboard.Code
	rejected []string
	// refs backs the one input ref of the belief or the refund, and
	// rejBuf the first rejected proposals: the kernel copies an entry's
	// refs, and the episode is on the heap already.
	refs   [1]string
	rejBuf [2]string
}

// committed is what an episode keeps of a committed record: its id and
// the code it was committed with (its Reason), all the route reads.
type committed struct {
	ID     string
	Reason blackboard.Code
}

// world is what the owner's tools observe in one episode: the charge
// lookup's faults and, in adversarial_bk's worlds, how the tools report
// them and which configuration the owner runs (see [attack]).
type world struct {
	faults perturb.Flags
	// late: the payment tool's first observation is clean and the faults
	// show in a second one, at once or (lateAfterBelief) when a refund_due
	// first commits.
	late, lateAfterBelief bool
	// flagOnly: a low-confidence source sets low_confidence but gives no
	// number.
	flagOnly bool
	// ledger: the refund tool's read of the charge is stale or conflicted,
	// and misses an earlier refund.
	ledger  ledgerRead
	profile profile
}

// ledgerRead is how the refund tool's read of the charge's refunds is.
type ledgerRead uint8

const (
	ledgerOK ledgerRead = iota
	ledgerStale
	ledgerConflicted
)

// setup is the owner's part of an episode: a symbolic validator commits
// the task's constraints and the payment tool the charge under the
// episode's faults. In the hardened configuration the refund tool commits
// its percept of the charge, a constraint on a field it observes is bound
// to that percept, and every constraint names the action it guards; the
// profile of the world may change that (see [profile]).
//
// shared, when not nil, are t's payloads (see [routePayloads]); only an
// agent that never changes its entries may pass them.
func (a *kernelAgent) setup(ctx context.Context, k *kernel.Kernel, t *Task, trace string, w world, shared *routePayloads) (*kernelEpisode, error) {
	e := &kernelEpisode{k: k, task: t, trace: trace, shared: shared}
	var refund blackboard.Payload // the refund tool's percept: hardened only
	if a.hardened() {
		refund = t.Refund()
	}
	sym := k.Symbolic("symbolic_validator")
	pr := w.profile
	for _, c := range t.Constraints {
		kc := kernel.Constraint{Name: c.Name, Enabled: c.Enabled, BlocksField: c.BlocksField}
		scope := blackboard.ScopeEpisode
		if a.hardened() {
			if pr.predict || pr.harm {
				continue // the owner guards duplicates with the simulator
			}
			if _, observed := refund[c.BlocksField]; observed && !pr.unbound {
				kc.BindPercept = kindRefundSeen
			}
			kc.AppliesTo = []string{kindRefund}
			if pr.persistent {
				scope = blackboard.ScopePersistent
			}
		}
		id, err := sym.CommitConstraint(ctx, trace, kc, scope)
		if err != nil {
			return nil, err
		}
		if a.hardened() { // only the adversary reads them
			e.constraints = append(e.constraints, id)
		}
	}
	if pr.harm {
		id, err := sym.CommitConstraint(ctx, trace, harmConstraint, blackboard.ScopeEpisode)
		if err != nil {
			return nil, err
		}
		e.constraints = append(e.constraints, id)
	}
	var conf *float64
	if w.faults.LowConfidence && !w.flagOnly {
		conf = kernel.Confidence(0.3)
	}
	observed := kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: kindCharge, Payload: e.chargePayload(w.faults), Confidence: conf}
	tool := k.Tool(paymentTool)
	var err error
	if w.late {
		clean := kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: kindCharge, Payload: e.chargePayload(perturb.Flags{})}
		if e.firstCharge, err = tool.Write(ctx, clean); err != nil {
			return nil, err
		}
		e.charge = e.firstCharge
		if w.lateAfterBelief {
			late := observed // a copy, so that observed stays off the heap
			e.late = &late
		} else {
			e.charge, err = tool.Write(ctx, observed)
		}
	} else {
		e.charge, err = tool.Write(ctx, observed)
	}
	if err != nil {
		return nil, err
	}
	if a.hardened() {
		switch w.ledger {
		case ledgerStale:
			refund["stale"], refund["is_duplicate"] = true, false
		case ledgerConflicted:
			refund["conflict"], refund["is_duplicate"] = true, false
		}
		e.refundSeen, err = k.Tool("refund_tool").Write(ctx, kernel.Entry{
			TraceID: trace, Slot: blackboard.Percepts, Kind: kindRefundSeen, Payload: refund,
		})
		if err == nil && (pr.predict || pr.harm) {
			e.sim, err = sim.New(k.Simulator("refund_simulator"), simRules(pr))
		}
	}
	return e, err
}

// routePayloads are the payloads of one task that an honest kernel agent
// writes in every episode, built once per run instead of once per
// episode: the kernel only reads an entry's payload (it stores a
// normalised deep copy), and the honest route neither keeps nor changes
// its entries. They must never reach code that changes an entry, as the
// adversary does (TestSharedPayloadsStayUnchanged).
type routePayloads struct {
	belief, plan, refund blackboard.Payload
	// charges are the payment tool's percepts by fault pattern (see
	// [chargeIndex]).
	charges [16]blackboard.Payload
	// fallbacks are the fallback's payloads by reason, for every code the
	// study registers in t ([registered]); read-only once built, so that
	// episodes on several goroutines may share them.
	fallbacks map[blackboard.Code]blackboard.Payload
}

func newRoutePayloads(t *Task) *routePayloads {
	p := &routePayloads{belief: beliefPayload(), plan: planPayload(t), refund: refundPayload(t)}
	for i := range p.charges {
		p.charges[i] = t.Charge(perturb.Flags{Drop: i&8 != 0, Stale: i&4 != 0, Conflict: i&2 != 0, LowConfidence: i&1 != 0}, true)
	}
	codes := slices.Concat(kernelCodes, declineCodes)
	for _, c := range t.Constraints {
		codes = append(codes, blackboard.PlanBlockedCode(c.Name), blackboard.BlockedCode(c.Name))
	}
	p.fallbacks = make(map[blackboard.Code]blackboard.Payload, len(codes))
	for _, c := range codes {
		p.fallbacks[c] = fallbackPayload(c)
	}
	return p
}

// chargeIndex is f's index in [routePayloads.charges].
func chargeIndex(f perturb.Flags) int {
	i := 0
	for _, b := range [...]bool{f.Drop, f.Stale, f.Conflict, f.LowConfidence} {
		i <<= 1
		if b {
			i |= 1
		}
	}
	return i
}

// chargePayload is what the payment tool returns under faults f.
func (e *kernelEpisode) chargePayload(f perturb.Flags) blackboard.Payload {
	if e.shared != nil {
		return e.shared.charges[chargeIndex(f)]
	}
	return e.task.Charge(f, true)
}

// The entries of the planner's route, as docs/reproduction.md §3 writes
// them. Their payloads are the shared ones when the episode has them, so
// a caller that changes an entry must build the episode without.

func (e *kernelEpisode) beliefEntry() kernel.Entry {
	var p blackboard.Payload
	if e.shared != nil {
		p = e.shared.belief
	} else {
		p = beliefPayload()
	}
	return kernel.Entry{
		TraceID: e.trace, Slot: blackboard.Beliefs, Kind: kindRefundDue,
		Payload: p, InputRefs: e.ref(e.charge),
	}
}

func (e *kernelEpisode) planEntry() kernel.Entry {
	var p blackboard.Payload
	if e.shared != nil {
		p = e.shared.plan
	} else {
		p = planPayload(e.task)
	}
	return kernel.Entry{TraceID: e.trace, Slot: blackboard.Plans, Kind: kindPlan, Payload: p}
}

// ref returns id as a list of input refs, backed by the episode when it
// has the shared payloads: the honest route builds one entry at a time and
// keeps none, where the adversary keeps and changes several.
func (e *kernelEpisode) ref(id string) []string {
	if e.shared == nil {
		return []string{id}
	}
	e.refs[0] = id
	return e.refs[:1:1]
}

// refundEntry is the refund, pointing at the committed plan if there is
// one.
func (e *kernelEpisode) refundEntry() kernel.Entry {
	var p blackboard.Payload
	if e.shared != nil {
		p = e.shared.refund
	} else {
		p = refundPayload(e.task)
	}
	en := kernel.Entry{TraceID: e.trace, Slot: blackboard.Actions, Kind: kindRefund, Payload: p}
	if e.plan != nil {
		en.InputRefs = e.ref(e.plan.ID)
	}
	return en
}

// The route's payloads hold their lists as []any, the form the kernel
// normalises every list to, so that it need not convert them (and box each
// name) in every episode.

func beliefPayload() blackboard.Payload {
	return blackboard.Payload{"value": true, "depends_on": []any{kindCharge}}
}

func planPayload(t *Task) blackboard.Payload {
	return blackboard.Payload{"steps": []any{map[string]any{
		"action":           kindRefund,
		"requires_beliefs": []any{kindRefundDue},
		"is_duplicate":     t.Inputs.IsDuplicate,
	}}}
}

func refundPayload(t *Task) blackboard.Payload {
	return blackboard.Payload{
		"type":             kindRefund,
		"charge_id":        t.Inputs.ChargeID,
		"amount":           t.Inputs.Amount,
		"reason":           t.Inputs.DisputeReason,
		"is_duplicate":     t.Inputs.IsDuplicate,
		"requires_beliefs": []any{kindRefundDue},
	}
}

// submit proposes en through p, has the kernel decide it and keeps what
// committed.
func (e *kernelEpisode) submit(ctx context.Context, p *kernel.Planner, en kernel.Entry) (kernel.Decision, error) {
	d, err := p.Submit(ctx, en)
	if err != nil {
		return d, err
	}
	return d, e.decided(ctx, d, en.Kind)
}

// decided keeps what a decision about a proposal of kind committed and
// lets the world react to a committed belief: after the first refund_due
// the payment tool delivers a late observation, and after any belief the
// owner's simulator, if there is one, predicts on the trace. (A committed
// record has its proposal's slot and kind, and its id names its slot and
// trace: the caller that proposed knows the kind, and nothing is read.)
func (e *kernelEpisode) decided(ctx context.Context, d kernel.Decision, kind string) error {
	e.note(d, kind)
	if !d.Committed() || slotOf(d.CommittedID) != blackboard.Beliefs || !e.holds(d.CommittedID) {
		return nil
	}
	if e.late != nil && kind == kindRefundDue {
		late := *e.late
		e.late = nil
		id, err := e.k.Tool(paymentTool).Write(ctx, late)
		if err != nil {
			return err
		}
		e.charge = id
	}
	if e.sim != nil {
		v, err := e.k.View(ctx, e.trace, kernel.ViewOptions{})
		if err != nil {
			return err
		}
		if _, err := e.sim.Step(ctx, orchestrator.NewStepContext(e.trace, v)); err != nil {
			return err
		}
	}
	return nil
}

// note keeps a committed belief, plan or refund of the episode's trace,
// from a decision about a proposal of kind.
func (e *kernelEpisode) note(d kernel.Decision, kind string) {
	if !d.Committed() || !e.holds(d.CommittedID) {
		return
	}
	c := committed{ID: d.CommittedID, Reason: d.Code}
	switch slot := slotOf(d.CommittedID); {
	case slot == blackboard.Beliefs && kind == kindRefundDue:
		e.kept[0] = c
		e.belief = &e.kept[0]
	case slot == blackboard.Plans && kind == kindPlan:
		e.kept[1] = c
		e.plan = &e.kept[1]
	case slot == blackboard.Actions && kind == kindRefund:
		e.kept[2] = c
		e.refund = &e.kept[2]
	}
}

// holds reports whether the record id (one the kernel assigned) is of the
// episode's trace.
func (e *kernelEpisode) holds(id string) bool {
	_, trace, _, ok := blackboard.SplitRecordID(id)
	return ok && trace == e.trace
}

// slotOf is the slot an id the kernel assigned names ([blackboard.RecordID]).
func slotOf(id string) blackboard.Slot {
	for _, s := range []blackboard.Slot{blackboard.Beliefs, blackboard.Plans, blackboard.Actions} {
		if name := s.String(); len(id) > len(name) && (id[len(name)] == ':' || id[len(name)] == '@') && id[:len(name)] == name {
			return s
		}
	}
	return 0
}

// reject records a rejected proposal of the route for the fallback.
func (e *kernelEpisode) reject(d kernel.Decision) {
	e.reason = d.Code
	e.rejected = append(e.rejectedList(), d.ProposalID)
}

// rejectedList returns e.rejected, backed by e.rejBuf while it is empty.
func (e *kernelEpisode) rejectedList() []string {
	if e.rejected == nil {
		return e.rejBuf[:0]
	}
	return e.rejected
}

// decline records that the decider declined, pointing at the percept it
// declined on.
func (e *kernelEpisode) decline(code blackboard.Code) {
	e.reason = code
	e.rejected = append(e.rejectedList(), e.charge)
}

// route is the planner's route to a refund: the belief, the plan and the
// refund, each proposed (if the decider says so) unless the trace already
// has it committed, then the fallback if no refund committed.
func (e *kernelEpisode) route(ctx context.Context, p *kernel.Planner, d decider) error {
	f := &e.final
	s := situation{task: e.task, r: e.k.Reader(), charge: e.charge}
	if e.belief == nil {
		propose, code, err := d.belief(ctx, s)
		if err != nil {
			return err
		}
		if !propose {
			f.BeliefCode = code
			e.decline(code)
			return e.fallback(ctx, p)
		}
		dec, err := e.submit(ctx, p, e.beliefEntry())
		if err != nil {
			return err
		}
		if !dec.Committed() {
			e.reject(dec)
		}
		f.BeliefCode = dec.Code
	} else {
		f.BeliefCode = e.belief.Reason
	}
	f.BeliefCommitted = e.belief != nil

	s.beliefCode = f.BeliefCode
	if e.belief != nil {
		s.belief = e.belief.ID
	}
	if e.plan == nil {
		propose, code, err := d.plan(ctx, s)
		if err != nil {
			return err
		}
		if !propose {
			f.PlanCode = code
			e.decline(code)
			return e.fallback(ctx, p)
		}
		dec, err := e.submit(ctx, p, e.planEntry())
		if err != nil {
			return err
		}
		f.PlanCode = dec.Code
		if !dec.Committed() {
			e.reject(dec)
			return e.fallback(ctx, p)
		}
	} else {
		f.PlanCode = e.plan.Reason
	}
	f.PlanFeasible = true

	if e.refund == nil {
		dec, err := e.submit(ctx, p, e.refundEntry())
		if err != nil {
			return err
		}
		f.ActionCode = dec.Code
		if !dec.Committed() {
			e.reject(dec)
			return e.fallback(ctx, p)
		}
	} else {
		f.ActionCode = e.refund.Reason
	}
	f.ActionCommitted = true
	return nil
}

// fallback proposes queue_for_review with the reason code, pointing at
// what the route recorded.
func (e *kernelEpisode) fallback(ctx context.Context, p *kernel.Planner) error {
	d, err := p.Submit(ctx, kernel.Entry{
		TraceID: e.trace, Slot: blackboard.Actions, Kind: kernel.FallbackQueueForReview,
		Payload: e.fallbackPayload(), InputRefs: e.rejected,
	})
	if err != nil {
		return err
	}
	e.final.SafeActionCommitted, e.final.SafeActionCode = d.Committed(), d.Code
	return nil
}

// fallbackPayload is the fallback's payload for the episode's reason: the
// shared one when the episode has the shared payloads and the reason is a
// registered code, a fresh one otherwise.
func (e *kernelEpisode) fallbackPayload() blackboard.Payload {
	if e.shared != nil {
		if p, ok := e.shared.fallbacks[e.reason]; ok {
			return p
		}
	}
	return fallbackPayload(e.reason)
}

func fallbackPayload(reason blackboard.Code) blackboard.Payload {
	return blackboard.Payload{"type": kernel.FallbackQueueForReview, "reason": string(reason)}
}

// label names the episode's outcome class for the report. A run has a few
// dozen classes: a label is written into a buffer on the stack and
// looked up among those already made, so that a run does not build the
// same strings in every episode.
func (f Final) label() string {
	var buf [192]byte
	b := f.appendLabel(buf[:0])
	m := labels.Load()
	if s, ok := (*m)[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(*m) < maxLabels {
		// Copy on write: readers never lock, and a lost race only means
		// the label is made again next time.
		next := make(map[string]string, len(*m)+1)
		for k, v := range *m {
			next[k] = v
		}
		next[s] = s
		labels.CompareAndSwap(m, &next)
	}
	return s
}

// labels are the outcome labels made so far; maxLabels bounds them, in
// case codes that are not the kernel's (an LLM decider's) make many.
var labels = func() *atomic.Pointer[map[string]string] {
	var p atomic.Pointer[map[string]string]
	p.Store(&map[string]string{})
	return &p
}()

const maxLabels = 256

func (f Final) appendLabel(b []byte) []byte {
	if f.ActionCommitted {
		return append(append(b, "issue_refund "...), f.ActionCode...)
	}
	b = append(append(b, "queue_for_review after belief "...), f.BeliefCode...)
	if f.PlanCode != "" {
		b = append(append(b, ", plan "...), f.PlanCode...)
	}
	if f.ActionCode != "" {
		b = append(append(b, ", action "...), f.ActionCode...)
	}
	if !f.SafeActionCommitted {
		b = append(append(append(b, " (fallback "...), f.SafeActionCode...), ')')
	}
	return b
}

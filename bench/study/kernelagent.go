package study

import (
	"context"
	"fmt"

	"github.com/blackboardkernel/bk/bench/perturb"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/orchestrator"
	"github.com/blackboardkernel/bk/reason"
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
	BeliefCommitted     bool        `json:"belief_committed"`
	BeliefCode          reason.Code `json:"belief_code"`
	PlanFeasible        bool        `json:"plan_feasible"`
	PlanCode            reason.Code `json:"plan_code"`
	ActionCommitted     bool        `json:"action_committed"`
	ActionCode          reason.Code `json:"action_code"`
	SafeActionCommitted bool        `json:"safe_action_committed"`
	SafeActionCode      reason.Code `json:"safe_action_code"`
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
	planner := k.Proposer(blackboard.RolePlanner, a.plannerName)
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
		v, err := planner.View(ctx, ep.TraceID, false)
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
func (a *kernelAgent) play(ctx context.Context, k *kernel.Kernel, planner *kernel.Proposer, ep Episode, w world, store store.Store) (*kernelEpisode, *Attack, error) {
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
	sim orchestrator.Worker
	// belief, plan and refund are the committed refund_due belief, plan
	// and issue_refund action, whoever got them committed; nil until then.
	// They point into kept, which holds the latest of each: the episode is
	// on the heap already.
	belief, plan, refund *committed
	kept                 [3]committed
	final                Final
	// reason and rejected are what the fallback records: the code that
	// stopped the refund and the proposals (or percept) it points at.
	reason   reason.Code
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
	Reason reason.Code
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
		conf = new(0.3)
	}
	observed := kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: kindCharge, Payload: e.chargePayload(w.faults), Confidence: conf}
	tool := k.Handle(blackboard.RoleTool, paymentTool)
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
		e.refundSeen, err = k.Handle(blackboard.RoleTool, "refund_tool").Write(ctx, kernel.Entry{
			TraceID: trace, Slot: blackboard.Percepts, Kind: kindRefundSeen, Payload: refund,
		})
		if err == nil && (pr.predict || pr.harm) {
			e.sim, err = sim.New(k.Proposer(blackboard.RoleSimulator, "refund_simulator"), simRules(pr))
		}
	}
	return e, err
}

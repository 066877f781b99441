package study

import (
	"context"
	"fmt"

	"github.com/blackboardkernel/bk/kernel"
)

// KernelOutput is what a kernel agent outputs.
type KernelOutput struct {
	TraceID string `json:"trace_id"`
	Final   Final  `json:"final"`
	// View holds the trace's committed payloads by slot and kind.
	View map[kernel.Slot]map[string]kernel.Payload `json:"view"`
	// Attack describes what an adversarial agent tried, if it is one.
	Attack any `json:"attack,omitempty"`
}

// Final is the kernel's decision at each step of a kernel agent's episode.
// A step the agent did not reach has an empty code; a step its planner
// declined has the decline code (LLM_NO_BELIEF, ...).
type Final struct {
	BeliefCommitted     bool        `json:"belief_committed"`
	BeliefCode          kernel.Code `json:"belief_code"`
	PlanFeasible        bool        `json:"plan_feasible"`
	PlanCode            kernel.Code `json:"plan_code"`
	ActionCommitted     bool        `json:"action_committed"`
	ActionCode          kernel.Code `json:"action_code"`
	SafeActionCommitted bool        `json:"safe_action_committed"`
	SafeActionCode      kernel.Code `json:"safe_action_code"`
}

// kernelAgent is the governed agent of REPRODUCTION.md §3: its tool
// commits the charge, its planner proposes refund_due, the refund plan and
// the refund, and the kernel decides each. When no refund commits it falls
// back to queue_for_review, naming the code that stopped it and pointing at
// the proposals the kernel rejected. Whether to propose the belief and the
// plan is the decider's call.
type kernelAgent struct {
	name   string
	decide decider
	// shared is the kernel over the run's store; nil means a fresh
	// in-memory kernel per episode.
	shared *kernel.Kernel
}

func newKernelAgent(name string, d decider, store kernel.Store) (*kernelAgent, error) {
	a := &kernelAgent{name: name, decide: d}
	if store != nil {
		k, err := kernel.New(kernel.WithStore(store))
		if err != nil {
			return nil, err
		}
		a.shared = k
	}
	return a, nil
}

func (a *kernelAgent) Name() string   { return a.name }
func (a *kernelAgent) Governed() bool { return true }

// Run plays one episode on the kernel and audits it.
func (a *kernelAgent) Run(ctx context.Context, ep Episode) (Outcome, error) {
	k := a.shared
	if k == nil {
		var err error
		if k, err = kernel.New(); err != nil {
			return Outcome{}, err
		}
		defer k.Close()
	}
	planner := k.Planner(a.name + "_planner")
	final, err := a.play(ctx, k, planner, ep)
	if err != nil {
		return Outcome{}, fmt.Errorf("%s %s seed %d: %w", a.name, ep.Task.ID, ep.Seed, err)
	}
	v, err := planner.View(ctx, ep.TraceID, kernel.ViewOptions{})
	if err != nil {
		return Outcome{}, err
	}
	f, err := auditKernel(ctx, planner, ep.Task, ep.TraceID, v)
	if err != nil {
		return Outcome{}, err
	}
	o := Outcome{
		Output:  &KernelOutput{TraceID: ep.TraceID, Final: final, View: v.Committed},
		Metrics: f.metrics(),
		Label:   final.label(),
	}
	if ep.KeepTrace {
		if o.Trace, err = kernelTrace(ctx, planner, ep.TraceID); err != nil {
			return Outcome{}, err
		}
	}
	return o, nil
}

// play runs the episode's steps and returns the kernel's decisions.
func (a *kernelAgent) play(ctx context.Context, k *kernel.Kernel, planner *kernel.Planner, ep Episode) (Final, error) {
	t, trace := ep.Task, ep.TraceID
	var f Final
	sym := k.Symbolic("symbolic_validator")
	for _, c := range t.Constraints {
		_, err := sym.CommitConstraint(ctx, trace, kernel.Constraint{Name: c.Name, Enabled: c.Enabled, BlocksField: c.BlocksField}, kernel.ScopeEpisode)
		if err != nil {
			return f, err
		}
	}
	var conf *float64
	if ep.Faults.LowConfidence {
		conf = kernel.Confidence(0.3)
	}
	percept, err := k.Tool("payment_tool").Write(ctx, kernel.Entry{
		TraceID: trace, Slot: kernel.Percepts, Kind: kindCharge, Payload: t.Charge(ep.Faults, true), Confidence: conf,
	})
	if err != nil {
		return f, err
	}

	// The fallback names the code that stopped the refund and points at
	// the proposals the kernel rejected (or, if the planner declined, at
	// the percept it declined on).
	var reason kernel.Code
	var rejected []string
	reject := func(d kernel.Decision) {
		reason = d.Code
		rejected = append(rejected, d.Proposal.ID)
	}
	decline := func(code kernel.Code) {
		reason = code
		rejected = append(rejected, percept.ID)
	}

	s := situation{task: t, charge: percept.Payload, confidence: conf}
	propose, code, err := a.decide.belief(ctx, s)
	if err != nil {
		return f, err
	}
	if !propose {
		f.BeliefCode = code
		decline(code)
		return f, a.fallback(ctx, planner, trace, &f, reason, rejected)
	}
	d, err := planner.Submit(ctx, kernel.Entry{
		TraceID: trace, Slot: kernel.Beliefs, Kind: kindRefundDue,
		Payload:   kernel.Payload{kernel.KeyValue: true, kernel.KeyDependsOn: []string{kindCharge}},
		InputRefs: []string{percept.ID},
	})
	if err != nil {
		return f, err
	}
	f.BeliefCommitted, f.BeliefCode = d.Committed(), d.Code
	if !d.Committed() {
		reject(d)
	}

	s.beliefCode = d.Code
	if propose, code, err = a.decide.plan(ctx, s); err != nil {
		return f, err
	}
	if !propose {
		f.PlanCode = code
		decline(code)
		return f, a.fallback(ctx, planner, trace, &f, reason, rejected)
	}
	needs := []string{kindRefundDue}
	d, err = planner.Submit(ctx, kernel.Entry{
		TraceID: trace, Slot: kernel.Plans, Kind: kindPlan,
		Payload: kernel.Payload{kernel.KeySteps: []any{map[string]any{
			kernel.KeyAction:          kindRefund,
			kernel.KeyRequiresBeliefs: needs,
			"is_duplicate":            t.Inputs.IsDuplicate,
		}}},
	})
	if err != nil {
		return f, err
	}
	f.PlanFeasible, f.PlanCode = d.Committed(), d.Code
	if !d.Committed() {
		reject(d)
		return f, a.fallback(ctx, planner, trace, &f, reason, rejected)
	}

	d, err = planner.Submit(ctx, kernel.Entry{
		TraceID: trace, Slot: kernel.Actions, Kind: kindRefund,
		Payload: kernel.Payload{
			"type":                    kindRefund,
			"charge_id":               t.Inputs.ChargeID,
			"amount":                  t.Inputs.Amount,
			"reason":                  t.Inputs.DisputeReason,
			"is_duplicate":            t.Inputs.IsDuplicate,
			kernel.KeyRequiresBeliefs: needs,
		},
		InputRefs: []string{d.Record.ID}, // the feasible plan
	})
	if err != nil {
		return f, err
	}
	f.ActionCommitted, f.ActionCode = d.Committed(), d.Code
	if d.Committed() {
		return f, nil
	}
	reject(d)
	return f, a.fallback(ctx, planner, trace, &f, reason, rejected)
}

// fallback proposes queue_for_review with the reason code.
func (a *kernelAgent) fallback(ctx context.Context, planner *kernel.Planner, trace string, f *Final, reason kernel.Code, refs []string) error {
	d, err := planner.Submit(ctx, kernel.Entry{
		TraceID: trace, Slot: kernel.Actions, Kind: kernel.FallbackQueueForReview,
		Payload:   kernel.Payload{"type": kernel.FallbackQueueForReview, kernel.KeyReason: string(reason)},
		InputRefs: refs,
	})
	if err != nil {
		return err
	}
	f.SafeActionCommitted, f.SafeActionCode = d.Committed(), d.Code
	return nil
}

// label names the episode's outcome class for the report.
func (f Final) label() string {
	if f.ActionCommitted {
		return "issue_refund " + string(f.ActionCode)
	}
	s := "queue_for_review after belief " + string(f.BeliefCode)
	if f.PlanCode != "" {
		s += ", plan " + string(f.PlanCode)
	}
	if f.ActionCode != "" {
		s += ", action " + string(f.ActionCode)
	}
	if !f.SafeActionCommitted {
		s += " (fallback " + string(f.SafeActionCode) + ")"
	}
	return s
}

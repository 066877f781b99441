package llm

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/advisor"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/orchestrator"
	"github.com/blackboardkernel/bk/reason"
)

// Schema is the governed schema of a [Worker] (paper §10.6): every name,
// dependency and payload field the worker proposes comes from here, never
// from the model.
//
// The worker proposes
//
//	belief   Belief {value: true, depends_on: DependsOn}
//	plan     Plan   {steps: [{...Fields, action: Action, requires_beliefs: [Belief]}]}
//	action   Action {...Fields, type: Action, requires_beliefs: [Belief]}
//	fallback Fallback {type: Fallback, reason: <the code that stopped the episode>}
//
// For the paper's refund study: Belief "refund_due", DependsOn ["charge"],
// Plan "action_plan", Action "issue_refund", Fields returning charge_id,
// amount, reason and is_duplicate, Fallback "queue_for_review".
type Schema struct {
	// Task describes the task to the model.
	Task string
	// Belief is the belief kind; DependsOn the percept kinds it rests on.
	Belief    string
	DependsOn []string
	// Plan is the plan kind; Action the action type its one step takes.
	Plan   string
	Action string
	// Fields returns the episode's domain fields, copied into the plan step
	// and the action payload (the keys action, type and requires_beliefs
	// are the worker's and are overwritten). It is called once the belief
	// has committed, with the view the episode started from; it must not
	// modify it and must be safe for concurrent use. Nil means no fields.
	Fields func(v kernel.View) blackboard.Payload
	// Fallback is the safe fallback action type; it must be registered with
	// the kernel as a safe fallback. Default
	// [kernel.FallbackQueueForReview].
	Fallback string
	// ModelSteps is UNGOVERNED and off by default: it asks the model to
	// write the plan's steps itself ({"propose": true, "steps":
	// [{"action": ..., "requires_beliefs": [...]}]}), and the worker then
	// proposes the plan with those steps instead of the schema's. It
	// exists to reproduce the bypass the paper observed (steps with empty
	// requires_beliefs), which the kernel rejects as
	// PLAN_UNGROUNDED_ACTION. Do not use it in production.
	ModelSteps bool
}

// Report is what one episode of a [Worker] decided.
type Report struct {
	// Belief, Plan and Action are the codes of each stage: the kernel's
	// decision (COMMITTED, PLAN_FEASIBLE or a rejection code), or
	// [reason.LLMNoBelief], [reason.LLMNoPlan] when the model declined, [reason.LLMError]
	// when it could not be asked (the endpoint failed after its retries)
	// or its answer was not advice. A stage not reached has "".
	Belief, Plan, Action reason.Code
	// Reason is the code recorded on the fallback; "" when the action
	// committed.
	Reason reason.Code
	// Detail is the model's reason or the failure text behind Reason, when
	// the model or a refused request stopped the episode: for [reason.LLMError],
	// the endpoint's error or why the answer could not be read.
	Detail string
	// Final is the committed action: the schema's action or the fallback.
	Final blackboard.Record
}

// Worker is a reusable planner worker ([orchestrator.Worker]) that lets a
// model decide whether to propose, under a governed [Schema]: the model
// answers {"propose": true|false, "reason": "..."} and nothing it writes
// reaches the blackboard (except under the ungoverned [Schema.ModelSteps]).
// In one step it asks the model about the belief and submits it; then about the plan and
// submits it; then, if the plan is feasible, submits the action. The first
// decline, rejection or model failure ends the episode in the safe
// fallback, whose reason is that code and whose input refs name the
// rejected proposal (or, for a decline, the records the model was shown),
// so the chain stays traceable.
//
// A Worker is safe for concurrent use on different traces.
type Worker struct {
	id     string
	h      *kernel.Proposer
	c      *Client
	p      advisor.Advisor
	schema Schema
}

// NewWorker returns a Worker with the given id that writes through h and
// asks the model through c. A bad argument is [ErrInvalidConfig]: an empty
// id, a nil handle or client, an empty Belief, Plan or Action, no
// DependsOn or an empty entry in it, or a Fallback equal to Action.
func NewWorker(id string, h *kernel.Proposer, c *Client, s Schema) (*Worker, error) {
	bad := func(what string) (*Worker, error) { return nil, fmt.Errorf("%w: worker: %s", ErrInvalidConfig, what) }
	switch {
	case id == "":
		return bad("empty id")
	case h == nil:
		return bad("nil planner handle")
	case c == nil:
		return bad("nil client")
	case s.Belief == "" || s.Plan == "" || s.Action == "":
		return bad("schema needs Belief, Plan and Action")
	case len(s.DependsOn) == 0:
		return bad("schema needs DependsOn")
	}
	for _, d := range s.DependsOn {
		if d == "" {
			return bad("empty DependsOn entry")
		}
	}
	if s.Fallback == "" {
		s.Fallback = kernel.FallbackQueueForReview
	}
	if s.Fallback == s.Action {
		return bad("Fallback equals Action")
	}
	s.DependsOn = append([]string(nil), s.DependsOn...)
	return &Worker{id: id, h: h, c: c, p: advisor.Advisor{Chat: c.Chat, ModelSteps: s.ModelSteps}, schema: s}, nil
}

// ID returns the worker's id.
func (w *Worker) ID() string { return w.id }

// Handle returns the planner handle the worker was built with.
func (w *Worker) Handle() kernel.Handle { return w.h }

// Reads lists the slots the worker reads: percepts, beliefs, plans, actions.
func (w *Worker) Reads() []blackboard.Slot {
	return []blackboard.Slot{blackboard.Percepts, blackboard.Beliefs, blackboard.Plans, blackboard.Actions}
}

// Writes lists the slots the worker proposes in: beliefs, plans, actions.
func (w *Worker) Writes() []blackboard.Slot {
	return []blackboard.Slot{blackboard.Beliefs, blackboard.Plans, blackboard.Actions}
}

// ShouldActivate reports whether the trace has no committed action of the
// schema's Action or Fallback type yet.
func (w *Worker) ShouldActivate(v kernel.View) bool {
	return !v.Has(blackboard.Actions, w.schema.Action) && !v.Has(blackboard.Actions, w.schema.Fallback)
}

// Step runs one episode on the step's trace, from its view (see
// [Worker.Run]); produced is true once it has written anything.
func (w *Worker) Step(ctx context.Context, s *orchestrator.StepContext) (bool, error) {
	out, err := w.run(ctx, s.TraceID(), s.View())
	return out.Belief != "", err
}

// Run reads the trace's view and runs one episode: belief, plan, then the
// action or the fallback. It returns what was decided. Declines, kernel
// rejections and model failures are outcomes, not errors. The error is
// non-nil when ctx ends (wrapping its error; the episode then may have no
// final action), when the store fails, or when the kernel refuses the
// fallback ([ErrFallbackRejected]).
func (w *Worker) Run(ctx context.Context, traceID string) (Report, error) {
	v, err := w.h.View(ctx, traceID, false)
	if err != nil {
		return Report{}, err
	}
	return w.run(ctx, traceID, v)
}

// result is what one stage ended with.
type result struct {
	code   reason.Code
	detail string
	refs   []string          // what a fallback should reference
	record blackboard.Record // the committed record, when code is OK
	root   kernel.Cause      // the root cause of a kernel refusal
}

func (w *Worker) run(ctx context.Context, traceID string, v kernel.View) (Report, error) {
	s := w.schema
	var out Report
	percepts, perceptIDs, err := w.percepts(ctx, traceID)
	if err != nil {
		return out, err
	}
	sit := advisor.Situation{Task: s.Task, Kind: s.Belief, Requires: s.DependsOn, Percepts: percepts}
	r, err := w.propose(ctx, perceptIDs,
		func(ctx context.Context) (advisor.Advice, error) { return w.p.DecideBelief(ctx, sit) },
		func(advisor.Advice) kernel.Entry {
			return kernel.Entry{TraceID: traceID, Slot: blackboard.Beliefs, Kind: s.Belief,
				Payload: blackboard.Payload{"value": true, "depends_on": strs(s.DependsOn)}}
		})
	out.Belief = r.code
	if err != nil || !r.code.OK() {
		return w.fallback(ctx, traceID, out, r, err)
	}

	belief := r.record
	requires := []string{s.Belief}
	var fields blackboard.Payload
	if s.Fields != nil {
		fields = s.Fields(v)
	}
	sit = advisor.Situation{Task: s.Task, Kind: s.Plan, Action: s.Action, Requires: requires, Percepts: percepts,
		Beliefs: []advisor.Fact{{Kind: belief.Kind, Payload: belief.Payload, Confidence: belief.Provenance.Confidence}}}
	r, err = w.propose(ctx, []string{belief.ID},
		func(ctx context.Context) (advisor.Advice, error) { return w.p.DecidePlan(ctx, sit) },
		func(vd advisor.Advice) kernel.Entry {
			steps := []any{schemaPayload(fields, "action", s.Action, requires)}
			if vd.Steps != nil { // Schema.ModelSteps: ungoverned
				steps = make([]any, len(vd.Steps))
				for i, st := range vd.Steps {
					steps[i] = map[string]any(st)
				}
			}
			return kernel.Entry{TraceID: traceID, Slot: blackboard.Plans, Kind: s.Plan,
				Payload: blackboard.Payload{"steps": steps}, InputRefs: []string{belief.ID}}
		})
	out.Plan = r.code
	if err != nil || !r.code.OK() {
		return w.fallback(ctx, traceID, out, r, err)
	}

	plan := r.record
	r, err = w.propose(ctx, nil, nil, func(advisor.Advice) kernel.Entry {
		return kernel.Entry{TraceID: traceID, Slot: blackboard.Actions, Kind: s.Action,
			Payload: schemaPayload(fields, "type", s.Action, requires), InputRefs: []string{plan.ID}}
	})
	out.Action = r.code
	if err != nil || !r.code.OK() {
		return w.fallback(ctx, traceID, out, r, err)
	}
	out.Final = r.record
	return out, nil
}

// propose asks the model (unless ask is nil) and, if it says yes, submits
// the entry built from its advice. shown are the ids of the records the
// model saw, which a decline's fallback references.
func (w *Worker) propose(ctx context.Context, shown []string,
	ask func(context.Context) (advisor.Advice, error), build func(advisor.Advice) kernel.Entry) (result, error) {
	var vd advisor.Advice
	if ask != nil {
		var err error
		if vd, err = ask(ctx); err != nil {
			return result{}, err
		}
		w.c.log.DebugContext(ctx, "llm: advice", "propose", vd.Propose, "code", string(vd.Code))
		if !vd.Propose {
			return result{code: vd.Code, detail: vd.Detail, refs: shown}, nil
		}
	}
	d, err := w.h.Submit(ctx, build(vd))
	if err != nil {
		// The kernel refused the request itself (a malformed proposal, as
		// model-written steps can be): that is a rejection with its code.
		// Anything without a code (the store, the context) is an error.
		code := kernel.CodeOf(err)
		if code == "" || ctx.Err() != nil {
			return result{}, err
		}
		return result{code: code, detail: err.Error(), refs: shown}, nil
	}
	if !d.Committed() {
		return result{code: d.Code, refs: []string{d.ProposalID}, root: d.RootCause()}, nil
	}
	// The next stage shows the model the committed record: read it.
	rec, err := w.h.Get(ctx, d.CommittedID)
	if err != nil {
		return result{}, err
	}
	return result{code: d.Code, record: rec}, nil
}

// fallback ends the episode in the safe fallback, unless err says it
// cannot go on.
func (w *Worker) fallback(ctx context.Context, traceID string, out Report, r result, err error) (Report, error) {
	if err != nil {
		return out, err
	}
	// The fallback names the root cause (STALE_EVIDENCE on the percept, not
	// the NO_COMMITTED_BELIEF it led to), so a reviewer need not dig.
	why, refs := r.code, r.refs
	if r.root.Code != "" {
		why = r.root.Code
		if r.root.Record != "" && !slices.Contains(refs, r.root.Record) {
			refs = append(slices.Clone(refs), r.root.Record)
		}
	}
	out.Reason, out.Detail = why, r.detail
	d, err := w.h.Submit(ctx, kernel.Entry{TraceID: traceID, Slot: blackboard.Actions, Kind: w.schema.Fallback,
		Payload:   blackboard.Payload{"type": w.schema.Fallback, "reason": string(why)},
		InputRefs: refs})
	if err != nil {
		return out, err
	}
	if !d.Committed() {
		return out, fmt.Errorf("%w: %q refused with %s", ErrFallbackRejected, w.schema.Fallback, d.Code)
	}
	if out.Final, err = w.h.Get(ctx, d.CommittedID); err != nil {
		return out, err
	}
	return out, nil
}

// percepts returns the committed percepts the belief rests on, and their
// ids. A missing percept is left out: the kernel will say MISSING_EVIDENCE.
func (w *Worker) percepts(ctx context.Context, traceID string) ([]advisor.Fact, []string, error) {
	var facts []advisor.Fact
	var ids []string
	for _, kind := range w.schema.DependsOn {
		rec, err := w.h.Find(ctx, traceID, blackboard.Percepts, kind)
		if errors.Is(err, blackboard.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		facts = append(facts, advisor.Fact{Kind: rec.Kind, Payload: rec.Payload, Confidence: rec.Provenance.Confidence})
		ids = append(ids, rec.ID)
	}
	return facts, ids, nil
}

// schemaPayload copies fields and sets the worker's own keys: key (action
// or type) to the action type, and requires_beliefs.
func schemaPayload(fields blackboard.Payload, key, action string, requires []string) map[string]any {
	m := make(map[string]any, len(fields)+2)
	for k, v := range fields {
		m[k] = v
	}
	m[key] = action
	m["requires_beliefs"] = strs(requires)
	return m
}

func strs(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

var _ orchestrator.Worker = (*Worker)(nil)

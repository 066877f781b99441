package study

import (
	"context"
	"sync/atomic"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/orchestrator"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/store"
)

// submit proposes en through p, has the kernel decide it and keeps what
// committed.
func (e *kernelEpisode) submit(ctx context.Context, p *kernel.Proposer, en kernel.Entry) (kernel.Decision, error) {
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
		id, err := e.k.Handle(blackboard.RoleTool, paymentTool).Write(ctx, late)
		if err != nil {
			return err
		}
		e.charge = id
	}
	if e.sim != nil {
		v, err := e.k.Reader().View(ctx, e.trace, false)
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
	_, trace, _, ok := store.SplitRecordID(id)
	return ok && trace == e.trace
}

// slotOf is the slot an id the kernel assigned names ([store.RecordID]).
func slotOf(id string) blackboard.Slot {
	for _, s := range []blackboard.Slot{blackboard.Beliefs, blackboard.Plans, blackboard.Actions} {
		if name := string(s); len(id) > len(name) && (id[len(name)] == ':' || id[len(name)] == '@') && id[:len(name)] == name {
			return s
		}
	}
	return ""
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
func (e *kernelEpisode) decline(code reason.Code) {
	e.reason = code
	e.rejected = append(e.rejectedList(), e.charge)
}

// route is the planner's route to a refund: the belief, the plan and the
// refund, each proposed (if the decider says so) unless the trace already
// has it committed, then the fallback if no refund committed.
func (e *kernelEpisode) route(ctx context.Context, p *kernel.Proposer, d decider) error {
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
func (e *kernelEpisode) fallback(ctx context.Context, p *kernel.Proposer) error {
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

func fallbackPayload(why reason.Code) blackboard.Payload {
	return blackboard.Payload{"type": kernel.FallbackQueueForReview, "reason": string(why)}
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

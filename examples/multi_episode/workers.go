package main

import (
	"context"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/orchestrator"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/worker"
)

// Names the demo's workers share.
const (
	kindTemperature = "temperature"
	beliefAnomaly   = "anomaly_detected"
	actionAlert     = "alert"
	actionReview    = kernel.FallbackQueueForReview
)

// analyst is the planner worker that reads the temperature: once a reading
// is committed it proposes the belief that there is an anomaly, resting on
// that reading, and lets the kernel decide. It proposes once per trace.
type analyst struct{ planner *kernel.Proposer }

func (a *analyst) ID() string                { return "analyst" }
func (a *analyst) Handle() kernel.Handle     { return a.planner }
func (a *analyst) Reads() []blackboard.Slot  { return []blackboard.Slot{blackboard.Percepts} }
func (a *analyst) Writes() []blackboard.Slot { return []blackboard.Slot{blackboard.Beliefs} }

func (a *analyst) ShouldActivate(v kernel.View) bool {
	return v.Has(blackboard.Percepts, kindTemperature) && !v.Has(blackboard.Beliefs, beliefAnomaly)
}

func (a *analyst) Step(ctx context.Context, sc *orchestrator.StepContext) (bool, error) {
	traceID := sc.TraceID()
	if _, done, err := worker.LastOwn(ctx, a.planner, traceID, blackboard.Beliefs, beliefAnomaly); err != nil || done {
		return false, err
	}
	_, err := a.planner.Submit(ctx, kernel.Entry{
		TraceID: traceID,
		Slot:    blackboard.Beliefs,
		Kind:    beliefAnomaly,
		Payload: blackboard.Payload{"value": true, "depends_on": []string{kindTemperature}},
	})
	return err == nil, err
}

// actuator is the planner worker that acts. It acts only once the anomaly
// belief is committed (no belief, no action): it proposes an alert, which
// the kernel gates (prediction gate, learned constraints); if the kernel
// refuses it, it proposes queue_for_review with the refusal's code.
type actuator struct{ planner *kernel.Proposer }

func (a *actuator) ID() string            { return "actuator" }
func (a *actuator) Handle() kernel.Handle { return a.planner }
func (a *actuator) Reads() []blackboard.Slot {
	return []blackboard.Slot{blackboard.Beliefs, blackboard.Predictions, blackboard.Constraints}
}
func (a *actuator) Writes() []blackboard.Slot { return []blackboard.Slot{blackboard.Actions} }

func (a *actuator) ShouldActivate(v kernel.View) bool {
	return v.Has(blackboard.Beliefs, beliefAnomaly) && !v.Has(blackboard.Actions, actionAlert) && !v.Has(blackboard.Actions, actionReview)
}

func (a *actuator) Step(ctx context.Context, sc *orchestrator.StepContext) (bool, error) {
	traceID := sc.TraceID()
	if _, done, err := worker.LastOwn(ctx, a.planner, traceID, blackboard.Actions, actionReview); err != nil || done {
		return false, err
	}
	last, proposed, err := worker.LastOwn(ctx, a.planner, traceID, blackboard.Actions, actionAlert)
	if err != nil {
		return false, err
	}
	produced := false
	refusal := last.Reason
	if !proposed {
		d, err := a.planner.Submit(ctx, kernel.Entry{
			TraceID: traceID,
			Slot:    blackboard.Actions,
			Kind:    actionAlert,
			Payload: blackboard.Payload{"requires_beliefs": []string{beliefAnomaly}},
		})
		if err != nil {
			return false, err
		}
		if d.Committed() {
			return true, nil
		}
		produced, refusal = true, d.Code
	}
	if refusal == "" || refusal == reason.SupersededByCommit {
		return produced, nil // pending or committed: nothing to review
	}
	_, err = a.planner.Submit(ctx, kernel.Entry{
		TraceID: traceID,
		Slot:    blackboard.Actions,
		Kind:    actionReview,
		Payload: blackboard.Payload{"reason": string(refusal)},
	})
	return err == nil || produced, err
}

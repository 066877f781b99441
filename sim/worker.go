package sim

import (
	"context"
	"fmt"
	"slices"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/orchestrator"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/worker"
)

// Payload keys a simulator adds to its predictions besides the ones the
// kernel reads (action_type, expected_outcome, requires_beliefs).
const (
	keyRule = "rule" // the name of the rule that made the prediction
)

// simulator is the worker New returns.
type simulator struct {
	h     *kernel.Proposer
	id    string
	rules []Rule
	kinds []string
}

// New returns the simulator, the worker that fills the predictions slot
// (paper §11.3), proposing through h with the given rules, which it
// copies. Its worker id is the handle's name. For each rule that matches
// the trace's committed percepts and beliefs it proposes a prediction
// {action_type, expected_outcome, requires_beliefs, rule} and lets the
// kernel decide it.
//
// It proposes a rule's prediction once per trace. It proposes again only
// if the kernel refused the last one with PREDICTION_MISSING_BELIEF and
// the view now holds every belief the rule requires. Only its own
// predictions count: a prediction another writer committed under the same
// kind does not stop it from proposing (that would let a planner squat the
// kind and keep the trusted rule from ever running).
//
// It reads the percepts and beliefs slots and writes the predictions
// slot. New returns an error wrapping [blackboard.ErrInvalidInput] for a
// nil handle, a handle whose role may not propose predictions or one with
// an empty name, and one wrapping [ErrInvalidRule] for a bad rule set (invalid
// rules, duplicate names).
func New(h *kernel.Proposer, rules []Rule) (orchestrator.Worker, error) {
	if h == nil {
		return nil, fmt.Errorf("sim: %w: nil handle", blackboard.ErrInvalidInput)
	}
	if r := h.Role(); r != blackboard.RolePlanner && r != blackboard.RoleSimulator { // the roles that propose predictions
		return nil, fmt.Errorf("sim: %w: role %s may not propose predictions", blackboard.ErrInvalidInput, h.Role())
	}
	if err := validateRules(rules); err != nil {
		return nil, err
	}
	s := &simulator{h: h, id: h.Name()}
	if s.id == "" {
		return nil, fmt.Errorf("sim: %w: empty handle name", blackboard.ErrInvalidInput)
	}
	for i, r := range rules {
		s.rules = append(s.rules, r.clone())
		kind := r.Name
		if kind == "" {
			kind = fmt.Sprintf("%s#%d", r.ActionType, i)
		}
		s.kinds = append(s.kinds, kind)
	}
	for i, k := range s.kinds {
		if slices.Contains(s.kinds[:i], k) {
			return nil, fmt.Errorf("%w: rule %d: name %q clashes with another rule's", ErrInvalidRule, i, k)
		}
	}
	return s, nil
}

// ID returns the worker id.
func (s *simulator) ID() string { return s.id }

// Handle returns the handle the simulator proposes through.
func (s *simulator) Handle() kernel.Handle { return s.h }

// Reads returns the percepts and beliefs slots.
func (s *simulator) Reads() []blackboard.Slot {
	return []blackboard.Slot{blackboard.Percepts, blackboard.Beliefs}
}

// Writes returns the predictions slot.
func (s *simulator) Writes() []blackboard.Slot { return []blackboard.Slot{blackboard.Predictions} }

// ShouldActivate reports whether some rule matches the view. Whether the
// simulator already proposed that rule's prediction is decided in Step,
// from its own records: the view cannot tell who wrote a prediction.
func (s *simulator) ShouldActivate(v kernel.View) bool {
	for _, r := range s.rules {
		if r.match(v) {
			return true
		}
	}
	return false
}

// Step proposes the prediction of every rule that matches the step's view
// and has not been proposed in its trace (see [New]), and asks the
// kernel to decide each. produced reports whether it proposed anything. A
// rejection is not an error; errors come from the kernel or the store.
func (s *simulator) Step(ctx context.Context, sc *orchestrator.StepContext) (produced bool, err error) {
	traceID, v := sc.TraceID(), sc.View()
	for i, r := range s.rules {
		kind := s.kinds[i]
		if !r.match(v) {
			continue
		}
		last, found, err := worker.LastOwn(ctx, s.h, traceID, blackboard.Predictions, kind)
		if err != nil {
			return produced, err
		}
		if found && !retry(last, r, v) {
			continue
		}
		_, err = s.h.Submit(ctx, kernel.Entry{
			TraceID: traceID,
			Slot:    blackboard.Predictions,
			Kind:    kind,
			Payload: blackboard.Payload{
				"action_type":      r.ActionType,
				"expected_outcome": r.ExpectedOutcome,
				"requires_beliefs": append([]string{}, r.RequiresBeliefs...),
				keyRule:            kind,
			},
			Confidence: r.Confidence,
		})
		if err != nil {
			return produced, fmt.Errorf("sim: rule %q: %w", kind, err)
		}
		produced = true
	}
	return produced, nil
}

// retry reports whether a rule whose last proposal was refused for a
// missing belief may be proposed again: every required belief is now in
// view.
func retry(last blackboard.Record, r Rule, v kernel.View) bool {
	if last.Status != blackboard.StatusInvalidated || last.Reason != reason.PredictionMissingBelief {
		return false
	}
	for _, b := range r.RequiresBeliefs {
		if !v.Has(blackboard.Beliefs, b) {
			return false
		}
	}
	return true
}

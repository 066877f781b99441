package sim_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/orchestrator"
	"github.com/blackboardkernel/bk/sim"
)

// Rules load from JSON; the simulator proposes the prediction of every
// matching rule, and the kernel commits it only once the belief it rests on
// is committed. The action gate then refuses an action with a negative
// prediction.
func ExampleNew() {
	rules, err := sim.LoadRules(strings.NewReader(`[
	  {"name": "hot", "action_type": "alert", "expected_outcome": 1.0, "confidence": 0.85,
	   "requires_beliefs": ["anomaly_detected"],
	   "percept_conditions": [{"kind": "temperature", "field": "value", "op": "gt", "value": 90}]},
	  {"name": "mild", "action_type": "alert", "expected_outcome": -0.5, "confidence": 0.7,
	   "requires_beliefs": ["anomaly_detected"],
	   "percept_conditions": [{"kind": "temperature", "field": "value", "op": "lte", "value": 90}]}
	]`))
	if err != nil {
		fmt.Println(err)
		return
	}
	k, err := kernel.New(kernel.Config{ActionSpecs: []kernel.ActionSpec{{
		Type: "alert", MinBeliefs: []string{"anomaly_detected"}, RequirePrediction: true,
	}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer k.Close()
	ctx := context.Background()
	h := k.Proposer(blackboard.RoleSimulator, "simulator")
	s, err := sim.New(h, rules)
	if err != nil {
		fmt.Println(err)
		return
	}
	view := func() kernel.View {
		v, err := k.Reader().View(ctx, "ep", false)
		if err != nil {
			panic(err)
		}
		return v
	}
	report := func() {
		for r, err := range h.Trace(ctx, "ep") {
			if err == nil && r.Slot == blackboard.Predictions && r.Mode == blackboard.ModePropose {
				fmt.Printf("  proposal %s: %s\n", r.Kind, r.Reason)
			}
		}
	}

	if _, err := k.Handle(blackboard.RoleTool, "sensor").Write(ctx, kernel.Entry{TraceID: "ep", Slot: blackboard.Percepts, Kind: "temperature",
		Payload: blackboard.Payload{"value": 81, "unit": "C"}, Confidence: new(0.73)}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("before the belief:")
	if _, err := s.Step(ctx, orchestrator.NewStepContext("ep", view())); err != nil {
		fmt.Println(err)
		return
	}
	report()

	planner := k.Proposer(blackboard.RolePlanner, "analyst")
	if _, err := planner.Submit(ctx, kernel.Entry{TraceID: "ep", Slot: blackboard.Beliefs, Kind: "anomaly_detected",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"temperature"}}}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("after the belief:")
	if _, err := s.Step(ctx, orchestrator.NewStepContext("ep", view())); err != nil {
		fmt.Println(err)
		return
	}
	report()
	p, _ := view().Committed[blackboard.Predictions]["mild"]
	fmt.Println("committed prediction:", p["expected_outcome"])

	d, err := planner.Submit(ctx, kernel.Entry{TraceID: "ep", Slot: blackboard.Actions, Kind: "alert",
		Payload: blackboard.Payload{"requires_beliefs": []string{"anomaly_detected"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("alert:", d.Code)
	// Output:
	// before the belief:
	//   proposal mild: PREDICTION_MISSING_BELIEF
	// after the belief:
	//   proposal mild: PREDICTION_MISSING_BELIEF
	//   proposal mild: SUPERSEDED_BY_COMMIT
	// committed prediction: -0.5
	// alert: NEGATIVE_PREDICTION
}

// A condition compares numbers by value whatever their type, and a type
// mismatch or a missing field simply does not hold.
func TestConditionHoldsByValue(t *testing.T) {
	c := sim.Condition{Kind: "temperature", Field: "value", Op: "gt", Value: 90}
	for _, tc := range []struct {
		p    blackboard.Payload
		want bool
	}{
		{blackboard.Payload{"value": 108.0}, true},
		{blackboard.Payload{"value": int64(87)}, false},
		{blackboard.Payload{"value": "108"}, false},
		{blackboard.Payload{"unit": "C"}, false},
	} {
		if got := c.Holds(tc.p); got != tc.want {
			t.Errorf("Holds(%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
}

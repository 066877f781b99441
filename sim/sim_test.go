package sim_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/orchestrator"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/sim"
	"github.com/blackboardkernel/bk/worker"
)

func cond(op string, v any) sim.Condition {
	return sim.Condition{Kind: "temperature", Field: "value", Op: op, Value: v}
}

func TestOperators(t *testing.T) {
	cases := []struct {
		op   string
		got  any
		want any
		hold bool
	}{
		{"gt", 91.0, 90.0, true}, {"gt", 90.0, 90.0, false}, {"gt", 89.0, 90.0, false},
		{"lt", 89.0, 90.0, true}, {"lt", 90.0, 90.0, false}, {"lt", 91.0, 90.0, false},
		{"gte", 91.0, 90.0, true}, {"gte", 90.0, 90.0, true}, {"gte", 89.9, 90.0, false},
		{"lte", 89.0, 90.0, true}, {"lte", 90.0, 90.0, true}, {"lte", 90.1, 90.0, false},
		{"eq", 90.0, 90.0, true}, {"eq", 90.5, 90.0, false},
		{"ne", 90.5, 90.0, true}, {"ne", 90.0, 90.0, false},
		{"eq", -0.5, -0.5, true}, {"lt", -1.0, -0.5, true},
		// strings
		{"eq", "C", "C", true}, {"eq", "C", "F", false}, {"ne", "C", "F", true}, {"ne", "C", "C", false},
		{"gt", "b", "a", true}, {"lt", "b", "a", false}, {"gte", "a", "a", true}, {"lte", "a", "b", true},
		// booleans
		{"eq", true, true, true}, {"eq", true, false, false}, {"ne", true, false, true}, {"ne", false, false, false},
	}
	for _, tc := range cases {
		c := cond(tc.op, tc.want)
		if err := c.Validate(); err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		if got := c.Holds(blackboard.Payload{"value": tc.got}); got != tc.hold {
			t.Errorf("%v %s %v = %v, want %v", tc.got, tc.op, tc.want, got, tc.hold)
		}
	}
}

func TestNumbersCompareWhateverTheirType(t *testing.T) {
	payloadValues := []any{int(91), int8(91), int16(91), int32(91), int64(91), uint(91), uint8(91), uint16(91),
		uint32(91), uint64(91), float32(91), float64(91), json.Number("91"), json.Number("9.1e1")}
	condValues := []any{90, int64(90), uint8(90), float32(90), 90.0, json.Number("90"), json.Number("90.0")}
	for _, pv := range payloadValues {
		for _, cv := range condValues {
			p := blackboard.Payload{"value": pv}
			for op, want := range map[string]bool{"gt": true, "gte": true, "lt": false, "lte": false, "eq": false, "ne": true} {
				if got := cond(op, cv).Holds(p); got != want {
					t.Errorf("%v (%T) %s %v (%T) = %v, want %v", pv, pv, op, cv, cv, got, want)
				}
			}
			if !cond("eq", cv).Holds(blackboard.Payload{"value": json.Number("90")}) {
				t.Errorf("json.Number 90 eq %v (%T) does not hold", cv, cv)
			}
		}
	}
	// Through the kernel: a payload written with an int is read back as a
	// float64 and still compares with a condition decoded from JSON.
	rules, err := sim.LoadRules(strings.NewReader(`[{"action_type":"alert","expected_outcome":1,
		"percept_conditions":[{"kind":"temperature","field":"value","op":"eq","value":91}]}]`))
	if err != nil {
		t.Fatal(err)
	}
	if _, isNumber := rules[0].PerceptConditions[0].Value.(json.Number); !isNumber {
		t.Fatalf("a loaded condition value is %T, want json.Number", rules[0].PerceptConditions[0].Value)
	}
	_, v := kernelWithPercept(t, blackboard.Payload{"value": 91})
	if !rules[0].Match(v) {
		t.Fatal("a JSON rule does not match an int percept committed through the kernel")
	}
}

func TestMismatchesNeverMatchNorPanic(t *testing.T) {
	cases := []struct {
		name string
		c    sim.Condition
		p    blackboard.Payload
	}{
		{"missing field", cond("gt", 90), blackboard.Payload{"other": 100}},
		{"nil payload", cond("gt", 90), nil},
		{"null value", cond("eq", 90), blackboard.Payload{"value": nil}},
		{"string against number", cond("gt", 90), blackboard.Payload{"value": "100"}},
		{"number against string", cond("eq", "100"), blackboard.Payload{"value": 100}},
		{"bool against number", cond("eq", 1), blackboard.Payload{"value": true}},
		{"number against bool", cond("eq", true), blackboard.Payload{"value": 1}},
		{"ne across types", cond("ne", 90), blackboard.Payload{"value": "hot"}},
		{"bool ordering", sim.Condition{Kind: "t", Field: "value", Op: "gt", Value: false}, blackboard.Payload{"value": true}},
		{"object", cond("eq", 90), blackboard.Payload{"value": map[string]any{"a": 90}}},
		{"list", cond("eq", 90), blackboard.Payload{"value": []any{90.0}}},
		{"NaN", cond("ne", 90), blackboard.Payload{"value": math.NaN()}},
		{"infinity", cond("gt", 90), blackboard.Payload{"value": math.Inf(1)}},
		{"bad json.Number", cond("ne", 90), blackboard.Payload{"value": json.Number("hot")}},
		{"unknown operator", sim.Condition{Kind: "t", Field: "value", Op: "~", Value: 90}, blackboard.Payload{"value": 90}},
		{"invalid condition value", sim.Condition{Kind: "t", Field: "value", Op: "eq", Value: []int{90}}, blackboard.Payload{"value": 90}},
		{"nil condition value", sim.Condition{Kind: "t", Field: "value", Op: "eq"}, blackboard.Payload{"value": nil}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.c.Holds(tc.p) {
				t.Fatalf("%+v holds on %v", tc.c, tc.p)
			}
		})
	}
	// A rule whose condition names a kind that is not committed does not
	// match.
	r := sim.Rule{ActionType: "alert", PerceptConditions: []sim.Condition{{Kind: "pressure", Field: "value", Op: "gt", Value: 1}}}
	_, v := kernelWithPercept(t, blackboard.Payload{"value": 100})
	if r.Match(v) {
		t.Fatal("a condition on an absent percept matched")
	}
	// A belief condition reads beliefs, not percepts.
	r = sim.Rule{ActionType: "alert", BeliefConditions: []sim.Condition{cond("gt", 1)}}
	if r.Match(v) {
		t.Fatal("a belief condition matched a percept")
	}
}

func FuzzHolds(f *testing.F) {
	f.Add(`{"value": 91}`, "gt", `90`)
	f.Add(`{"value": "x"}`, "eq", `"x"`)
	f.Add(`{"value": true}`, "lte", `false`)
	f.Add(`{"value": [1]}`, "ne", `{"a":1}`)
	f.Add(`{}`, "lt", `null`)
	f.Fuzz(func(t *testing.T, payload, op, value string) {
		var p map[string]any
		var v any
		if json.Unmarshal([]byte(payload), &p) != nil || json.Unmarshal([]byte(value), &v) != nil {
			return
		}
		c := sim.Condition{Kind: "k", Field: "value", Op: string(op), Value: v}
		held := c.Holds(p)
		if held && c.Validate() != nil {
			t.Fatalf("an invalid condition %+v held on %v", c, p)
		}
	})
}

func TestLoadRules(t *testing.T) {
	doc := `[
	  {"name": "hot", "action_type": "alert", "expected_outcome": 1.0, "confidence": 0.85,
	   "requires_beliefs": ["anomaly_detected"],
	   "percept_conditions": [{"kind": "temperature", "field": "value", "op": "gt", "value": 90}]},
	  {"name": "mild", "action_type": "alert", "expected_outcome": -0.5, "confidence": 0.7,
	   "requires_beliefs": ["anomaly_detected"],
	   "percept_conditions": [{"kind": "temperature", "field": "value", "op": "lte", "value": 90}],
	   "belief_conditions": [{"kind": "anomaly_detected", "field": "value", "op": "eq", "value": true}]}
	]`
	rules, err := sim.LoadRules(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 2 || rules[0].Name != "hot" || rules[0].ExpectedOutcome != 1 || *rules[0].Confidence != 0.85 ||
		rules[1].ExpectedOutcome != -0.5 || rules[1].RequiresBeliefs[0] != "anomaly_detected" ||
		rules[1].PerceptConditions[0].Op != "lte" || rules[1].BeliefConditions[0].Value != true {
		t.Fatalf("loaded %+v", rules)
	}
	// Round trip: what json.Marshal writes, LoadRules reads back.
	out, err := json.Marshal(rules)
	if err != nil {
		t.Fatal(err)
	}
	again, err := sim.LoadRules(strings.NewReader(string(out)))
	if err != nil {
		t.Fatalf("reloading %s: %v", out, err)
	}
	if len(again) != 2 || again[1].Name != "mild" {
		t.Fatalf("round trip gave %+v", again)
	}
	if rules, err := sim.LoadRules(strings.NewReader(`[]`)); err != nil || len(rules) != 0 {
		t.Fatalf("empty array: %v %v", rules, err)
	}
}

func TestLoadRulesRefusesBadInput(t *testing.T) {
	bad := map[string]string{
		"not json":            `{`,
		"empty":               ``,
		"null":                `null`,
		"object not array":    `{"action_type":"alert"}`,
		"trailing data":       `[] []`,
		"unknown field":       `[{"action_type":"alert","expected_outcome":1,"colour":"red"}]`,
		"no action type":      `[{"expected_outcome":1}]`,
		"outcome not number":  `[{"action_type":"alert","expected_outcome":"1"}]`,
		"confidence too high": `[{"action_type":"alert","expected_outcome":1,"confidence":1.5}]`,
		"negative confidence": `[{"action_type":"alert","expected_outcome":1,"confidence":-0.1}]`,
		"empty belief":        `[{"action_type":"alert","expected_outcome":1,"requires_beliefs":[""]}]`,
		"unknown operator":    `[{"action_type":"alert","expected_outcome":1,"percept_conditions":[{"kind":"t","field":"v","op":"between","value":1}]}]`,
		"condition no kind":   `[{"action_type":"alert","expected_outcome":1,"percept_conditions":[{"field":"v","op":"eq","value":1}]}]`,
		"condition no field":  `[{"action_type":"alert","expected_outcome":1,"belief_conditions":[{"kind":"b","op":"eq","value":1}]}]`,
		"null value":          `[{"action_type":"alert","expected_outcome":1,"percept_conditions":[{"kind":"t","field":"v","op":"eq","value":null}]}]`,
		"object value":        `[{"action_type":"alert","expected_outcome":1,"percept_conditions":[{"kind":"t","field":"v","op":"eq","value":{}}]}]`,
		"ordering on bool":    `[{"action_type":"alert","expected_outcome":1,"percept_conditions":[{"kind":"t","field":"v","op":"gt","value":true}]}]`,
		"duplicate names":     `[{"name":"a","action_type":"alert","expected_outcome":1},{"name":"a","action_type":"stop","expected_outcome":1}]`,
		"huge number":         `[{"action_type":"alert","expected_outcome":1,"percept_conditions":[{"kind":"t","field":"v","op":"gt","value":1e999}]}]`,
	}
	for name, doc := range bad {
		t.Run(name, func(t *testing.T) {
			rules, err := sim.LoadRules(strings.NewReader(doc))
			if !errors.Is(err, sim.ErrInvalidRule) || rules != nil {
				t.Fatalf("LoadRules(%s) = %v, %v; want nil and ErrInvalidRule", doc, rules, err)
			}
		})
	}
	if err := (sim.Rule{ActionType: "a", ExpectedOutcome: math.NaN()}).Validate(); !errors.Is(err, sim.ErrInvalidRule) {
		t.Fatalf("NaN outcome: %v", err)
	}
}

// kernelWithPercept returns a kernel whose trace "t" holds a committed
// temperature percept with payload p, and the trace's view.
func kernelWithPercept(t *testing.T, p blackboard.Payload, specs ...kernel.ActionSpec) (*kernel.Kernel, kernel.View) {
	t.Helper()
	k, err := kernel.New(kernel.Config{ActionSpecs: specs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Close() })
	ctx := context.Background()
	if _, err := k.Handle(blackboard.RoleTool, "sensor").Write(ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Percepts, Kind: "temperature",
		Payload: p, Confidence: new(0.9)}); err != nil {
		t.Fatal(err)
	}
	v, err := k.Reader().View(ctx, "t", false)
	if err != nil {
		t.Fatal(err)
	}
	return k, v
}

func demoRules() []sim.Rule {
	return []sim.Rule{
		{Name: "hot", ActionType: "alert", ExpectedOutcome: 1.0, RequiresBeliefs: []string{"anomaly_detected"},
			PerceptConditions: []sim.Condition{{Kind: "temperature", Field: "value", Op: "gt", Value: 90}},
			Confidence:        new(0.85)},
		{Name: "mild", ActionType: "alert", ExpectedOutcome: -0.5, RequiresBeliefs: []string{"anomaly_detected"},
			PerceptConditions: []sim.Condition{{Kind: "temperature", Field: "value", Op: "lte", Value: 90}},
			Confidence:        new(0.7)},
	}
}

func proposeBelief(t *testing.T, k *kernel.Kernel) {
	t.Helper()
	d, err := k.Proposer(blackboard.RolePlanner, "analyst").Submit(context.Background(), kernel.Entry{TraceID: "t", Slot: blackboard.Beliefs,
		Kind: "anomaly_detected", Payload: blackboard.Payload{"value": true, "depends_on": []string{"temperature"}}})
	if err != nil || !d.Committed() {
		t.Fatalf("belief: %v %v", d.Code, err)
	}
}

func view(t *testing.T, k *kernel.Kernel) kernel.View {
	t.Helper()
	v, err := k.Reader().View(context.Background(), "t", false)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func ownPredictions(t *testing.T, h kernel.Handle) []blackboard.Record {
	t.Helper()
	var out []blackboard.Record
	for r, err := range worker.Own(context.Background(), h, "t") {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func TestWorkerCommitsOnlyWithTheRequiredBeliefs(t *testing.T) {
	ctx := context.Background()
	k, v := kernelWithPercept(t, blackboard.Payload{"value": 95, "unit": "C"})
	h := k.Proposer(blackboard.RoleSimulator, "sim")
	s, err := sim.New(h, demoRules())
	if err != nil {
		t.Fatal(err)
	}
	if !s.ShouldActivate(v) {
		t.Fatal("a matching rule did not activate the simulator")
	}
	// No belief yet: the kernel refuses the prediction.
	produced, err := s.Step(ctx, orchestrator.NewStepContext("t", v))
	if err != nil || !produced {
		t.Fatalf("Step: %v %v", produced, err)
	}
	own := ownPredictions(t, h)
	if len(own) != 1 || own[0].Kind != "hot" || own[0].Reason != reason.PredictionMissingBelief {
		t.Fatalf("own records after the first step: %+v", own)
	}
	v = view(t, k)
	if v.Has(blackboard.Predictions, "hot") {
		t.Fatal("a prediction was committed without its belief")
	}
	// Stepping again on the same view does not repeat the refused proposal.
	if produced, err := s.Step(ctx, orchestrator.NewStepContext("t", v)); err != nil || produced {
		t.Fatalf("repeated step: %v %v", produced, err)
	}
	// Once the belief is committed, the rule is proposed again and commits.
	proposeBelief(t, k)
	v = view(t, k)
	if produced, err := s.Step(ctx, orchestrator.NewStepContext("t", v)); err != nil || !produced {
		t.Fatalf("step after the belief: %v %v", produced, err)
	}
	v = view(t, k)
	pred, ok := v.Committed[blackboard.Predictions]["hot"]
	if !ok {
		t.Fatal("prediction not committed once its belief was")
	}
	if pred["action_type"] != "alert" || pred["expected_outcome"] != 1.0 || pred[sim.KeyRule] != "hot" {
		t.Fatalf("committed prediction %v", pred)
	}
	if v.Has(blackboard.Predictions, "mild") {
		t.Fatal("the rule that does not match was proposed")
	}
	rec, err := h.Find(ctx, "t", blackboard.Predictions, "hot")
	if err != nil {
		t.Fatal(err)
	}
	if c := rec.Provenance.Confidence; c == nil || *c != 0.85 {
		t.Fatalf("prediction confidence %v, want 0.85", c)
	}
	if produced, err := s.Step(ctx, orchestrator.NewStepContext("t", v)); err != nil || produced {
		t.Fatalf("step with the prediction committed: %v %v", produced, err)
	}
	if n := len(ownPredictions(t, h)); n != 2 {
		t.Fatalf("%d proposals in all, want 2", n)
	}
}

func TestPredictionGate(t *testing.T) {
	ctx := context.Background()
	alert := kernel.ActionSpec{Type: "alert", MinBeliefs: []string{"anomaly_detected"}, RequirePrediction: true}
	propose := func(t *testing.T, k *kernel.Kernel) reason.Code {
		t.Helper()
		d, err := k.Proposer(blackboard.RolePlanner, "actuator").Submit(ctx, kernel.Entry{TraceID: "t", Slot: blackboard.Actions, Kind: "alert",
			Payload: blackboard.Payload{"requires_beliefs": []string{"anomaly_detected"}}})
		if err != nil {
			t.Fatal(err)
		}
		return d.Code
	}
	cases := []struct {
		name      string
		value     float64
		simulate  bool
		wantPred  string
		wantCode  reason.Code
		wantValue float64
	}{
		{"no prediction", 95, false, "", reason.NoPrediction, 0},
		{"negative prediction", 85, true, "mild", reason.NegativePrediction, -0.5},
		{"positive prediction", 95, true, "hot", reason.Committed, 1},
		{"boundary is not hot", 90, true, "mild", reason.NegativePrediction, -0.5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k, _ := kernelWithPercept(t, blackboard.Payload{"value": tc.value}, alert)
			proposeBelief(t, k)
			if tc.simulate {
				s, err := sim.New(k.Proposer(blackboard.RoleSimulator, "sim"), demoRules())
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.Step(ctx, orchestrator.NewStepContext("t", view(t, k))); err != nil {
					t.Fatal(err)
				}
				p, ok := view(t, k).Committed[blackboard.Predictions][tc.wantPred]
				if !ok || p["expected_outcome"] != tc.wantValue {
					t.Fatalf("prediction %s = %v, %v", tc.wantPred, p, ok)
				}
			}
			if got := propose(t, k); got != tc.wantCode {
				t.Fatalf("alert decided %s, want %s", got, tc.wantCode)
			}
		})
	}
}

func TestNewRefusesBadArguments(t *testing.T) {
	k, err := kernel.New(kernel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	cases := []struct {
		name  string
		h     *kernel.Proposer
		rules []sim.Rule
		want  error
	}{
		{"nil handle", nil, demoRules(), blackboard.ErrInvalidInput},
		{"empty name", k.Proposer(blackboard.RoleSimulator, ""), demoRules(), blackboard.ErrInvalidInput},
		{"bad rule", k.Proposer(blackboard.RoleSimulator, "s"), []sim.Rule{{ExpectedOutcome: 1}}, sim.ErrInvalidRule},
		{"generated name clash", k.Proposer(blackboard.RoleSimulator, "s"), []sim.Rule{{ActionType: "a"}, {Name: "a#0", ActionType: "b"}}, sim.ErrInvalidRule},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := sim.New(tc.h, tc.rules)
			if !errors.Is(err, tc.want) || s != nil {
				t.Fatalf("New = %v, %v; want nil, %v", s, err, tc.want)
			}
		})
	}
	// A planner may propose predictions too.
	s, err := sim.New(k.Proposer(blackboard.RolePlanner, "world-model"), demoRules())
	if err != nil || s.ID() != "world-model" {
		t.Fatalf("planner-backed simulator: %v %v", s, err)
	}
	// The simulator keeps its own copy of the rules.
	rules := demoRules()
	s, err = sim.New(k.Proposer(blackboard.RoleSimulator, "s"), rules)
	if err != nil {
		t.Fatal(err)
	}
	rules[0].PerceptConditions[0].Op = "lt"
	if !s.ShouldActivate(kernel.View{Committed: map[blackboard.Slot]map[string]blackboard.Payload{
		blackboard.Percepts: {"temperature": {"value": 95}}}}) {
		t.Fatal("changing the caller's rules changed the simulator's")
	}
	if got := s.Reads(); len(got) != 2 || s.Writes()[0] != blackboard.Predictions || s.Handle() == nil {
		t.Fatalf("declaration: reads %v writes %v", got, s.Writes())
	}
}

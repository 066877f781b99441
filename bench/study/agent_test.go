package study

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/bench/perturb"
	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

func builtinTask(t *testing.T, id string) *Task {
	t.Helper()
	tasks, err := BuiltinTasks()
	if err != nil {
		t.Fatal(err)
	}
	for i := range tasks {
		if tasks[i].ID == id {
			return &tasks[i]
		}
	}
	t.Fatalf("no task %s", id)
	return nil
}

// episode builds the episode the run would play for (task, seed).
func episode(t *testing.T, taskID string, seed int) Episode {
	task := builtinTask(t, taskID)
	return Episode{Task: task, Seed: seed, Faults: perturb.DefaultRates().Draw(seed, task.Key()), TraceID: "test/" + taskID, KeepTrace: true}
}

// play1 plays one episode through the harness, which measures it.
func play1(t *testing.T, a Agent, ep Episode) *Result {
	t.Helper()
	r, err := play(context.Background(), job{agent: a, ep: ep})
	if err != nil {
		t.Fatalf("%s: %v", a.Name(), err)
	}
	return r
}

func bk(t *testing.T) Agent {
	a, err := newKernelAgent(AgentBK, always{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestKernelAgentCheckValues(t *testing.T) {
	for _, c := range []struct {
		name   string
		ep     Episode
		want   Final
		reason string
		m      Metrics
	}{
		{
			name: "seed 0 clean is stale",
			ep:   episode(t, "stripe_refund_clean", 0),
			want: Final{BeliefCode: reason.StaleEvidence, PlanCode: reason.PlanMissingBelief,
				SafeActionCommitted: true, SafeActionCode: reason.Committed},
			reason: "PLAN_MISSING_BELIEF",
			m:      Metrics{TaskSuccess: 1, Traceability: 1, FailureTransparency: 1},
		},
		{
			name: "seed 1 clean is conflicted",
			ep:   episode(t, "stripe_refund_clean", 1),
			want: Final{BeliefCode: reason.UnresolvedConflict, PlanCode: reason.PlanMissingBelief,
				SafeActionCommitted: true, SafeActionCode: reason.Committed},
			reason: "PLAN_MISSING_BELIEF",
			m:      Metrics{TaskSuccess: 1, Traceability: 1, FailureTransparency: 1},
		},
		{
			name: "seed 2 clean refunds",
			ep:   episode(t, "stripe_refund_clean", 2),
			want: Final{BeliefCommitted: true, BeliefCode: reason.Committed, PlanFeasible: true, PlanCode: reason.PlanFeasible,
				ActionCommitted: true, ActionCode: reason.Committed},
			m: Metrics{TaskSuccess: 1, Traceability: 1, FailureTransparency: 1},
		},
		{
			name: "seed 5 combined is a drop, substituted as stale",
			ep:   episode(t, "stripe_refund_combined", 5),
			want: Final{BeliefCode: reason.StaleEvidence, PlanCode: reason.PlanMissingBelief,
				SafeActionCommitted: true, SafeActionCode: reason.Committed},
			reason: "PLAN_MISSING_BELIEF",
			m:      Metrics{TaskSuccess: 1, Traceability: 1, FailureTransparency: 1},
		},
		{
			name: "a clean duplicate is blocked by the constraint",
			ep:   Episode{Task: builtinTask(t, "stripe_refund_duplicate"), TraceID: "dup"},
			want: Final{BeliefCommitted: true, BeliefCode: reason.Committed, PlanCode: "PLAN_" + reason.Blocked("no_duplicate_refund"),
				SafeActionCommitted: true, SafeActionCode: reason.Committed},
			reason: "PLAN_NO_DUPLICATE_REFUND_BLOCKED",
			m:      Metrics{TaskSuccess: 1, Traceability: 1, FailureTransparency: 1},
		},
		{
			name: "low confidence (0.3) is refused",
			ep:   Episode{Task: builtinTask(t, "stripe_refund_clean"), Faults: perturb.Flags{LowConfidence: true}, TraceID: "low"},
			want: Final{BeliefCode: reason.LowConfidence, PlanCode: reason.PlanMissingBelief,
				SafeActionCommitted: true, SafeActionCode: reason.Committed},
			reason: "PLAN_MISSING_BELIEF",
			m:      Metrics{TaskSuccess: 1, Traceability: 1, FailureTransparency: 1},
		},
		{
			name: "a conflict at confidence 0.3 is not arbitrated",
			ep:   Episode{Task: builtinTask(t, "stripe_refund_clean"), Faults: perturb.Flags{Conflict: true, LowConfidence: true}, TraceID: "cl"},
			want: Final{BeliefCode: reason.UnresolvedConflict, PlanCode: reason.PlanMissingBelief,
				SafeActionCommitted: true, SafeActionCode: reason.Committed},
			reason: "PLAN_MISSING_BELIEF",
			m:      Metrics{TaskSuccess: 1, Traceability: 1, FailureTransparency: 1},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.ep.KeepTrace = true
			o := play1(t, bk(t), c.ep)
			out := o.Output.(*KernelOutput)
			if out.Final != c.want {
				t.Errorf("final = %+v\nwant    %+v", out.Final, c.want)
			}
			if o.Metrics != c.m {
				t.Errorf("metrics = %+v, want %+v", o.Metrics, c.m)
			}
			if c.reason != "" {
				fb, ok := out.View[blackboard.Actions][kernel.FallbackQueueForReview]
				if !ok || fb["reason"] != c.reason {
					t.Errorf("fallback = %v, want reason %s", fb, c.reason)
				}
			}
			if len(o.trace) < 2 {
				t.Fatalf("trace = %q", o.trace)
			}
			if low := c.ep.Faults.LowConfidence; low != strings.Contains(o.trace[1], "confidence=0.3") {
				t.Errorf("low confidence %v, percept line %q", low, o.trace[1])
			}
		})
	}
}

// A dropped charge is substituted with the task's own fields, stale as each
// agent sets it, and no low_confidence key.
func TestDropSubstitutes(t *testing.T) {
	ep := episode(t, "stripe_refund_combined", 5)
	if !ep.Faults.Drop {
		t.Fatalf("seed 5 combined: faults %+v, want a drop", ep.Faults)
	}
	sg := play1(t, &glueAgent{name: AgentStringGlue}, ep).Output.(*GlueOutput)
	jg := play1(t, &glueAgent{name: AgentJSONGlue, structured: true}, ep).Output.(*GlueOutput)
	kb := play1(t, bk(t), ep).Output.(*KernelOutput)
	for name, c := range map[string]blackboard.Payload{"string_glue": sg.ToolObs.Charge, "json_glue": jg.ToolObs.Charge, "bk": kb.View[blackboard.Percepts][kindCharge]} {
		if _, has := c["low_confidence"]; has {
			t.Errorf("%s: substitute has a low_confidence key: %v", name, c)
		}
		if c["charge_id"] != "ch_6U5c6F9L0M" || c["customer_id"] != "cus_8Xr4tN" || c["amount"] != 199.0 || c["conflict"] != false {
			t.Errorf("%s: substitute %v", name, c)
		}
	}
	if sg.ToolObs.Charge["stale"] != false || jg.ToolObs.Charge["stale"] != true || kb.View[blackboard.Percepts][kindCharge]["stale"] != true {
		t.Errorf("stale: string_glue %v, json_glue %v, bk %v", sg.ToolObs.Charge["stale"], jg.ToolObs.Charge["stale"], kb.View[blackboard.Percepts][kindCharge]["stale"])
	}
	if got := jg.Beliefs["refund_due"].(map[string]any)["confidence"]; got != 0.6 {
		t.Errorf("json_glue confidence on a stale substitute = %v, want 0.6", got)
	}
}

func TestGlueAgents(t *testing.T) {
	clean := Episode{Task: builtinTask(t, "stripe_refund_clean")}
	dup := Episode{Task: builtinTask(t, "stripe_refund_duplicate")}
	stale := Episode{Task: builtinTask(t, "stripe_refund_stale"), Faults: perturb.Flags{Stale: true}}
	for _, a := range []Agent{&glueAgent{name: AgentStringGlue}, &glueAgent{name: AgentJSONGlue, structured: true}} {
		for _, c := range []struct {
			ep   Episode
			want Metrics
		}{
			{clean, Metrics{TaskSuccess: 1, FailureTransparency: 1}},
			{dup, Metrics{UnsafeAction: 1}},
			{stale, Metrics{UnsafeAction: 1, UnsupportedBelief: 1}},
		} {
			if got := play1(t, a, c.ep).Metrics; got != c.want {
				t.Errorf("%s on %s %+v: %+v, want %+v", a.Name(), c.ep.Task.ID, c.ep.Faults, got, c.want)
			}
		}
	}
}

// scripted is a decider that answers from fields, as an LLM decider would.
type scripted struct {
	noBelief, noPlan bool
	code             reason.Code
	err              error
}

func (s scripted) belief(context.Context, situation) (bool, reason.Code, error) {
	if s.err != nil {
		return false, "", s.err
	}
	if s.noBelief {
		return false, s.code, nil
	}
	return true, "", nil
}

func (s scripted) plan(_ context.Context, sit situation) (bool, reason.Code, error) {
	if sit.beliefCode == "" {
		return false, "", errors.New("plan decided before the belief")
	}
	if s.noPlan {
		return false, s.code, nil
	}
	return true, "", nil
}

func TestDeciderDeclines(t *testing.T) {
	clean := Episode{Task: builtinTask(t, "stripe_refund_clean"), TraceID: "llm"}
	stale := Episode{Task: builtinTask(t, "stripe_refund_stale"), Faults: perturb.Flags{Stale: true}, TraceID: "llm"}
	for _, c := range []struct {
		name  string
		d     scripted
		ep    Episode
		final Final
		m     Metrics
	}{
		{"declines the belief on clean data", scripted{noBelief: true, code: reason.LLMNoBelief}, clean,
			Final{BeliefCode: reason.LLMNoBelief, SafeActionCommitted: true, SafeActionCode: reason.Committed},
			Metrics{Traceability: 1, FailureTransparency: 1}},
		{"declines the plan on clean data", scripted{noPlan: true, code: reason.LLMNoPlan}, clean,
			Final{BeliefCommitted: true, BeliefCode: reason.Committed, PlanCode: reason.LLMNoPlan, SafeActionCommitted: true, SafeActionCode: reason.Committed},
			Metrics{Traceability: 1, FailureTransparency: 1}},
		{"endpoint failure on stale data", scripted{noPlan: true, code: reason.LLMError}, stale,
			Final{BeliefCode: reason.StaleEvidence, PlanCode: reason.LLMError, SafeActionCommitted: true, SafeActionCode: reason.Committed},
			Metrics{TaskSuccess: 1, Traceability: 1, FailureTransparency: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := newKernelAgent("llm_test", c.d, nil)
			if err != nil {
				t.Fatal(err)
			}
			o := play1(t, a, c.ep)
			out := o.Output.(*KernelOutput)
			if out.Final != c.final {
				t.Errorf("final = %+v\nwant    %+v", out.Final, c.final)
			}
			if o.Metrics != c.m {
				t.Errorf("metrics = %+v, want %+v", o.Metrics, c.m)
			}
		})
	}
	a, err := newKernelAgent("llm_test", scripted{err: context.Canceled}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), clean); !errors.Is(err, context.Canceled) {
		t.Errorf("a decider error: Run = %v, want it returned", err)
	}
}

func TestAgentRegistry(t *testing.T) {
	names := AgentNames()
	want := []string{"adversarial_bk", "bk", "json_glue", "llm_bk", "string_glue"}
	if len(names) != len(want) {
		t.Fatalf("AgentNames = %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("AgentNames = %v, want %v", names, want)
		}
	}
	if got := DefaultAgents(LLMConfig{}); len(got) != 3 {
		t.Errorf("DefaultAgents without LLM = %v", got)
	}
	if got := DefaultAgents(LLMConfig{URL: "http://x"}); len(got) != 4 || got[3] != AgentLLMBK {
		t.Errorf("DefaultAgents with LLM = %v", got)
	}
	c := LLMConfig{URL: "u", APIKey: "sk-secret"}
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%+v %#v", c, c), fmt.Sprint(Config{LLM: c})} {
		if strings.Contains(s, "sk-secret") {
			t.Errorf("the API key is printed: %s", s)
		}
	}
}

// The payloads a run shares between the episodes of a task are still as
// built after every kernel agent has played on them: the kernel only reads
// them, and adversarial_bk, whose attacks change the entries they are
// given (the refund's amount, the plan's step, ...), must get fresh ones.
// Sixty seeds mount each of its attacks twice. The run also checks that
// the shared payloads are the ones the episodes use.
func TestSharedPayloadsStayUnchanged(t *testing.T) {
	ctx := context.Background()
	cfg := DefaultConfig()
	cfg.Seeds = 60
	cfg.Agents = []string{AgentBK, AgentAdversarialBK}
	p, err := cfg.plan()
	if err != nil {
		t.Fatal(err)
	}
	for j := range p.jobs(&cfg) {
		if j.ep.payloads == nil {
			t.Fatal("an episode of the run has no shared payloads")
		}
		if _, err := play(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	for i := range p.tasks {
		if want := newRoutePayloads(&p.tasks[i]); !reflect.DeepEqual(p.payloads[i], want) {
			t.Errorf("%s: shared payloads changed during the run:\n got %v\nwant %v", p.tasks[i].ID, p.payloads[i], want)
		}
	}
}

// The shared payloads are exactly what an episode without them builds.
func TestSharedPayloadsMatchFresh(t *testing.T) {
	for _, task := range mustTasks(t) {
		shared := newRoutePayloads(&task)
		with := &kernelEpisode{task: &task, shared: shared}
		without := &kernelEpisode{task: &task}
		for _, plan := range []*committed{nil, {ID: "plans:x:1"}} {
			with.plan, without.plan = plan, plan
			for name, build := range map[string]func(*kernelEpisode) kernel.Entry{
				"belief": (*kernelEpisode).beliefEntry, "plan": (*kernelEpisode).planEntry, "refund": (*kernelEpisode).refundEntry,
			} {
				if got, want := build(with), build(without); !reflect.DeepEqual(got, want) {
					t.Errorf("%s %s: shared %+v, fresh %+v", task.ID, name, got, want)
				}
			}
		}
		for i := range 16 {
			f := perturb.Flags{Drop: i&8 != 0, Stale: i&4 != 0, Conflict: i&2 != 0, LowConfidence: i&1 != 0}
			if got, want := with.chargePayload(f), task.Charge(f, true); !reflect.DeepEqual(got, want) {
				t.Errorf("%s charge under %+v: shared %v, fresh %v", task.ID, f, got, want)
			}
		}
		if len(shared.fallbacks) == 0 {
			t.Errorf("%s: no shared fallback payloads", task.ID)
		}
		for _, c := range append(slices.Collect(maps.Keys(shared.fallbacks)), "NOT_A_CODE", "") {
			with.reason, without.reason = c, c
			if got, want := with.fallbackPayload(), without.fallbackPayload(); !reflect.DeepEqual(got, want) {
				t.Errorf("%s fallback for %q: shared %v, fresh %v", task.ID, c, got, want)
			}
		}
	}
}

func mustTasks(t *testing.T) []Task {
	t.Helper()
	tasks, err := BuiltinTasks()
	if err != nil {
		t.Fatal(err)
	}
	return tasks
}

// An outcome's label reads the same whether it is made or found among
// those made before.
func TestFinalLabel(t *testing.T) {
	for _, c := range []struct {
		f    Final
		want string
	}{
		{Final{ActionCommitted: true, ActionCode: reason.Committed}, "issue_refund COMMITTED"},
		{Final{BeliefCode: reason.StaleEvidence, SafeActionCommitted: true}, "queue_for_review after belief STALE_EVIDENCE"},
		{Final{BeliefCode: reason.Committed, PlanCode: reason.PlanFeasible, ActionCode: "BLOCKED_X", SafeActionCode: "INVALID_PROPOSAL"},
			"queue_for_review after belief COMMITTED, plan PLAN_FEASIBLE, action BLOCKED_X (fallback INVALID_PROPOSAL)"},
		{Final{BeliefCode: reason.Code(strings.Repeat("Z", 300))}, "queue_for_review after belief " + strings.Repeat("Z", 300) + " (fallback )"},
	} {
		for range 2 {
			if got := c.f.label(); got != c.want {
				t.Errorf("%+v: label %q, want %q", c.f, got, c.want)
			}
		}
	}
}

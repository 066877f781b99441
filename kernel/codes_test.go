package kernel_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
)

// codeCase drives the public API into one reason code. Cases that must fail
// with an error set sentinel and call f.mark() just before the failing call,
// so the runner can check that the call changed nothing.
type codeCase struct {
	name     string
	cfg      kernel.Config
	run      func(f *fixture) (reason.Code, error)
	want     reason.Code
	sentinel error
}

// decided turns a Submit or Commit result into a code.
func decided(d kernel.Decision, err error) (reason.Code, error) { return d.Code, err }

// written turns a Write result into a code: COMMITTED or nothing.
// written is the Reason of the record a handle wrote (COMMITTED for a
// commit), read back by its id.
func (f *fixture) written(id string, err error) (reason.Code, error) {
	if err != nil {
		return "", err
	}
	return f.get(id).Reason, nil
}

const tr = "t1" // the trace most cases use

var refundSpec = kernel.ActionSpec{Type: "issue_refund", MinBeliefs: []string{"refund_due"}}

func codeCases() []codeCase {
	strict := kernel.Config{StrictActions: true, ActionSpecs: []kernel.ActionSpec{refundSpec}}
	// proposeAct grounds refund_due and proposes an action of kind with p.
	proposeAct := func(kind string, p blackboard.Payload) func(f *fixture) (reason.Code, error) {
		return func(f *fixture) (reason.Code, error) {
			f.groundedBelief(tr)
			return decided(f.propose(tr, blackboard.Actions, kind, p))
		}
	}
	falseBelief := func(f *fixture) {
		f.perceive(tr, "charge", nil, nil, 0)
		if d := f.mustPropose(tr, blackboard.Beliefs, "refund_due", belief(false, "charge")); d.Code != reason.Committed {
			f.t.Fatalf("false belief: %s", d.Code)
		}
	}
	withPrediction := func(outcome float64) func(f *fixture) {
		return func(f *fixture) {
			f.groundedBelief(tr)
			d, err := f.sim.Submit(f.ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Predictions, Kind: "refund_outcome",
				Payload: prediction("issue_refund", outcome, "refund_due")})
			if err != nil || d.Code != reason.Committed {
				f.t.Fatalf("prediction: %s %v", d.Code, err)
			}
		}
	}
	then := func(setup func(f *fixture), kind string, p blackboard.Payload) func(f *fixture) (reason.Code, error) {
		return func(f *fixture) (reason.Code, error) {
			setup(f)
			return decided(f.propose(tr, blackboard.Actions, kind, p))
		}
	}
	proposeBelief := func(conf *float64, percept blackboard.Payload, b blackboard.Payload) func(f *fixture) (reason.Code, error) {
		return func(f *fixture) (reason.Code, error) {
			if percept != nil {
				f.perceive(tr, "charge", percept, conf, 0)
			}
			return decided(f.propose(tr, blackboard.Beliefs, "refund_due", b))
		}
	}
	proposePlan := func(steps ...blackboard.Payload) func(f *fixture) (reason.Code, error) {
		return func(f *fixture) (reason.Code, error) {
			f.groundedBelief(tr)
			f.constrain(tr, "no_duplicate_refund", "is_duplicate")
			return decided(f.propose(tr, blackboard.Plans, "action_plan", plan(steps...)))
		}
	}
	clean := blackboard.Payload{"amount": 10.0}
	return []codeCase{
		{name: "belief committed", want: reason.Committed, run: proposeBelief(nil, clean, belief(true, "charge"))},
		{name: "belief depends_on a percept id", want: reason.Committed, run: func(f *fixture) (reason.Code, error) {
			p := f.perceive(tr, "charge", clean, nil, 0)
			return decided(f.propose(tr, blackboard.Beliefs, "refund_due", belief(true, p.ID)))
		}},
		{name: "percept missing", want: reason.MissingEvidence, run: proposeBelief(nil, nil, belief(true, "charge"))},
		{name: "belief without depends_on", want: reason.MissingEvidence, run: proposeBelief(nil, clean, blackboard.Payload{"value": true})},
		{name: "belief with empty depends_on", want: reason.MissingEvidence, run: proposeBelief(nil, clean, belief(true))},
		{name: "percept flagged stale", want: reason.StaleEvidence, run: proposeBelief(nil, blackboard.Payload{"stale": true}, belief(true, "charge"))},
		{name: "percept past its TTL", want: reason.StaleEvidence, run: func(f *fixture) (reason.Code, error) {
			f.perceive(tr, "charge", clean, nil, time.Second)
			f.clock.Advance(2 * time.Second)
			return decided(f.propose(tr, blackboard.Beliefs, "refund_due", belief(true, "charge")))
		}},
		{name: "conflict below threshold", want: reason.UnresolvedConflict, run: proposeBelief(new(0.3), blackboard.Payload{"conflict": true}, belief(true, "charge"))},
		{name: "conflict without confidence", want: reason.UnresolvedConflict, run: proposeBelief(nil, blackboard.Payload{"conflict": true}, belief(true, "charge"))},
		{name: "conflict at the threshold is arbitrated", want: reason.Committed, run: proposeBelief(new(0.7), blackboard.Payload{"conflict": true}, belief(true, "charge"))},
		{name: "confidence at the minimum", want: reason.Committed, run: proposeBelief(new(0.5), clean, belief(true, "charge"))},
		{name: "low confidence", want: reason.LowConfidence, run: proposeBelief(new(0.3), clean, belief(true, "charge"))},
		{name: "arbitrated but below min confidence", want: reason.LowConfidence, cfg: kernel.Config{MinConfidence: 0.9},
			run: proposeBelief(new(0.8), blackboard.Payload{"conflict": true}, belief(true, "charge"))},

		{name: "malformed proposal", want: reason.InvalidProposal, sentinel: kernel.ErrInvalidProposal, run: func(f *fixture) (reason.Code, error) {
			f.mark()
			return decided(f.propose(tr, blackboard.Beliefs, "refund_due", blackboard.Payload{"depends_on": "charge"}))
		}},
		{name: "commit of a decided proposal", want: reason.InvalidProposal, sentinel: kernel.ErrInvalidProposal, run: func(f *fixture) (reason.Code, error) {
			d := f.groundedBelief(tr)
			f.mark()
			return decided(f.planner.Commit(f.ctx, tr, d.ProposalID))
		}},
		{name: "commit from another trace", want: reason.InvalidProposal, sentinel: kernel.ErrInvalidProposal, run: func(f *fixture) (reason.Code, error) {
			f.perceive("other", "charge", clean, nil, 0)
			p, err := f.planner.Write(f.ctx, kernel.Entry{TraceID: "other", Slot: blackboard.Beliefs, Kind: "refund_due", Payload: belief(true, "charge")})
			if err != nil {
				f.t.Fatal(err)
			}
			f.mark()
			return decided(f.planner.Commit(f.ctx, tr, p))
		}},
		{name: "commit of a non-proposal", want: reason.InvalidProposal, sentinel: kernel.ErrInvalidProposal, run: func(f *fixture) (reason.Code, error) {
			p := f.perceive(tr, "charge", clean, nil, 0)
			f.mark()
			return decided(f.planner.Commit(f.ctx, tr, p.ID))
		}},
		{name: "commit of an unknown id", want: reason.InvalidProposal, sentinel: kernel.ErrInvalidProposal, run: func(f *fixture) (reason.Code, error) {
			f.mark()
			return decided(f.planner.Commit(f.ctx, tr, "beliefs:t1:7"))
		}},

		{name: "plan feasible", want: reason.PlanFeasible, run: proposePlan(with(step("issue_refund", "refund_due"), "is_duplicate", false))},
		{name: "plan with a fallback step", want: reason.PlanFeasible, run: proposePlan(step(kernel.FallbackQueueForReview))},
		{name: "plan missing belief", want: reason.PlanMissingBelief, run: proposePlan(with(step("issue_refund", "refund_due"), "is_duplicate", false), step("notify", "customer_notified"))},
		{name: "plan step without the constraint's field fails closed", want: "PLAN_" + reason.Blocked("no_duplicate_refund"), run: proposePlan(step("issue_refund", "refund_due"))},
		{name: "plan belief false", want: reason.PlanBeliefNotSatisfied, run: func(f *fixture) (reason.Code, error) {
			falseBelief(f)
			return decided(f.propose(tr, blackboard.Plans, "action_plan", plan(step("issue_refund", "refund_due"))))
		}},
		{name: "plan step without beliefs", want: reason.PlanUngrounded, run: proposePlan(step("issue_refund"))},
		{name: "plan step below its spec", want: reason.PlanUngrounded, cfg: kernel.Config{ActionSpecs: []kernel.ActionSpec{{Type: "issue_refund", MinBeliefs: []string{"refund_due", "charge_verified"}}}},
			run: proposePlan(step("issue_refund", "refund_due"))},
		{name: "plan step of unknown type", want: reason.UnknownActionType, cfg: strict, run: proposePlan(step("Issue_Refund", "refund_due"))},
		{name: "plan blocked by constraint", want: "PLAN_" + reason.Blocked("no_duplicate_refund"),
			run: proposePlan(with(step("issue_refund", "refund_due"), "is_duplicate", true))},

		{name: "action committed", want: reason.Committed, run: proposeAct("issue_refund", action("refund_due"))},
		{name: "action blocked by constraint", want: reason.Blocked("no_duplicate_refund"), run: func(f *fixture) (reason.Code, error) {
			f.groundedBelief(tr)
			f.constrain(tr, "no_duplicate_refund", "is_duplicate")
			return decided(f.propose(tr, blackboard.Actions, "issue_refund", with(action("refund_due"), "is_duplicate", true)))
		}},
		{name: "action without committed belief", want: reason.NoCommittedBelief, run: func(f *fixture) (reason.Code, error) {
			return decided(f.propose(tr, blackboard.Actions, "issue_refund", action("refund_due")))
		}},
		{name: "action on a false belief", want: reason.BeliefNotSatisfied, run: then(falseBelief, "issue_refund", action("refund_due"))},
		{name: "spec requires prediction, none", want: reason.NoPrediction,
			cfg: kernel.Config{ActionSpecs: []kernel.ActionSpec{{Type: "issue_refund", RequirePrediction: true}}},
			run: proposeAct("issue_refund", action("refund_due"))},
		{name: "payload requires prediction, none", want: reason.NoPrediction,
			run: proposeAct("issue_refund", with(action("refund_due"), "require_prediction", true))},
		{name: "spec requires prediction, negative", want: reason.NegativePrediction,
			cfg: kernel.Config{ActionSpecs: []kernel.ActionSpec{{Type: "issue_refund", RequirePrediction: true}}},
			run: then(withPrediction(-0.5), "issue_refund", action("refund_due"))},
		{name: "payload requires prediction, negative", want: reason.NegativePrediction,
			run: then(withPrediction(-0.5), "issue_refund", with(action("refund_due"), "require_prediction", true))},
		{name: "prediction gate passes", want: reason.Committed,
			run: then(withPrediction(1), "issue_refund", with(action("refund_due"), "require_prediction", true))},
		{name: "prediction without its belief", want: reason.PredictionMissingBelief, run: func(f *fixture) (reason.Code, error) {
			return decided(f.sim.Submit(f.ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Predictions, Kind: "refund_outcome",
				Payload: prediction("issue_refund", 1, "refund_due")}))
		}},
		{name: "action without beliefs", want: reason.UngroundedAction, run: proposeAct("issue_refund", action())},
		{name: "action below its spec", want: reason.UngroundedAction,
			cfg: kernel.Config{ActionSpecs: []kernel.ActionSpec{{Type: "issue_refund", MinBeliefs: []string{"refund_due", "charge_verified"}}}},
			run: proposeAct("issue_refund", action("refund_due"))},
		{name: "fallback no longer registered", want: reason.UngroundedAction,
			cfg: kernel.Config{ActionSpecs: []kernel.ActionSpec{{Type: kernel.FallbackQueueForReview}}},
			run: proposeAct(kernel.FallbackQueueForReview, blackboard.Payload{})},
		{name: "action outside any plan", want: reason.NoFeasiblePlan,
			cfg: kernel.Config{ActionSpecs: []kernel.ActionSpec{{Type: "issue_refund", MinBeliefs: []string{"refund_due"}, RequirePlan: true}}},
			run: proposeAct("issue_refund", action("refund_due"))},
		{name: "action inside a feasible plan", want: reason.Committed,
			cfg: kernel.Config{ActionSpecs: []kernel.ActionSpec{{Type: "issue_refund", MinBeliefs: []string{"refund_due"}, RequirePlan: true}}},
			run: func(f *fixture) (reason.Code, error) {
				f.groundedBelief(tr)
				pd, err := f.propose(tr, blackboard.Plans, "action_plan", plan(step("issue_refund", "refund_due")))
				if err != nil || pd.Code != reason.PlanFeasible {
					f.t.Fatalf("plan: %s %v", pd.Code, err)
				}
				d, err := f.propose(tr, blackboard.Actions, "issue_refund", action("refund_due"))
				if err == nil && (len(f.get(d.CommittedID).Provenance.InputRefs) < 2 || !slices.Contains(f.get(d.CommittedID).Provenance.InputRefs, pd.CommittedID)) {
					f.t.Errorf("action inputs %v lack the plan %s", f.get(d.CommittedID).Provenance.InputRefs, pd.CommittedID)
				}
				return d.Code, err
			}},
		{name: "fallback commits", want: reason.Committed, run: proposeAct(kernel.FallbackQueueForReview, blackboard.Payload{})},
		{name: "strict: case variant", want: reason.UnknownActionType, cfg: strict, run: proposeAct("Issue_Refund", action("refund_due"))},
		{name: "strict: trailing space", want: reason.UnknownActionType, cfg: strict, run: proposeAct("issue_refund ", action("refund_due"))},
		{name: "strict: unregistered", want: reason.UnknownActionType, cfg: strict, run: proposeAct("wire_money", action("refund_due"))},
		{name: "strict: registered", want: reason.Committed, cfg: strict, run: proposeAct("issue_refund", action("refund_due"))},

		{name: "proposal superseded", want: reason.SupersededByCommit, run: func(f *fixture) (reason.Code, error) {
			return f.get(f.groundedBelief(tr).ProposalID).Reason, nil
		}},
		{name: "percept expired", want: reason.TTLExpired, run: func(f *fixture) (reason.Code, error) {
			p := f.perceive(tr, "charge", clean, nil, time.Minute)
			f.clock.Advance(time.Hour)
			if n, err := f.k.Expire(f.ctx, tr); n != 1 || err != nil {
				f.t.Fatalf("Expire: %d %v", n, err)
			}
			r := f.get(p.ID)
			if r.Status != blackboard.StatusExpired {
				f.t.Errorf("status %s", r.Status)
			}
			return r.Reason, nil
		}},

		{name: "input ref does not exist", want: reason.InvalidReference, sentinel: kernel.ErrInvalidReference, run: func(f *fixture) (reason.Code, error) {
			f.mark()
			return f.written(f.tool.Write(f.ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Percepts, Kind: "charge", InputRefs: []string{"percepts:t1:1"}}))
		}},
		{name: "evidence ref does not exist", want: reason.InvalidReference, sentinel: kernel.ErrInvalidReference, run: func(f *fixture) (reason.Code, error) {
			f.perceive(tr, "charge", clean, nil, 0)
			f.mark()
			return f.written(f.ev.Write(f.ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Evidence, Kind: "audit", EvidenceRefs: []string{"evidence:t1:9"}}))
		}},
		{name: "ref to another trace's episode record", want: reason.InvalidReference, sentinel: kernel.ErrInvalidReference, run: func(f *fixture) (reason.Code, error) {
			other := f.perceive("other", "charge", clean, nil, 0)
			f.mark()
			return decided(f.planner.Submit(f.ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Beliefs, Kind: "refund_due",
				Payload: belief(true, "charge"), InputRefs: []string{other.ID}}))
		}},
		{name: "depends_on an id that does not exist", want: reason.InvalidReference, sentinel: kernel.ErrInvalidReference, run: func(f *fixture) (reason.Code, error) {
			f.perceive(tr, "charge", clean, nil, 0)
			f.mark()
			return decided(f.propose(tr, blackboard.Beliefs, "refund_due", belief(true, "percepts:t1:99")))
		}},
		{name: "depends_on another trace's percept id", want: reason.InvalidReference, sentinel: kernel.ErrInvalidReference, run: func(f *fixture) (reason.Code, error) {
			other := f.perceive("other", "charge", clean, nil, 0)
			f.mark()
			return decided(f.propose(tr, blackboard.Beliefs, "refund_due", belief(true, other.ID)))
		}},
		{name: "ref to a persistent record of another trace", want: reason.Committed, run: func(f *fixture) (reason.Code, error) {
			c, err := f.sym.CommitConstraint(f.ctx, "other", kernel.Constraint{Name: "learned", Enabled: true, BlocksField: "x"}, blackboard.ScopePersistent)
			if err != nil {
				f.t.Fatal(err)
			}
			return f.written(f.tool.Write(f.ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Percepts, Kind: "charge", InputRefs: []string{c}}))
		}},

		{name: "planner sets a derived flag", want: reason.FieldMismatch, run: proposeAct("issue_refund", with(action("refund_due"), "uses_stale_data", true))},
		{name: "planner contradicts a bound percept", want: reason.FieldMismatch, run: func(f *fixture) (reason.Code, error) {
			f.perceive(tr, "charge", blackboard.Payload{"is_duplicate": true}, nil, 0)
			f.mustPropose(tr, blackboard.Beliefs, "refund_due", belief(true, "charge"))
			if _, err := f.sym.CommitConstraint(f.ctx, tr, kernel.Constraint{Name: "no_duplicate_refund", Enabled: true,
				BlocksField: "is_duplicate", BindPercept: "charge"}, ""); err != nil {
				f.t.Fatal(err)
			}
			return decided(f.propose(tr, blackboard.Actions, "issue_refund", with(action("refund_due"), "is_duplicate", false)))
		}},
		{name: "bound percept blocks a silent proposal", want: reason.Blocked("no_duplicate_refund"), run: func(f *fixture) (reason.Code, error) {
			f.perceive(tr, "charge", blackboard.Payload{"is_duplicate": true}, nil, 0)
			f.mustPropose(tr, blackboard.Beliefs, "refund_due", belief(true, "charge"))
			if _, err := f.sym.CommitConstraint(f.ctx, tr, kernel.Constraint{Name: "no_duplicate_refund", Enabled: true,
				BlocksField: "is_duplicate", BindPercept: "charge"}, ""); err != nil {
				f.t.Fatal(err)
			}
			return decided(f.propose(tr, blackboard.Actions, "issue_refund", action("refund_due")))
		}},
		{name: "bound constraint leaves the safe fallback alone", want: reason.Committed, run: func(f *fixture) (reason.Code, error) {
			f.perceive(tr, "charge", blackboard.Payload{"is_duplicate": true}, nil, 0)
			if _, err := f.sym.CommitConstraint(f.ctx, tr, kernel.Constraint{Name: "no_duplicate_refund", Enabled: true,
				BlocksField: "is_duplicate", BindPercept: "charge"}, ""); err != nil {
				f.t.Fatal(err)
			}
			return decided(f.propose(tr, blackboard.Actions, kernel.FallbackQueueForReview, blackboard.Payload{"reason": "PLAN_NO_DUPLICATE_REFUND_BLOCKED"}))
		}},
		{name: "action payload type disagrees with its kind", want: reason.FieldMismatch,
			run: proposeAct(kernel.FallbackQueueForReview, blackboard.Payload{"type": "issue_refund"})},
		{name: "belief spec: evidence shopping", want: reason.MissingEvidence,
			cfg: kernel.Config{BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"charge"}}}},
			run: func(f *fixture) (reason.Code, error) {
				f.perceive(tr, "charge", blackboard.Payload{"stale": true}, nil, 0)
				f.perceive(tr, "refund", blackboard.Payload{"amount": 10.0}, nil, 0)
				return decided(f.propose(tr, blackboard.Beliefs, "refund_due", belief(true, "refund")))
			}},
		{name: "belief spec met through a percept id", want: reason.Committed,
			cfg: kernel.Config{BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"charge"}}}},
			run: func(f *fixture) (reason.Code, error) {
				c := f.perceive(tr, "charge", clean, nil, 0)
				return decided(f.propose(tr, blackboard.Beliefs, "refund_due", belief(true, c.ID)))
			}},
		{name: "disabled constraint does not block", want: reason.Committed, run: func(f *fixture) (reason.Code, error) {
			f.groundedBelief(tr)
			if _, err := f.sym.CommitConstraint(f.ctx, tr, kernel.Constraint{Name: "no_duplicate_refund", BlocksField: "is_duplicate"}, ""); err != nil {
				f.t.Fatal(err)
			}
			return decided(f.propose(tr, blackboard.Actions, "issue_refund", with(action("refund_due"), "is_duplicate", true)))
		}},
		{name: "belief names a superseded observation", want: reason.SupersededEvidence, run: func(f *fixture) (reason.Code, error) {
			old := f.perceive(tr, "charge", clean, nil, 0)
			f.perceive(tr, "charge", blackboard.Payload{"amount": 10.0, "stale": true}, nil, 0)
			return decided(f.propose(tr, blackboard.Beliefs, "refund_due", belief(true, old.ID)))
		}},
		{name: "source flags low confidence", want: reason.LowConfidence, run: proposeBelief(nil, blackboard.Payload{"low_confidence": true}, belief(true, "charge"))},
		{name: "grounding used up", want: reason.DuplicateAction, run: func(f *fixture) (reason.Code, error) {
			f.groundedBelief(tr)
			if d := f.mustPropose(tr, blackboard.Actions, "issue_refund", action("refund_due")); !d.Committed() {
				f.t.Fatalf("first refund: %s", d.Code)
			}
			return decided(f.propose(tr, blackboard.Actions, "issue_refund", action("refund_due")))
		}},
		{name: "once-key field missing", want: reason.OnceKeyMissing,
			cfg: kernel.Config{ActionSpecs: []kernel.ActionSpec{{Type: "issue_refund", Once: &kernel.OnceKey{Fields: []string{"order_id"}}}}},
			run: proposeAct("issue_refund", action("refund_due"))},
		{name: "validator reports a violated rule", want: reason.RuleViolated,
			cfg: kernel.Config{Validators: []kernel.Validator{kernel.ValidatorFunc(func(context.Context, kernel.Candidate) kernel.Cause {
				return kernel.Cause{Code: reason.RuleViolated, Rule: "r"}
			})}},
			run: proposeBelief(nil, clean, belief(true, "charge"))},
		{name: "validator cannot evaluate its rule", want: reason.RuleError,
			cfg: kernel.Config{Validators: []kernel.Validator{kernel.ValidatorFunc(func(context.Context, kernel.Candidate) kernel.Cause {
				return kernel.Cause{Code: reason.RuleError, Detail: "no such field"}
			})}},
			run: proposeBelief(nil, clean, belief(true, "charge"))},
		{name: "empty kind", want: reason.InvalidInput, sentinel: blackboard.ErrInvalidInput, run: func(f *fixture) (reason.Code, error) {
			f.mark()
			return f.written(f.tool.Write(f.ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Percepts}))
		}},
		{name: "tool writes a belief", want: reason.PermissionDenied, sentinel: blackboard.ErrPermission, run: func(f *fixture) (reason.Code, error) {
			f.mark()
			return f.written(f.tool.Write(f.ctx, kernel.Entry{TraceID: tr, Slot: blackboard.Beliefs, Kind: "refund_due"}))
		}},
	}
}

func TestCodes(t *testing.T) {
	produced := map[reason.Code]bool{}
	for _, tc := range codeCases() {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixtureWith(t, tc.cfg)
			code, err := tc.run(f)
			if tc.sentinel != nil {
				wantErr(t, err, tc.sentinel, tc.want)
				f.unchanged()
			} else if err != nil || code != tc.want {
				t.Errorf("got %q (err %v), want %q", code, err, tc.want)
			}
			if !t.Failed() {
				produced[tc.want] = true
			}
		})
	}
	for _, c := range declaredCodes(t) {
		if !produced[c] {
			t.Errorf("no passing case produces %s", c)
		}
	}
	var plan, act bool
	for c := range produced {
		s := string(c)
		plan = plan || strings.HasPrefix(s, "PLAN_") && strings.HasSuffix(s, "_BLOCKED")
		act = act || !strings.HasPrefix(s, "PLAN_") && strings.HasSuffix(s, "_BLOCKED")
	}
	if !plan || !act {
		t.Errorf("constraint-blocked codes produced: plan %v, action %v", plan, act)
	}
}

// declaredCodes reads every Code("...") constant from reason/kernel.go, so that a
// code added there without a case here fails TestCodes.
func declaredCodes(t *testing.T) []reason.Code {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), "../reason/kernel.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []reason.Code
	ast.Inspect(file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) != 1 {
			return true
		}
		if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "Code" {
			if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, reason.Code(s))
			}
		}
		return true
	})
	if len(out) < 20 {
		t.Fatalf("found only %d codes in reason/kernel.go", len(out))
	}
	return out
}

package rules_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/internal/expr"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/rules"
)

const tr = "ep-1"

// The rules of the package doc: a refund may not exceed the charge, and
// refund_due must agree with what the charge percept says.
var (
	refundWithinCharge = rules.OnAction("refund_within_charge", "issue_refund", `action.amount <= percepts.charge.amount`)
	refundDueMatches   = rules.OnBelief("refund_due_matches_charge", "refund_due", `value == percepts.charge.refundable`)
)

func mustNew(t *testing.T, opts ...rules.Spec) *rules.Rules {
	t.Helper()
	rs, err := rules.New(opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return rs
}

// harness drives a kernel whose only validator is rs, wrapped so that the
// test sees the Verdict rs gave (the kernel does not yet copy a verdict's
// Rule and Detail into the Decision in every branch).
type harness struct {
	t       *testing.T
	ctx     context.Context
	k       *kernel.Kernel
	tool    kernel.Handle
	planner *kernel.Proposer

	mu      sync.Mutex
	verdict map[string]kernel.Cause // by proposal id
}

// newHarness builds the kernel; rs nil means no validator at all. evalCtx,
// if set, replaces the context rs is called with.
func newHarness(t *testing.T, rs *rules.Rules, evalCtx context.Context) *harness {
	t.Helper()
	h := &harness{t: t, ctx: context.Background(), verdict: map[string]kernel.Cause{}}
	// Several refunds of a test may rest on one belief.
	cfg := kernel.Config{ActionSpecs: []kernel.ActionSpec{{Type: "issue_refund", MinBeliefs: []string{"refund_due"}, Repeatable: true}}}
	if rs != nil {
		cfg.Validators = append(cfg.Validators, kernel.ValidatorFunc(func(ctx context.Context, c kernel.Candidate) kernel.Cause {
			if evalCtx != nil {
				ctx = evalCtx
			}
			v := rs.Validate(ctx, c)
			h.mu.Lock()
			h.verdict[c.Proposal().ID] = v
			h.mu.Unlock()
			return v
		}))
	}
	k, err := kernel.New(cfg)
	if err != nil {
		t.Fatalf("kernel.New: %v", err)
	}
	t.Cleanup(func() { k.Close() })
	h.k, h.tool, h.planner = k, k.Handle(blackboard.RoleTool, "payments"), k.Proposer(blackboard.RolePlanner, "planner")
	return h
}

func (h *harness) perceive(trace, kind string, p blackboard.Payload) {
	h.t.Helper()
	if _, err := h.tool.Write(h.ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: kind, Payload: p}); err != nil {
		h.t.Fatalf("percept %s: %v", kind, err)
	}
}

// propose submits a proposal and returns the decision and the verdict rs
// gave it (zero when rs was not asked).
func (h *harness) propose(trace string, slot blackboard.Slot, kind string, p blackboard.Payload) (kernel.Decision, kernel.Cause) {
	h.t.Helper()
	d, err := h.planner.Submit(h.ctx, kernel.Entry{TraceID: trace, Slot: slot, Kind: kind, Payload: p})
	if err != nil {
		h.t.Fatalf("submit %s %s: %v", slot, kind, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return d, h.verdict[d.ProposalID]
}

func refundDue(value bool) blackboard.Payload {
	return blackboard.Payload{"value": value, "depends_on": []string{"charge"}}
}

func refund(amount any) blackboard.Payload {
	return blackboard.Payload{"amount": amount, "requires_beliefs": []string{"refund_due"}}
}

// refused checks that d was refused with code by rule, and that the detail
// mentions each of wantDetail.
func refused(t *testing.T, what string, d kernel.Decision, v kernel.Cause, code reason.Code, rule string, wantDetail ...string) {
	t.Helper()
	if d.Code != code || v.Code != code || v.Rule != rule {
		t.Errorf("%s: decision %s, verdict %+v; want %s by %s", what, d.Code, v, code, rule)
	}
	// Once the kernel copies the verdict into the Decision, it must be
	// this one.
	if d.Rule != "" && d.Rule != rule {
		t.Errorf("%s: Decision.Rule %q, want %q", what, d.Rule, rule)
	}
	for _, s := range wantDetail {
		if !strings.Contains(v.Detail, s) {
			t.Errorf("%s: detail %q does not mention %q", what, v.Detail, s)
		}
	}
}

func committed(t *testing.T, what string, d kernel.Decision) {
	t.Helper()
	if !d.Committed() {
		t.Errorf("%s: %s (rule %q), want it committed", what, d.Code, d.Rule)
	}
}

func TestNewRefusesBadRules(t *testing.T) {
	for _, tc := range []struct {
		what string
		opts []rules.Spec
		name string // the rule the error must name
		msg  string // in the error text
	}{
		{"syntax", []rules.Spec{rules.OnAction("r", "a", `action.amount <=`)}, "r", "does not compile"},
		{"non-bool", []rules.Spec{rules.OnAction("r", "a", `size(action) + 1`)}, "r", "want bool"},
		{"string type", []rules.Spec{rules.OnBelief("r", "b", `"yes"`)}, "r", "want bool"},
		{"unknown variable", []rules.Spec{rules.OnAction("r", "a", `charge.amount > 0`)}, "r", "undeclared reference"},
		{"action in a belief rule", []rules.Spec{rules.OnBelief("r", "b", `action.amount > 0`)}, "r", "undeclared reference"},
		{"value in an action rule", []rules.Spec{rules.OnAction("r", "a", `value`)}, "r", "undeclared reference"},
		{"unknown function", []rules.Spec{rules.OnAction("r", "a", `nope(action)`)}, "r", "does not compile"},
		{"empty name", []rules.Spec{rules.OnAction("", "a", `true`)}, "", "empty name"},
		{"empty kind", []rules.Spec{rules.OnBelief("r", "", `true`)}, "r", "empty belief kind"},
		{"empty expression", []rules.Spec{rules.OnAction("r", "a", ``)}, "r", "empty expression"},
		{"duplicate name", []rules.Spec{rules.OnAction("r", "a", `true`), rules.OnBelief("r", "b", `true`)}, "r", "duplicate name"},
		{"bad rule after good ones", []rules.Spec{refundWithinCharge, refundDueMatches, rules.OnAction("late", "a", `1`)}, "late", "want bool"},
	} {
		rs, err := rules.New(tc.opts...)
		switch {
		case err == nil:
			t.Errorf("%s: New accepted it (%v)", tc.what, rs.Specs())
		case !errors.Is(err, rules.ErrInvalidRule):
			t.Errorf("%s: %v does not wrap ErrInvalidRule", tc.what, err)
		case !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.name)) || !strings.Contains(err.Error(), tc.msg):
			t.Errorf("%s: error %q should name the rule and say %q", tc.what, err, tc.msg)
		}
		if rs != nil {
			t.Errorf("%s: New returned rules with its error", tc.what)
		}
	}
}

func TestNew(t *testing.T) {
	rs := mustNew(t, refundWithinCharge, refundDueMatches,
		rules.OnAction("dyn_result", "issue_refund", `action.approved`))
	want := []string{"refund_within_charge", "refund_due_matches_charge", "dyn_result"}
	specs := rs.Specs()
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, want) {
		t.Errorf("Specs() names %v, want %v", names, want)
	}
	specs[0].Name = "changed"
	if rs.Specs()[0].Name != want[0] {
		t.Error("Specs returned the Rules' own slice")
	}
	// No rules: everything passes.
	h := newHarness(t, mustNew(t), nil)
	h.perceive(tr, "charge", blackboard.Payload{"amount": 10.0})
	d, _ := h.propose(tr, blackboard.Beliefs, "refund_due", refundDue(true))
	committed(t, "belief under no rules", d)
}

// TestRefundAboveCharge is the attack the action rule stops: a refund
// larger than the charge. The kernel's built-in checks see nothing wrong
// with it (the refund is grounded in a true, fresh belief); the rule does.
func TestRefundAboveCharge(t *testing.T) {
	for _, withRules := range []bool{false, true} {
		var rs *rules.Rules
		if withRules {
			rs = mustNew(t, refundWithinCharge)
		}
		h := newHarness(t, rs, nil)
		h.perceive(tr, "charge", blackboard.Payload{"amount": 89.0})
		d, _ := h.propose(tr, blackboard.Beliefs, "refund_due", refundDue(true))
		committed(t, "belief", d)
		d, v := h.propose(tr, blackboard.Actions, "issue_refund", refund(5000.0))
		if !withRules {
			committed(t, "refund of 5000 on a charge of 89 without rules", d)
			continue
		}
		refused(t, "refund of 5000 on a charge of 89", d, v, reason.RuleViolated, "refund_within_charge",
			"action issue_refund", "action.amount <= percepts.charge.amount", "false")
		// Int literals and equal amounts are fine: the charge in full.
		d, _ = h.propose(tr, blackboard.Actions, "issue_refund", refund(89))
		committed(t, "refund of the charge", d)
	}
}

func TestBeliefRule(t *testing.T) {
	h := newHarness(t, mustNew(t, refundDueMatches), nil)
	h.perceive(tr, "charge", blackboard.Payload{"amount": 89.0, "refundable": false})
	// The planner claims a refund is due; the charge says it is not.
	d, v := h.propose(tr, blackboard.Beliefs, "refund_due", refundDue(true))
	refused(t, "refund_due true on a non-refundable charge", d, v, reason.RuleViolated, "refund_due_matches_charge",
		"belief refund_due", "value == percepts.charge.refundable")
	// The belief as the percept has it commits.
	d, _ = h.propose(tr, blackboard.Beliefs, "refund_due", refundDue(false))
	committed(t, "refund_due false on a non-refundable charge", d)
	// The whole proposal is there too.
	h2 := newHarness(t, mustNew(t, rules.OnBelief("has_reason", "refund_due", `belief.reason != ""`)), nil)
	h2.perceive(tr, "charge", blackboard.Payload{"amount": 1.0})
	d, _ = h2.propose(tr, blackboard.Beliefs, "refund_due", blackboard.Payload{"value": true, "depends_on": []string{"charge"}, "reason": "duplicate"})
	committed(t, "belief with a reason", d)
	d, v = h2.propose(tr, blackboard.Beliefs, "refund_due", blackboard.Payload{"value": true, "depends_on": []string{"charge"}, "reason": ""})
	refused(t, "belief with an empty reason", d, v, reason.RuleViolated, "has_reason")
}

// TestGroundsRechecked: a belief that agreed with the charge when it was
// committed no longer grounds a refund or a plan once a newer observation
// of the charge contradicts it.
func TestGroundsRechecked(t *testing.T) {
	rs := mustNew(t, refundWithinCharge, refundDueMatches)
	h := newHarness(t, rs, nil)
	h.perceive(tr, "charge", blackboard.Payload{"amount": 89.0, "refundable": true})
	d, _ := h.propose(tr, blackboard.Beliefs, "refund_due", refundDue(true))
	committed(t, "belief", d)
	beliefID := d.CommittedID
	refundPlan := blackboard.Payload{"steps": []any{map[string]any{"action": "issue_refund", "requires_beliefs": []any{"refund_due"}}}}
	d, _ = h.propose(tr, blackboard.Plans, "p", refundPlan)
	committed(t, "plan on a consistent belief", d)

	// The charge has been refunded elsewhere since.
	h.perceive(tr, "charge", blackboard.Payload{"amount": 89.0, "refundable": false})
	d, v := h.propose(tr, blackboard.Actions, "issue_refund", refund(89.0))
	refused(t, "refund on a contradicted belief", d, v, reason.RuleViolated, "refund_due_matches_charge",
		"grounding belief refund_due", beliefID, "value == percepts.charge.refundable")
	d, v = h.propose(tr, blackboard.Plans, "p", refundPlan)
	refused(t, "plan on a contradicted belief", d, v, reason.RuleViolated, "refund_due_matches_charge", beliefID)

	// A ground that cannot be rechecked fails closed as well.
	h.perceive(tr, "charge", blackboard.Payload{"amount": 89.0})
	d, v = h.propose(tr, blackboard.Actions, "issue_refund", refund(89.0))
	refused(t, "refund when the charge no longer says", d, v, reason.RuleError, "refund_due_matches_charge", beliefID, "refundable")

	// Consistent again: the grounds pass and the action's own rule decides.
	h.perceive(tr, "charge", blackboard.Payload{"amount": 89.0, "refundable": true})
	d, _ = h.propose(tr, blackboard.Actions, "issue_refund", refund(89.0))
	committed(t, "refund once the charge agrees again", d)
}

// TestFailClosed: a rule that cannot be evaluated rejects with RULE_ERROR.
func TestFailClosed(t *testing.T) {
	rs := mustNew(t,
		refundWithinCharge,
		rules.OnAction("approved", "issue_refund", `action.approved`), // dyn: checked at evaluation
	)
	for _, tc := range []struct {
		what    string
		charge  blackboard.Payload // nil: no charge percept
		refund  blackboard.Payload
		rule    string
		inError string
	}{
		{"missing field", blackboard.Payload{"amount": 89.0}, blackboard.Payload{"requires_beliefs": []string{"refund_due"}, "approved": true}, "refund_within_charge", "no such key: amount"},
		{"missing percept", nil, with(refund(10.0), "approved", true), "refund_within_charge", "no such key: charge"},
		{"type mismatch", blackboard.Payload{"amount": 89.0}, with(refund("ten"), "approved", true), "refund_within_charge", "no such overload"},
		{"non-bool result", blackboard.Payload{"amount": 89.0}, with(refund(10.0), "approved", "yes"), "approved", "not bool"},
	} {
		h := newHarness(t, rs, nil)
		if tc.charge != nil {
			h.perceive(tr, "charge", tc.charge)
		} else {
			h.perceive(tr, "other", blackboard.Payload{"x": 1.0})
		}
		dep := "charge"
		if tc.charge == nil {
			dep = "other"
		}
		d, _ := h.propose(tr, blackboard.Beliefs, "refund_due", blackboard.Payload{"value": true, "depends_on": []string{dep}})
		committed(t, tc.what+": belief", d)
		d, v := h.propose(tr, blackboard.Actions, "issue_refund", tc.refund)
		refused(t, tc.what, d, v, reason.RuleError, tc.rule, "action issue_refund", tc.inError)
	}
}

func with(p blackboard.Payload, kv ...any) blackboard.Payload {
	out := p.Clone()
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// TestAttackRuleCostBounded: a rule whose worst case is too costly is refused by New;
// an evaluation cut short by the caller's cancellation fails closed.
func TestAttackRuleCostBounded(t *testing.T) {
	_, err := rules.New(rules.OnAction("all_distinct", "tag", `action.items.all(x, action.items.all(y, x == y || x != y))`))
	if !errors.Is(err, rules.ErrInvalidRule) || !strings.Contains(err.Error(), `rule "all_distinct"`) || !strings.Contains(err.Error(), "may cost up to") {
		t.Errorf("a loop within a loop over a proposal's list: %v", err)
	}

	linear := rules.OnAction("small", "tag", `action.items.all(x, x < 10000)`)
	items := make([]any, 1000)
	for i := range items {
		items[i] = float64(i)
	}
	act := blackboard.Payload{"items": items, "requires_beliefs": []string{"ok"}}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	h := newHarness(t, mustNew(t, linear), cancelled)
	h.perceive(tr, "p", blackboard.Payload{"x": 1.0})
	h.propose(tr, blackboard.Beliefs, "ok", blackboard.Payload{"value": true, "depends_on": []string{"p"}})
	d, v := h.propose(tr, blackboard.Actions, "tag", act)
	refused(t, "evaluation under a cancelled context", d, v, reason.RuleError, "small", "cancel")
}

// TestAttackRuleInputBounds: a planner that sends a list, a string or a
// nesting larger than a rule may be given (or a tool whose percept holds
// one, when a rule reads percepts) gets RULE_INPUT_TOO_LARGE before any
// rule runs, naming the value; within the bounds the rule decides.
func TestAttackRuleInputBounds(t *testing.T) {
	small := rules.OnAction("small_items", "tag", `action.items.all(i, i <= 10)`)
	fromPercept := rules.OnAction("listed", "tag", `percepts.catalogue.ids.all(i, i <= 10)`)
	list := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = 1.0
		}
		return out
	}
	deep := any(1.0)
	for range expr.MaxDepth + 1 {
		deep = []any{deep}
	}
	wide := map[string]any{}
	for i := range expr.MaxElements + 1 {
		wide[fmt.Sprint("k", i)] = 1.0
	}
	many := make([]any, 20)
	for i := range many {
		many[i] = list(expr.MaxElements)
	}
	for _, tc := range []struct {
		name    string
		rule    rules.Spec
		action  blackboard.Payload
		percept blackboard.Payload
		want    reason.Code
		detail  string
	}{
		{"within the bounds", small, blackboard.Payload{"items": list(expr.MaxElements)}, nil, "", ""},
		{"a long list", small, blackboard.Payload{"items": list(16000)}, nil, reason.RuleInputTooLarge, "the proposal holds .items: a list of 16000 elements"},
		{"a long string", small, blackboard.Payload{"items": list(3), "note": strings.Repeat("x", expr.MaxStringBytes+1)}, nil, reason.RuleInputTooLarge, ".note: a string of"},
		{"a wide object", small, blackboard.Payload{"items": list(3), "m": wide}, nil, reason.RuleInputTooLarge, "an object of 1001 entries"},
		{"a deep nesting", small, blackboard.Payload{"items": list(3), "d": deep}, nil, reason.RuleInputTooLarge, "nested deeper"},
		{"too many values", small, blackboard.Payload{"items": list(3), "many": many}, nil, reason.RuleInputTooLarge, "more than"},
		{"a rule that fails", small, blackboard.Payload{"items": []any{1.0, 11.0}}, nil, reason.RuleViolated, ""},
		{"a percept the rule reads", fromPercept, blackboard.Payload{"items": list(3)}, blackboard.Payload{"ids": list(16000)}, reason.RuleInputTooLarge, "percept catalogue"},
		{"a percept no rule reads", small, blackboard.Payload{"items": list(3)}, blackboard.Payload{"ids": list(16000)}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := mustNew(t, tc.rule)
			h := newHarness(t, rs, nil)
			h.perceive(tr, "p", blackboard.Payload{"x": 1.0})
			if tc.percept != nil {
				h.perceive(tr, "catalogue", tc.percept)
			}
			h.propose(tr, blackboard.Beliefs, "ok", blackboard.Payload{"value": true, "depends_on": []string{"p"}})
			act := with(tc.action, "requires_beliefs", []string{"ok"})
			d, v := h.propose(tr, blackboard.Actions, "tag", act)
			if tc.want == "" {
				committed(t, tc.name, d)
				return
			}
			refused(t, tc.name, d, v, tc.want, rs.Specs()[0].Name, tc.detail)
		})
	}
}

// TestScope: rules apply to their own slot and kind only.
func TestScope(t *testing.T) {
	rs := mustNew(t,
		rules.OnAction("never_refund", "issue_refund", `false`),
		rules.OnBelief("never_fraud", "fraud", `false`),
	)
	h := newHarness(t, rs, nil)
	h.perceive(tr, "charge", blackboard.Payload{"amount": 89.0})
	d, _ := h.propose(tr, blackboard.Beliefs, "refund_due", refundDue(true))
	committed(t, "belief of another kind", d)
	d, v := h.propose(tr, blackboard.Beliefs, "fraud", blackboard.Payload{"value": true, "depends_on": []string{"charge"}})
	refused(t, "belief of the rule's kind", d, v, reason.RuleViolated, "never_fraud")
	// Action rules do not apply to plans, even to a step of their type.
	d, _ = h.propose(tr, blackboard.Plans, "p", blackboard.Payload{"steps": []any{map[string]any{"action": "issue_refund", "requires_beliefs": []any{"refund_due"}}}})
	committed(t, "plan with an issue_refund step", d)
	d, _ = h.propose(tr, blackboard.Actions, "send_email", blackboard.Payload{"requires_beliefs": []string{"refund_due"}})
	committed(t, "action of another type", d)
	d, v = h.propose(tr, blackboard.Actions, "issue_refund", refund(1.0))
	refused(t, "action of the rule's type", d, v, reason.RuleViolated, "never_refund")
	// Predictions are never checked.
	d, _ = h.propose(tr, blackboard.Predictions, "outcome", blackboard.Payload{"action_type": "issue_refund", "expected_outcome": 1.0, "requires_beliefs": []string{"refund_due"}})
	committed(t, "prediction", d)
}

// TestBeliefsVariable: action rules see the committed beliefs by kind.
func TestBeliefsVariable(t *testing.T) {
	rs := mustNew(t, rules.OnAction("approved_above_100", "issue_refund",
		`action.amount <= 100.0 || (has(beliefs.manager_approved) && beliefs.manager_approved.value == true)`))
	h := newHarness(t, rs, nil)
	h.perceive(tr, "charge", blackboard.Payload{"amount": 500.0})
	h.propose(tr, blackboard.Beliefs, "refund_due", refundDue(true))
	d, v := h.propose(tr, blackboard.Actions, "issue_refund", refund(250.0))
	refused(t, "unapproved refund above 100", d, v, reason.RuleViolated, "approved_above_100")
	h.perceive(tr, "approval", blackboard.Payload{"by": "m"})
	h.propose(tr, blackboard.Beliefs, "manager_approved", blackboard.Payload{"value": true, "depends_on": []string{"approval"}})
	d, _ = h.propose(tr, blackboard.Actions, "issue_refund", refund(250.0))
	committed(t, "approved refund above 100", d)
}

// TestConcurrent shares one Rules between goroutines on their own traces
// and between two kernels; run it with -race.
func TestConcurrent(t *testing.T) {
	rs := mustNew(t, refundWithinCharge, refundDueMatches)
	hs := []*harness{newHarness(t, rs, nil), newHarness(t, rs, nil)}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i := range 16 {
		wg.Go(func() {
			h := hs[i%2]
			trace := fmt.Sprintf("ep-%d", i)
			ctx := context.Background()
			if _, err := h.tool.Write(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Percepts, Kind: "charge", Payload: blackboard.Payload{"amount": 89.0, "refundable": true}}); err != nil {
				errs <- err.Error()
				return
			}
			submit := func(slot blackboard.Slot, kind string, p blackboard.Payload) reason.Code {
				d, err := h.planner.Submit(ctx, kernel.Entry{TraceID: trace, Slot: slot, Kind: kind, Payload: p})
				if err != nil {
					errs <- err.Error()
				}
				return d.Code
			}
			if c := submit(blackboard.Beliefs, "refund_due", refundDue(true)); c != reason.Committed {
				errs <- fmt.Sprintf("%s belief: %s", trace, c)
			}
			for j := range 4 {
				amount, want := 50.0, reason.Committed
				if (i+j)%2 == 0 {
					amount, want = 500.0, reason.RuleViolated
				}
				if c := submit(blackboard.Actions, "issue_refund", refund(amount)); c != want {
					errs <- fmt.Sprintf("%s refund of %v: %s, want %s", trace, amount, c, want)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestErrorText(t *testing.T) {
	_, err := rules.New(rules.OnAction("r", "issue_refund", `1 + 1`))
	want := `rules: rule "r": invalid rule: on action "issue_refund": has type int, want bool`
	if err == nil || err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

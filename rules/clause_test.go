package rules_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/rules"
)

// TestViolationNamesClause: a two-clause rule whose second clause fails
// is refused with the whole rule, that clause and the values it read in
// the detail, not the first clause's.
func TestViolationNamesClause(t *testing.T) {
	const expr = `action.amount <= percepts.charge.amount && action.currency == percepts.charge.currency`
	h := newHarness(t, mustNew(t, rules.OnAction("refund_matches_charge", "issue_refund", expr)), nil)
	h.perceive(tr, "charge", blackboard.Payload{"amount": 89.0, "currency": "EUR"})
	d, _ := h.propose(tr, blackboard.Beliefs, "refund_due", refundDue(true))
	committed(t, "belief", d)
	p := refund(50.0)
	p["currency"] = "USD"
	d, v := h.propose(tr, blackboard.Actions, "issue_refund", p)
	refused(t, "refund in the wrong currency", d, v, reason.RuleViolated, "refund_matches_charge",
		"rule is false: "+expr,
		"clause 2 of 2 is false: action.currency == percepts.charge.currency",
		`action.currency = "USD"`, `percepts.charge.currency = "EUR"`)
	// The clause that held is not blamed, nor are its values shown.
	if strings.Contains(v.Detail, "clause 1") || strings.Contains(v.Detail, "action.amount = ") {
		t.Errorf("detail blames the clause that held: %q", v.Detail)
	}
}

// TestViolationClauses covers the shapes of a false rule: the first false
// clause of a conjunction (nested && flattened), every clause of a
// disjunction, a rule of one clause, a macro in a clause, and a missing
// field shown as absent.
func TestViolationClauses(t *testing.T) {
	for _, tc := range []struct {
		name, expr string
		want       []string
		not        []string
	}{
		{"third of three", `action.amount > 0 && action.amount < 1000 && action.reason == "damaged"`,
			[]string{"clause 3 of 3 is false: action.reason == \"damaged\"", `action.reason = "late"`}, []string{"action.amount = "}},
		{"disjunction", `action.amount < 10 || action.reason == "damaged"`,
			[]string{"each of its 2 clauses is false", "action.amount = 50", `action.reason = "late"`}, []string{"clause 1"}},
		{"one clause", `action.amount <= percepts.charge.amount / 2.0`,
			[]string{"rule is false: action.amount <= percepts.charge.amount / 2.0", "action.amount = 50", "percepts.charge.amount = 89"}, []string{"clause"}},
		{"macro", `action.amount > 0 && action.tags.all(t, t != "vip")`,
			[]string{`clause 2 of 2 is false: action.tags.all(t, t != "vip")`, `action.tags = ["vip"]`}, []string{"action.amount = "}},
		{"absent field", `has(action.note) || action.amount < 10`,
			[]string{"each of its 2 clauses is false", "action.note = (absent)"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, mustNew(t, rules.OnAction("r", "issue_refund", tc.expr)), nil)
			h.perceive(tr, "charge", blackboard.Payload{"amount": 89.0})
			h.propose(tr, blackboard.Beliefs, "refund_due", refundDue(true))
			p := refund(50.0)
			p["reason"], p["tags"] = "late", []string{"vip"}
			d, v := h.propose(tr, blackboard.Actions, "issue_refund", p)
			refused(t, tc.name, d, v, reason.RuleViolated, "r", tc.want...)
			for _, s := range tc.not {
				if strings.Contains(v.Detail, s) {
					t.Errorf("detail %q mentions %q", v.Detail, s)
				}
			}
		})
	}
}

// TestViolationValueBounded: a long value is cut in the detail, the rule
// and clause are not.
func TestViolationValueBounded(t *testing.T) {
	h := newHarness(t, mustNew(t, rules.OnAction("short_note", "issue_refund", `size(action.note) < 10`)), nil)
	h.perceive(tr, "charge", blackboard.Payload{"amount": 89.0})
	h.propose(tr, blackboard.Beliefs, "refund_due", refundDue(true))
	p := refund(1.0)
	p["note"] = strings.Repeat("é", 5000)
	d, v := h.propose(tr, blackboard.Actions, "issue_refund", p)
	refused(t, "long note", d, v, reason.RuleViolated, "short_note", "size(action.note) < 10", "…")
	if len(v.Detail) > 400 {
		t.Errorf("detail of %d bytes: a value is not bounded", len(v.Detail))
	}
}

// TestViolationValuesBounded: a clause reading many fields shows the
// first ones and says how many more there were.
func TestViolationValuesBounded(t *testing.T) {
	var terms []string
	for i := range 20 {
		terms = append(terms, fmt.Sprintf("action.f%02d", i))
	}
	expr := strings.Join(terms, " + ") + " < 10"
	h := newHarness(t, mustNew(t, rules.OnAction("sum", "issue_refund", expr)), nil)
	h.perceive(tr, "charge", blackboard.Payload{"amount": 89.0})
	h.propose(tr, blackboard.Beliefs, "refund_due", refundDue(true))
	p := refund(1.0)
	for i := range 20 {
		p[fmt.Sprintf("f%02d", i)] = 1.0
	}
	d, v := h.propose(tr, blackboard.Actions, "issue_refund", p)
	refused(t, "twenty fields", d, v, reason.RuleViolated, "sum", "action.f15 = 1, and 4 more")
	if strings.Contains(v.Detail, "action.f16 = ") {
		t.Errorf("detail shows more than 16 values: %q", v.Detail)
	}
}

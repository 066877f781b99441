package rules

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// Specs gives the rules back as data, and New builds the same rules
// from them: the same specs.
func TestSpecsRoundTrip(t *testing.T) {
	r, err := New(OnAction("cap", "issue_refund", "action.amount <= 500"), OnBelief("sure", "refund_due", "value == true"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Spec{
		{Name: "cap", On: TargetAction, Target: "issue_refund", Expr: "action.amount <= 500"},
		{Name: "sure", On: TargetBelief, Target: "refund_due", Expr: "value == true"},
	}
	if got := r.Specs(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Specs: %+v", got)
	}
	back, err := New(append(r.Specs(), OnAction("more", "issue_refund", "action.amount > 0"))...)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Specs(); !reflect.DeepEqual(got[:2], want) || len(got) != 3 || got[2].Name != "more" {
		t.Errorf("rebuilt: %+v", got)
	}
}

// A spec naming no target, or one New refuses, fails New.
func TestSpecsRefused(t *testing.T) {
	if _, err := New(Spec{Name: "x", On: "plan", Target: "p", Expr: "true"}); !errors.Is(err, ErrInvalidRule) || !strings.Contains(err.Error(), `rule "x"`) {
		t.Errorf("target plan: %v", err)
	}
	if _, err := New(Spec{Name: "x", On: TargetAction, Target: "a", Expr: "1 +"}); !errors.Is(err, ErrInvalidRule) {
		t.Errorf("bad expression: %v", err)
	}
}

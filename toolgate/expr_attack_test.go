package toolgate

import (
	"errors"
	"testing"

	"github.com/blackboardkernel/bk/internal/expr"
)

// TestAttackExpressionCostBounded: an approval rule or a derived belief
// whose worst-case cost exceeds the module's one expression limit (the
// limit rules.New enforces too, held in internal/expr) is refused when the
// tool is compiled, not found out on a call.
func TestAttackExpressionCostBounded(t *testing.T) {
	const quadratic = `args.items.all(x, args.items.all(y, x == y || x != y))`
	var ce *expr.CostError
	if _, err := compilePolicy(quadratic, &schema{}); !errors.As(err, &ce) {
		t.Errorf("approval rule with a loop within a loop: %v, want a *expr.CostError", err)
	}
	if _, err := compileDerives([]Derive{{Belief: "b", Value: quadratic}}); !errors.As(err, &ce) {
		t.Errorf("derived value with a loop within a loop: %v, want a *expr.CostError", err)
	}
	if _, err := compileDerives([]Derive{{Belief: "b", Value: "true", Fields: map[string]string{"n": quadratic}}}); !errors.As(err, &ce) {
		t.Errorf("derived field with a loop within a loop: %v, want a *expr.CostError", err)
	}
	if _, err := compilePolicy(`args.items.all(x, x < 10000)`, &schema{}); err != nil {
		t.Errorf("a single loop is within the limit: %v", err)
	}
}

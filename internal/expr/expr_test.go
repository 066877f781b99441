package expr

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
)

// TestLimits: the one cost limit refuses a loop within a loop over a list
// and accepts a single loop; a value beyond the bounds is named.
func TestLimits(t *testing.T) {
	env, err := NewEnv(cel.Variable("a", Object))
	if err != nil {
		t.Fatal(err)
	}
	quad, err := Compile(env, `a.items.all(x, a.items.all(y, x == y || x != y))`)
	if err != nil {
		t.Fatal(err)
	}
	var ce *CostError
	if err := CheckCost(env, quad); !errors.As(err, &ce) || ce.Max <= CostLimit {
		t.Errorf("quadratic: %v", err)
	}
	lin, err := Compile(env, `a.items.all(x, x < 10)`)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckCost(env, lin); err != nil {
		t.Errorf("linear: %v", err)
	}
	if _, err := Compile(env, ""); !errors.Is(err, ErrCompile) {
		t.Errorf("empty: %v", err)
	}
	if _, err := Compile(env, "a.x &&"); !errors.Is(err, ErrCompile) {
		t.Errorf("syntax: %v", err)
	}
	n, _ := Compile(env, "1 + 2")
	if err := WantBool(n); err == nil {
		t.Error("int accepted as bool")
	}
	if p := CheckValue(map[string]any{"s": strings.Repeat("x", MaxStringBytes+1)}); !strings.HasPrefix(p, ".s: a string of") {
		t.Errorf("long string: %q", p)
	}
	if p := CheckValue(map[string]any{"l": make([]any, MaxElements)}); p != "" {
		t.Errorf("list at the bound: %q", p)
	}
}

package budget_test

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/budget"
	"github.com/blackboardkernel/bk/reason"
)

// clock is a fake clock: time moves only when a test says so.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newRun starts a run named id on clk, failing the test on error.
func newRun(t *testing.T, l budget.Limits, clk *clock, id string) *budget.Run {
	t.Helper()
	r, err := budget.New(l, id, clk.Now)
	if err != nil {
		t.Fatalf("New(%+v): %v", l, err)
	}
	return r
}

// sub starts a sub-run, failing the test on error.
func sub(t *testing.T, parent *budget.Run, l budget.Limits, id string) *budget.Run {
	t.Helper()
	r, err := parent.Sub(l, id)
	if err != nil {
		t.Fatalf("Sub(%+v): %v", l, err)
	}
	return r
}

// refusal checks that err is a budget refusal by res of the run named
// owner, and returns it.
func refusal(t *testing.T, err error, res budget.Resource, owner string) *budget.Refusal {
	t.Helper()
	var e *budget.Refusal
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want a refusal by %s", err, res)
	}
	if !errors.Is(err, budget.ErrExceeded) || e.Code != reason.BudgetExceeded {
		t.Errorf("refusal %v: not ErrExceeded / BUDGET_EXCEEDED", err)
	}
	if e.Resource != res || e.Run != owner {
		t.Fatalf("refused by %s of %s (%v), want %s of %s", e.Resource, e.Run, err, res, owner)
	}
	return e
}

// must fails the test on a non-nil error.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// near reports whether a and b agree to 1e-9.
func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

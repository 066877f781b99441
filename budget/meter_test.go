package budget_test

import (
	"context"
	"errors"
	"testing"

	"github.com/blackboardkernel/bk/budget"
)

// usage is what an agent reports before each model call: running totals.
type usage struct{ prompt, completion int64 }

// The meter as the agent's before-model-call hook sees it: each report
// charges the last call, and the next call is refused before it is sent
// once the tokens are gone.
func TestMeterChargesRunningTotals(t *testing.T) {
	ctx := context.Background()
	r := newRun(t, budget.Limits{Tokens: 1000, ModelCalls: 10}, newClock(), "r")
	m := r.Meter(300)
	calls := 0
	reports := []usage{{0, 0}, {250, 50}, {600, 100}, {800, 150}}
	var err error
	for _, u := range reports {
		if err = m.BeforeModelCall(ctx, u.prompt, u.completion); err != nil {
			break
		}
		calls++
		// While a call is in flight its estimate is held.
		if s := r.Snapshot(); s.HeldTokens != 300 {
			t.Errorf("call %d: %d held", calls, s.HeldTokens)
		}
	}
	// Reports 1-3 admit calls (0, 300+300 held ≤ 1000, 700+300 ≤ 1000);
	// the fourth finds 950 used and 300 wanted.
	if calls != 3 {
		t.Fatalf("%d calls, want 3", calls)
	}
	e := refusal(t, err, budget.Tokens, "r")
	if e.Used != 950 || e.Requested != 300 {
		t.Errorf("refusal %+v", e)
	}
	s := r.Snapshot()
	if s.PromptTokens != 800 || s.CompletionTokens != 150 || s.HeldTokens != 0 || s.Used[budget.ModelCalls] != 3 {
		t.Errorf("after the refusal: %+v", s)
	}
	// The agent ends: Sync counts whatever the totals still hold.
	must(t, m.Sync(820, 160))
	if s := r.Snapshot(); s.Used[budget.Tokens] != 980 {
		t.Errorf("after Sync: %v tokens", s.Used[budget.Tokens])
	}
	must(t, m.Sync(820, 160)) // nothing new
	if err := m.Sync(10, 160); !errors.Is(err, budget.ErrInvalid) {
		t.Errorf("totals going down: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := m.BeforeModelCall(cancelled, 820, 160); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
}

func TestMeterWithoutEstimateAndModelCallLimit(t *testing.T) {
	ctx := context.Background()
	r := newRun(t, budget.Limits{ModelCalls: 2}, newClock(), "r")
	m := r.Meter(-5) // counts as no estimate
	must(t, m.BeforeModelCall(ctx, 0, 0))
	must(t, m.BeforeModelCall(ctx, 100, 10))
	refusal(t, m.BeforeModelCall(ctx, 200, 20), budget.ModelCalls, "r")
	if s := r.Snapshot(); s.Used[budget.Tokens] != 220 || s.HeldTokens != 0 {
		t.Errorf("tokens %v held %d", s.Used[budget.Tokens], s.HeldTokens)
	}
}

package failure_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/blackboardkernel/bk/failure"
)

// routeRow is what the routing table must say for one category, written
// out here independently of the package's table.
type routeRow struct {
	loop      failure.Loop
	route     failure.Route
	retryable bool
	otherwise failure.Route
	base, cap time.Duration
	jitter    bool
}

var wantRoutes = map[failure.Category]routeRow{
	"code_syntax":       {loop: "fast", route: "fast_loop", retryable: true, otherwise: "abort"},
	"function_mismatch": {loop: "fast", route: "fast_loop", retryable: true, otherwise: "abort"},
	"format_error":      {loop: "fast", route: "fast_loop", retryable: true, otherwise: "abort"},
	"endpoint_unknown":  {loop: "slow", route: "slow_loop", retryable: true, otherwise: "escalate"},
	"not_found":         {loop: "slow", route: "slow_loop", retryable: true, otherwise: "escalate"},
	"auth_error":        {loop: "kernel", route: "reauth", retryable: true, otherwise: "escalate"},
	"rate_limit":        {loop: "kernel", route: "backoff", retryable: true, otherwise: "abort", base: time.Second, cap: time.Minute},
	"network":           {loop: "kernel", route: "retry_jitter", retryable: true, otherwise: "abort", base: 500 * time.Millisecond, cap: 30 * time.Second, jitter: true},
	"provider_down":     {loop: "kernel", route: "failover", retryable: true, otherwise: "abort"},
	"duplicate":         {loop: "kernel", route: "abort", retryable: false, otherwise: "abort"},
	"unknown":           {loop: "human", route: "escalate", retryable: false, otherwise: "escalate"},
}

// statusOf is one status per category, to build failures from.
var statusOf = map[failure.Category]failure.ExecStatus{
	"code_syntax":       "FAILED_SYNTAX",
	"function_mismatch": "FAILED_FUNCTION_MISMATCH",
	"format_error":      "FAILED_FORMAT",
	"endpoint_unknown":  "FAILED_ENDPOINT_UNKNOWN",
	"not_found":         "FAILED_NOT_FOUND",
	"auth_error":        "FAILED_AUTH_EXPIRED",
	"rate_limit":        "FAILED_RATE_LIMITED",
	"network":           "FAILED_NETWORK",
	"provider_down":     "FAILED_PROVIDER_DOWN",
	"duplicate":         "FAILED_DUPLICATE",
	"unknown":           "FAILED_UNKNOWN",
}

func TestRoutingTableCoversTaxonomy(t *testing.T) {
	if got, want := len(failure.Categories()), len(wantRoutes); got != want {
		t.Fatalf("taxonomy has %d categories, expectation %d", got, want)
	}
	for _, c := range failure.Categories() {
		r, ok := failure.RoutingFor(c)
		w, known := wantRoutes[c]
		if !ok || !known {
			t.Fatalf("%s: rule %v, expected %v", c, ok, known)
		}
		if r.Loop != w.loop || r.Route != w.route || r.Retryable != w.retryable || r.Otherwise != w.otherwise ||
			r.Backoff != w.base || r.MaxBackoff != w.cap || r.Jitter != w.jitter {
			t.Errorf("%s: rule %+v, want %+v", c, r, w)
		}
		if f := failure.New(statusOf[c], "x"); f.Category() != c || f.Retryable() != w.retryable {
			t.Errorf("%s: New gives category %s retryable %v", c, f.Category(), f.Retryable())
		}
	}
	if _, ok := failure.RoutingFor("bogus"); ok {
		t.Error("RoutingFor(bogus) found a row")
	}
}

// expectRemedy is the router's contract, computed without the package.
func expectRemedy(c failure.Category, retryable bool, attempt, maxAttempts int) failure.Remedy {
	w, ok := wantRoutes[c]
	if !ok {
		w = wantRoutes["unknown"]
	}
	a := max(attempt, 0)
	if !w.retryable || !retryable || a >= maxAttempts {
		loop := failure.Loop("kernel")
		if w.otherwise == "escalate" {
			loop = "human"
		}
		return failure.Remedy{Route: w.otherwise, Loop: loop}
	}
	wait := time.Duration(0)
	if w.base > 0 {
		x := float64(w.base) * math.Pow(2, float64(max(a, 1)-1))
		wait = time.Duration(math.Min(x, float64(w.cap)))
	}
	return failure.Remedy{Route: w.route, Loop: w.loop, Retry: true, Backoff: wait}
}

func TestRemedyForExhaustive(t *testing.T) {
	cats := append(failure.Categories(), "", "bogus")
	n := 0
	for _, c := range cats {
		for _, retryable := range []bool{true, false} {
			f := failure.New(statusOf[c], "boom").WithRetryable(retryable)
			if c == "" {
				f = failure.Failure{}.WithRetryable(retryable)
			}
			if c == "bogus" {
				f = failure.New("FAILED_BOGUS", "boom").WithRetryable(retryable)
			}
			for _, maxAttempts := range []int{-1, 0, 1, 2, 3, 5} {
				for _, attempt := range []int{-1, 0, 1, maxAttempts - 1, maxAttempts, maxAttempts + 1} {
					got := failure.RemedyFor(f, attempt, maxAttempts)
					want := expectRemedy(f.Category(), retryable, attempt, maxAttempts)
					if got.Reason == "" {
						t.Errorf("%s retryable=%v attempt=%d/%d: empty reason", c, retryable, attempt, maxAttempts)
					}
					got.Reason = ""
					if got != want {
						t.Errorf("%s retryable=%v attempt=%d/%d:\n got %+v\nwant %+v", c, retryable, attempt, maxAttempts, got, want)
					}
					again := failure.RemedyFor(f, attempt, maxAttempts)
					again.Reason = ""
					if again != got {
						t.Errorf("%s attempt=%d/%d: second call differs", c, attempt, maxAttempts)
					}
					n++
				}
			}
		}
	}
	if n != 13*2*6*6 {
		t.Fatalf("ran %d cases", n)
	}
}

func TestRemedyForBackoffGrowsToCap(t *testing.T) {
	f := failure.New(failure.StatusRateLimited, "slow down")
	var prev time.Duration
	for attempt := 1; attempt <= 200; attempt++ {
		d := failure.RemedyFor(f, attempt, 1000)
		if d.Route != failure.RouteBackoff || d.Backoff < prev || d.Backoff > time.Minute {
			t.Fatalf("attempt %d: %+v after %v", attempt, d, prev)
		}
		prev = d.Backoff
	}
	if prev != time.Minute {
		t.Fatalf("backoff stops at %v, want the 1m cap", prev)
	}
}

func TestRemedyForReason(t *testing.T) {
	f := failure.New(failure.StatusRateLimited, "slow down")
	if got := failure.RemedyFor(f, 2, 5).Reason; got != "rate_limit (FAILED_RATE_LIMITED): wait 2s, then attempt 3 of 5" {
		t.Errorf("reason %q", got)
	}
	if got := failure.RemedyFor(f, 5, 5).Reason; !strings.Contains(got, "5 of 5 attempts used") || !strings.HasSuffix(got, "abort") {
		t.Errorf("reason %q", got)
	}
	if got := failure.RemedyFor(f.WithRetryable(false), 0, 5).Reason; !strings.Contains(got, "not retryable") {
		t.Errorf("reason %q", got)
	}
}

func TestJittered(t *testing.T) {
	d := failure.Remedy{Route: failure.RouteRetryJitter, Backoff: time.Second}
	for _, c := range []struct {
		u    float64
		want time.Duration
	}{
		{0, 500 * time.Millisecond},
		{0.5, 750 * time.Millisecond},
		{1, time.Second},
		{-3, 500 * time.Millisecond},
		{7, time.Second},
		{math.NaN(), 500 * time.Millisecond},
	} {
		if got := d.Jittered(c.u); got != c.want {
			t.Errorf("Jittered(%v) = %v, want %v", c.u, got, c.want)
		}
	}
	d.Route = failure.RouteBackoff
	if got := d.Jittered(0); got != time.Second {
		t.Errorf("no jitter: %v", got)
	}
}

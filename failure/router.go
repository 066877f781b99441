package failure

import (
	"fmt"
	"math"
	"time"
)

// Route is what the repair router decides to do about a failure.
type Route string

// Routes.
const (
	// RouteFastLoop: the worker that failed tries again at once, with the
	// failure placed at the top of its next context.
	RouteFastLoop = Route("fast_loop")
	// RouteSlowLoop: a research worker corrects what is known about the
	// target first; the worker tries again with the corrected spec.
	RouteSlowLoop = Route("slow_loop")
	// RouteReauth: an identity step renews the credentials; then the call
	// is tried again.
	RouteReauth = Route("reauth")
	// RouteBackoff: wait [Remedy.Backoff], then try again.
	RouteBackoff = Route("backoff")
	// RouteRetryJitter: wait a jittered [Remedy.Backoff]
	// ([Remedy.Jittered]), then try again.
	RouteRetryJitter = Route("retry_jitter")
	// RouteFailover: try again against another provider.
	RouteFailover = Route("failover")
	// RouteEscalate: stop and hand the failure to a human.
	RouteEscalate = Route("escalate")
	// RouteAbort: stop; the task fails with this failure.
	RouteAbort = Route("abort")
)

// Loop says who acts on a [Remedy].
type Loop string

// Loops.
const (
	loopFast   = Loop("fast")   // the worker that failed, with the error in hand
	loopSlow   = Loop("slow")   // a research worker, then the worker
	LoopKernel = Loop("kernel") // the orchestrator itself: waits, credentials, providers, stopping
	LoopHuman  = Loop("human")  // a person
)

// Routing is one row of the routing table.
type Routing struct {
	// Loop and Route say what happens while the failure may be retried.
	Loop  Loop
	Route Route
	// Retryable says whether failures of the category are retried at all.
	// It is also the default of [Failure.Retryable].
	Retryable bool
	// Backoff is the wait before the first retry; it doubles with each
	// further attempt up to MaxBackoff. Zero for routes that do not wait.
	Backoff, MaxBackoff time.Duration
	// Jitter says the caller spreads the wait ([Remedy.Jittered]).
	Jitter bool
	// Otherwise is the route when the failure is not retried: not
	// retryable, or out of attempts. It is RouteAbort or RouteEscalate.
	Otherwise Route
}

// rules is the routing table. Categories outside it are routed as Unknown.
//
// When a category cannot be retried any more, the table stops the task
// (abort) where retrying was the whole remedy (skill and infrastructure
// failures: the task is recorded as failed, a later episode may try again)
// and calls a human (escalate) where a person holds what is missing: a
// specification research could not find, credentials, or a failure nobody
// could type. A duplicate is never retried: the effect exists. A
// provider_down is retryable because failover is its retry: the call runs
// again, elsewhere, and uses an attempt.
var rules = map[Category]Routing{
	codeSyntax:       {Loop: loopFast, Route: RouteFastLoop, Retryable: true, Otherwise: RouteAbort},
	functionMismatch: {Loop: loopFast, Route: RouteFastLoop, Retryable: true, Otherwise: RouteAbort},
	FormatError:      {Loop: loopFast, Route: RouteFastLoop, Retryable: true, Otherwise: RouteAbort},
	EndpointUnknown:  {Loop: loopSlow, Route: RouteSlowLoop, Retryable: true, Otherwise: RouteEscalate},
	NotFound:         {Loop: loopSlow, Route: RouteSlowLoop, Retryable: true, Otherwise: RouteEscalate},
	AuthError:        {Loop: LoopKernel, Route: RouteReauth, Retryable: true, Otherwise: RouteEscalate},
	RateLimit: {Loop: LoopKernel, Route: RouteBackoff, Retryable: true,
		Backoff: time.Second, MaxBackoff: time.Minute, Otherwise: RouteAbort},
	Network: {Loop: LoopKernel, Route: RouteRetryJitter, Retryable: true,
		Backoff: 500 * time.Millisecond, MaxBackoff: 30 * time.Second, Jitter: true, Otherwise: RouteAbort},
	ProviderDown: {Loop: LoopKernel, Route: RouteFailover, Retryable: true, Otherwise: RouteAbort},
	Duplicate:    {Loop: LoopKernel, Route: RouteAbort, Retryable: false, Otherwise: RouteAbort},
	Unknown:      {Loop: LoopHuman, Route: RouteEscalate, Retryable: false, Otherwise: RouteEscalate},
}

// RoutingFor returns the routing table's row for c. ok is false for a category
// outside the taxonomy, which is routed by the row of [Unknown].
func RoutingFor(c Category) (r Routing, ok bool) {
	r, ok = rules[c]
	return r, ok
}

// Remedy is the repair router's answer.
type Remedy struct {
	Route Route
	Loop  Loop
	// Retry says the work runs again: in the loop named, after the wait.
	Retry bool
	// Backoff is the wait before the retry, before any jitter; zero when
	// the route does not wait.
	Backoff time.Duration
	// Jitter says the caller spreads Backoff with its own randomness
	// ([Remedy.Jittered]); the router has none.
	Jitter bool
	// Reason explains the remedy in one line, for the log and for the
	// top of the next context.
	Reason string
}

// Jittered is the wait for the retry given u, a number the caller draws
// uniformly from [0, 1): Backoff when the remedy has no jitter, otherwise
// a point of [Backoff/2, Backoff] chosen by u. u outside [0, 1], or NaN,
// is clamped to the nearest end (NaN to 0).
func (d Remedy) Jittered(u float64) time.Duration {
	if !d.Jitter || d.Backoff <= 0 {
		return d.Backoff
	}
	if math.IsNaN(u) || u < 0 {
		u = 0
	}
	u = min(u, 1)
	half := d.Backoff / 2
	return d.Backoff - half + time.Duration(u*float64(half))
}

// RemedyFor is the repair router: from a failure, the number of attempts made
// so far (the failed one included; below 0 counts as 0) and the number of
// attempts allowed, one Remedy. It is a pure function of its arguments
// and the routing table: the same input gives the same Remedy, always.
//
// The failure's category selects a row of the table (a category outside
// the taxonomy selects Unknown's). The row's Otherwise route is taken when
// the row is not retryable, when the failure is not, or when attempt has
// reached maxAttempts (so maxAttempts of 0 or less allows no retry).
// Otherwise the row's route is taken with Retry set, and for routes that
// wait, Backoff is the row's first wait doubled for each attempt after the
// first, up to the row's bound.
func RemedyFor(f Failure, attempt, maxAttempts int) Remedy {
	c := f.Category()
	rule, ok := rules[c]
	if !ok {
		rule = rules[Unknown]
	}
	attempt = max(attempt, 0)
	head := fmt.Sprintf("%s (%s)", c, f.Status())
	if c == "" {
		head = "untyped failure"
	}
	switch {
	case !rule.Retryable:
		return stop(rule.Otherwise, fmt.Sprintf("%s: %s is never retried", head, c))
	case !f.Retryable():
		return stop(rule.Otherwise, head+": marked not retryable")
	case attempt >= maxAttempts:
		return stop(rule.Otherwise, fmt.Sprintf("%s: %d of %d attempts used", head, attempt, maxAttempts))
	}
	d := Remedy{
		Route:   rule.Route,
		Loop:    rule.Loop,
		Retry:   true,
		Backoff: backoff(rule, attempt),
		Jitter:  rule.Jitter,
	}
	d.Reason = fmt.Sprintf("%s: %s, then attempt %d of %d", head, doing(d), attempt+1, maxAttempts)
	return d
}

// stop is a remedy that does not retry.
func stop(r Route, why string) Remedy {
	loop := LoopKernel
	if r == RouteEscalate {
		loop = LoopHuman
	}
	return Remedy{Route: r, Loop: loop, Reason: why + "; " + string(r)}
}

// backoff is the rule's wait before the attempt after attempt.
func backoff(r Routing, attempt int) time.Duration {
	d := r.Backoff
	for i := 1; i < attempt && d < r.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, r.MaxBackoff)
}

// doing says what a retrying remedy does.
func doing(d Remedy) string {
	switch d.Route {
	case RouteFastLoop:
		return "the worker corrects its output with the error in hand"
	case RouteSlowLoop:
		return "research the target first"
	case RouteReauth:
		return "renew the credentials"
	case RouteBackoff:
		return "wait " + d.Backoff.String()
	case RouteRetryJitter:
		return "wait about " + d.Backoff.String() + " (jittered)"
	case RouteFailover:
		return "switch to another provider"
	}
	return string(d.Route)
}

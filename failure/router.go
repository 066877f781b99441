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

// Who acts on a [Remedy] ([Remedy.Loop]).
const (
	loopFast   = "fast"   // the worker that failed, with the error in hand
	loopSlow   = "slow"   // a research worker, then the worker
	loopKernel = "kernel" // the orchestrator itself: waits, credentials, providers, stopping
	loopHuman  = "human"  // a person
)

// routing is one row of the routing table.
type routing struct {
	// loop and route say what happens while the failure may be retried.
	loop  string
	route Route
	// retryable says whether failures of the category are retried at all.
	// It is also the default of [Failure.Retryable].
	retryable bool
	// backoff is the wait before the first retry; it doubles with each
	// further attempt up to maxBackoff. Zero for routes that do not wait.
	backoff, maxBackoff time.Duration
	// otherwise is the route when the failure is not retried: not
	// retryable, or out of attempts. It is RouteAbort or RouteEscalate.
	otherwise Route
}

// rules is the routing table. Categories outside it are routed as unknown.
//
// When a category cannot be retried any more, the table stops the task
// (abort) where retrying was the whole remedy (skill and infrastructure
// failures: the task is recorded as failed, a later episode may try again)
// and calls a human (escalate) where a person holds what is missing: a
// specification research could not find, credentials, or a failure nobody
// could type. A duplicate is never retried: the effect exists. A
// provider_down is retryable because failover is its retry: the call runs
// again, elsewhere, and uses an attempt.
var rules = map[Category]routing{
	codeSyntax:       {loop: loopFast, route: RouteFastLoop, retryable: true, otherwise: RouteAbort},
	functionMismatch: {loop: loopFast, route: RouteFastLoop, retryable: true, otherwise: RouteAbort},
	formatError:      {loop: loopFast, route: RouteFastLoop, retryable: true, otherwise: RouteAbort},
	endpointUnknown:  {loop: loopSlow, route: RouteSlowLoop, retryable: true, otherwise: RouteEscalate},
	notFound:         {loop: loopSlow, route: RouteSlowLoop, retryable: true, otherwise: RouteEscalate},
	authError:        {loop: loopKernel, route: RouteReauth, retryable: true, otherwise: RouteEscalate},
	rateLimit: {loop: loopKernel, route: RouteBackoff, retryable: true,
		backoff: time.Second, maxBackoff: time.Minute, otherwise: RouteAbort},
	network: {loop: loopKernel, route: RouteRetryJitter, retryable: true,
		backoff: 500 * time.Millisecond, maxBackoff: 30 * time.Second, otherwise: RouteAbort},
	providerDown: {loop: loopKernel, route: RouteFailover, retryable: true, otherwise: RouteAbort},
	duplicate:    {loop: loopKernel, route: RouteAbort, retryable: false, otherwise: RouteAbort},
	unknown:      {loop: loopHuman, route: RouteEscalate, retryable: false, otherwise: RouteEscalate},
}

// Remedy is the repair router's answer.
type Remedy struct {
	Route Route
	// Loop says who acts on the remedy: "fast" (the worker that failed,
	// with the error in hand), "slow" (a research worker, then the
	// worker), "kernel" (the orchestrator itself: waits, credentials,
	// providers, stopping) or "human" (a person).
	Loop string
	// Retry says the work runs again: in the loop named, after the wait.
	Retry bool
	// Backoff is the wait before the retry, before any jitter; zero when
	// the route does not wait. On [RouteRetryJitter] the caller spreads
	// it with its own randomness ([Remedy.Jittered]); the router has none.
	Backoff time.Duration
	// Reason explains the remedy in one line, for the log and for the
	// top of the next context.
	Reason string
}

// Jittered is the wait for the retry given u, a number the caller draws
// uniformly from [0, 1): Backoff when the route is not
// [RouteRetryJitter], otherwise
// a point of [Backoff/2, Backoff] chosen by u. u outside [0, 1], or NaN,
// is clamped to the nearest end (NaN to 0).
func (d Remedy) Jittered(u float64) time.Duration {
	if d.Route != RouteRetryJitter || d.Backoff <= 0 {
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
// the taxonomy selects unknown's). The row's Otherwise route is taken when
// the row is not retryable, when the failure is not, or when attempt has
// reached maxAttempts (so maxAttempts of 0 or less allows no retry).
// Otherwise the row's route is taken with Retry set, and for routes that
// wait, Backoff is the row's first wait doubled for each attempt after the
// first, up to the row's bound.
func RemedyFor(f Failure, attempt, maxAttempts int) Remedy {
	c := f.Category()
	rule, ok := rules[c]
	if !ok {
		rule = rules[unknown]
	}
	attempt = max(attempt, 0)
	head := fmt.Sprintf("%s (%s)", c, f.Status())
	if c == "" {
		head = "untyped failure"
	}
	switch {
	case !rule.retryable:
		return stop(rule.otherwise, fmt.Sprintf("%s: %s is never retried", head, c))
	case !f.Retryable():
		return stop(rule.otherwise, head+": marked not retryable")
	case attempt >= maxAttempts:
		return stop(rule.otherwise, fmt.Sprintf("%s: %d of %d attempts used", head, attempt, maxAttempts))
	}
	d := Remedy{
		Route:   rule.route,
		Loop:    rule.loop,
		Retry:   true,
		Backoff: backoff(rule, attempt),
	}
	d.Reason = fmt.Sprintf("%s: %s, then attempt %d of %d", head, doing(d), attempt+1, maxAttempts)
	return d
}

// stop is a remedy that does not retry.
func stop(r Route, why string) Remedy {
	loop := loopKernel
	if r == RouteEscalate {
		loop = loopHuman
	}
	return Remedy{Route: r, Loop: loop, Reason: why + "; " + string(r)}
}

// backoff is the rule's wait before the attempt after attempt.
func backoff(r routing, attempt int) time.Duration {
	d := r.backoff
	for i := 1; i < attempt && d < r.maxBackoff; i++ {
		d *= 2
	}
	return min(d, r.maxBackoff)
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

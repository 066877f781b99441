package llm

import (
	"errors"
	"fmt"
)

// Sentinel errors. Errors this package returns wrap one of these, the
// context's error when the caller cancelled, or (from a [Worker]) the
// kernel's or the store's error, or (from an [Agent]) the gate's, the
// budget's or the grant's; callers branch with errors.Is.
var (
	// ErrInvalidConfig: a bad option or schema given to [New], [NewWorker]
	// or [NewAgent] (an empty or non-HTTP base URL, a negative retry count
	// or timeout, a concurrency below 1, a nil function, an empty kind,
	// ...), a bad tool surface (a tool without a name, a name twice,
	// parameters that are not a JSON object), or an incomplete [Task].
	ErrInvalidConfig = errors.New("llm: invalid configuration")
	// ErrEndpoint: the chat endpoint failed: a non-2xx status, a network
	// error or a timeout once the retries ran out, or a 2xx answer that is
	// not a chat completion. The error in its chain that wraps it has an
	// HTTPStatus() int method: the last HTTP status, 0 when no response
	// arrived.
	ErrEndpoint = errors.New("llm: endpoint failed")
	// ErrFallbackRejected: the kernel refused the worker's safe fallback
	// action, which means the fallback type is not registered as a safe
	// fallback ([kernel.ActionSpec.SafeFallback]).
	ErrFallbackRejected = errors.New("llm: fallback action rejected")
	// ErrGrantEnded: a tool call of an [Agent]'s run failed in a way that
	// ends the task's grant ([Task.Grant]); the error wraps the
	// failure.Failure too, and says how the grant ended, why, and its
	// compact trajectory.
	ErrGrantEnded = errors.New("llm: agent's grant ended")
	// ErrMaxRounds: an [Agent]'s model still called tools in the last round
	// its [WithMaxRounds] allows.
	ErrMaxRounds = errors.New("llm: agent ran out of rounds")
)

// endpointError is the error of a failed chat call. It wraps both
// [ErrEndpoint] and the last cause (a network error, a
// [context.DeadlineExceeded] from the request timeout, ...), so errors.Is
// and errors.As work through it. Its message names the number of requests
// made and the last status (HTTPStatus), and never contains the API key.
// It is unexported: callers branch on ErrEndpoint and read the status
// through the HTTPStatus method, as failure.Classify does.
type endpointError struct {
	status   int   // the last HTTP status; 0 when no response arrived
	attempts int   // the number of requests made
	err      error // the last cause
}

// Error describes the failure with the attempt count and the last status.
func (e *endpointError) Error() string {
	if e.status == 0 {
		return fmt.Sprintf("llm: endpoint failed after %d attempt(s): %v", e.attempts, e.err)
	}
	return fmt.Sprintf("llm: endpoint failed after %d attempt(s) [HTTP %d]: %v", e.attempts, e.status, e.err)
}

// Unwrap returns [ErrEndpoint] and the last cause.
func (e *endpointError) Unwrap() []error { return []error{ErrEndpoint, e.err} }

// HTTPStatus returns the last HTTP status, 0 when no response arrived. It
// is the method failure.Classify looks for in an error chain, so it
// types a failed model call by its status (401 auth_error, 429
// rate_limit, 503 provider_down, ...) and, without one, by its cause (a
// refused connection or a timeout is network).
func (e *endpointError) HTTPStatus() int { return e.status }

// Package failure types the failures of effects an agent runs (tool calls,
// HTTP requests, model calls) and decides, without asking a model, what
// happens after one.
//
// The idea: a failure is known most precisely where it happens. If it
// crosses a boundary as prose, whoever receives it has to guess its kind
// again, and guessing is where routing goes wrong. So a failure travels as a
// typed value, its kind is drawn from a small closed taxonomy, and every
// decision that follows is a table lookup.
//
// # The taxonomy
//
// A [Category] is one of eleven kinds: auth_error, endpoint_unknown,
// not_found, rate_limit, network, provider_down, code_syntax,
// function_mismatch, format_error, duplicate and unknown. Each belongs to a
// class (skill, spec, state, infrastructure, unknown), which says who can
// repair it.
//
// A [ExecStatus] is the finer signal the executing layer emits, such as
// FAILED_AUTH_EXPIRED or FAILED_SILENT_PARTIAL_FETCH. One table maps each
// status to its category (categoryOf); an integration that learns to tell
// a new failure apart adds a status and a row, and nothing else changes.
//
// # Failures
//
// A [Failure] holds a status, its category, a message, whether it may be
// retried, and optionally the error beneath it. It is an immutable value
// and an error. Failures come from:
//
//   - [New], given a status: the layer that failed knows what happened.
//   - [FromResult], reading execution_status from a tool result;
//     [Failure.Payload] writes it, so a failure crosses a boundary intact.
//   - [Classify], for a Go error: a Failure already in the chain, an
//     error with a method HTTPStatus() int (statusForHTTP maps status codes: 401/403 →
//     auth_error, 404 → not_found, 405 → endpoint_unknown, 409 →
//     duplicate, 400/422 → format_error, 429 → rate_limit, 500/503 →
//     provider_down, 502/504 → network), a deadline or a failed
//     connection (network), a JSON syntax error (format_error).
//   - [Evaluate], for a result that came back without error but is not a
//     success: mixed per-resource outcomes (FAILED_INCOMPLETE_FETCH), no
//     data where data was expected (FAILED_SILENT_PARTIAL_FETCH), required
//     fields missing (FAILED_SCHEMA_INCOMPLETE).
//
// Only errors that carry no type at all reach the legacy text matcher, the
// last rule of [Classify]. Its guesses are marked ([Failure.Legacy]) and it
// is a bridge for code written before typed statuses, not a mechanism to
// extend.
//
// # Repair
//
// [RemedyFor] is the repair router: from a failure, the attempts made and the
// attempts allowed, one [Remedy] from one routing table:
//
//	category           loop    route         retryable  when not retried
//	code_syntax        fast    fast_loop     yes        abort
//	function_mismatch  fast    fast_loop     yes        abort
//	format_error       fast    fast_loop     yes        abort
//	endpoint_unknown   slow    slow_loop     yes        escalate
//	not_found          slow    slow_loop     yes        escalate
//	auth_error         kernel  reauth        yes        escalate
//	rate_limit         kernel  backoff       yes        abort     1s doubling to 1m
//	network            kernel  retry_jitter  yes        abort     500ms doubling to 30s, jittered
//	provider_down      kernel  failover      yes        abort
//	duplicate          kernel  abort         no         abort
//	unknown            human   escalate      no         escalate
//
// The fast loop hands the failure back to the worker that made it; the slow
// loop sends a research worker first. Failover is a retry against another
// provider and counts as an attempt. The router holds no randomness: it
// gives the base wait, and on retry_jitter the caller draws the jitter
// ([Remedy.Jittered]). A [Remedy] names its route, the loop that acts on
// it, whether the work runs again, the wait and the reason.
//
// # Grants
//
// A worker may hold a [Grant] of a few turns to correct its own mistakes.
// After every tool call ([Grant.Turn]) the grant runs the semantic yield
// check, a fixed function of the failure's class: a skill failure lets the
// worker continue; any state, spec, infrastructure or unknown failure ends
// the grant at once, however many turns are left. The grant records a
// compact trajectory ([Grant.String]) for the kernel's context.
//
// # Concurrency
//
// Everything here is safe for concurrent use. Failures and Remedies are
// values; the tables are never written after package initialisation;
// [Classify],
// [Evaluate] and [RemedyFor] are pure functions of their arguments. A
// [Grant] guards its state with a mutex.
package failure

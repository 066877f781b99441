package failure

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

// httpStatusError is an error that knows the HTTP status of the response
// that caused it: it has a method HTTPStatus() int. [Classify] finds one
// anywhere in an error's chain (errors.As) and types the failure by its
// status (statusForHTTP). A status below 400, or 0 for "no response", is
// ignored and the chain is examined further.
type httpStatusError interface {
	error
	HTTPStatus() int
}

// Classify types a Go error. The first rule that applies decides:
//
//  1. nil: the zero Failure.
//  2. A [Failure] or *Failure in the chain (errors.As) is returned as it is:
//     whoever typed it knew more than Classify can.
//  3. An error in the chain with a method HTTPStatus() int that returns
//     400 or more: statusForHTTP.
//  4. A deadline: context.DeadlineExceeded, os.ErrDeadlineExceeded or a
//     net.Error whose Timeout is true: [StatusTimeout] (network).
//  5. context.Canceled: [StatusUnknown], not retryable. A cancelled call is
//     the caller's decision, not an execution failure; check ctx.Err()
//     before classifying.
//  6. A connection that failed (refused, reset, aborted, unreachable, a
//     broken pipe), a DNS error, a *net.OpError, an unexpected EOF, or any
//     other *url.Error from an HTTP client: [StatusNetwork].
//  7. A *json.SyntaxError or *json.UnmarshalTypeError: [StatusFormat].
//  8. Anything else is an untyped, legacy error: its text goes to the
//     legacy matcher and the Failure is marked [Failure.Legacy]. The
//     matcher exists only so that errors from code that predates typed
//     statuses are not all unknown; new code returns a Failure or an
//     error with an HTTPStatus() int method instead.
//
// Failures built by rules 3 to 8 carry err.Error() as their message and
// wrap err.
func Classify(err error) Failure {
	if err == nil {
		return Failure{}
	}
	var f Failure
	if errors.As(err, &f) {
		return f
	}
	var fp *Failure
	if errors.As(err, &fp) && fp != nil {
		return *fp
	}
	msg := err.Error()
	typed := func(s ExecStatus) Failure { return New(s, msg).WithCause(err) }

	var he httpStatusError
	if errors.As(err, &he) {
		if code := he.HTTPStatus(); code >= 400 {
			return typed(statusForHTTP(code))
		}
	}
	if isTimeout(err) {
		return typed(StatusTimeout)
	}
	if errors.Is(err, context.Canceled) {
		return typed(StatusUnknown).WithRetryable(false)
	}
	if isNetwork(err) {
		return typed(StatusNetwork)
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	if errors.As(err, &se) || errors.As(err, &te) {
		return typed(StatusFormat)
	}
	return legacyFailure(msg).WithCause(err)
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isNetwork(err error) bool {
	for _, e := range []error{
		syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED,
		syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.EPIPE,
		io.ErrUnexpectedEOF,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	var dns *net.DNSError
	var op *net.OpError
	var ue *url.Error
	return errors.As(err, &dns) || errors.As(err, &op) || errors.As(err, &ue)
}

// legacyFailure is the Failure of an untyped error message.
func legacyFailure(msg string) Failure {
	f := New(classifyLegacy(msg), msg)
	f.legacy = true
	return f
}

// ---------------------------------------------------------------------------
// LEGACY FALLBACK. Everything below guesses a status from the words of an
// error message. It runs only for errors that carry no type (Classify's last
// rule, and FromResult for a result with an error but no execution_status).
// Text matching is ambiguous and tied to the wording of other people's
// software; it is kept as a bridge, not as a design. Do not extend it for new
// integrations: make them return a Failure, a Status in their result, or an
// error with an HTTPStatus() int method.
// ---------------------------------------------------------------------------

// legacyHTTP finds an HTTP status code in a message: "HTTP 429",
// "[HTTP 503]", "HTTP/1.1 404", "status 401", "status code: 502".
var legacyHTTP = regexp.MustCompile(`(?i)\b(?:http(?:/\d(?:\.\d)?)?|status(?:[ _]code)?)[ :=]*([1-5]\d\d)\b`)

// Exception names of common runtimes, the most specific words a message
// can hold; they are tried before any HTTP code in the message.
var legacyNames = []legacyRule{
	{StatusSyntax, []string{"syntaxerror", "indentationerror", "taberror"}},
	{StatusFormat, []string{"jsondecodeerror", "validationerror"}},
	{StatusFunctionMismatch, []string{"typeerror", "attributeerror", "nameerror", "referenceerror"}},
}

// Phrases, tried in order after the names and the HTTP code.
var legacyPhrases = []legacyRule{
	{StatusAuthExpired, []string{"unauthorized", "unauthenticated", "invalid api key", "invalid_api_key", "token expired", "token has expired", "expired token", "authentication failed", "missing credentials"}},
	{StatusAuthDenied, []string{"forbidden", "permission denied", "access denied"}},
	{StatusRateLimited, []string{"rate limit", "ratelimit", "rate_limit", "too many requests", "quota exceeded", "throttl"}},
	{StatusEndpointUnknown, []string{"method not allowed", "not implemented", "unknown endpoint", "no such endpoint", "no route", "unsupported operation"}},
	{StatusTimeout, []string{"timeout", "timed out", "deadline exceeded"}},
	{StatusNetwork, []string{"connection refused", "connectionrefused", "connection reset", "broken pipe", "no such host", "dns", "network is unreachable", "host is unreachable", "unexpected eof", "bad gateway"}},
	{StatusProviderDown, []string{"service unavailable", "internal server error", "overloaded", "server error"}},
	{StatusDuplicate, []string{"already exists", "duplicate", "conflict"}},
	{StatusNotFound, []string{"not found", "no such file", "does not exist"}},
	{StatusSyntax, []string{"syntax error", "unexpected token"}},
	{StatusFunctionMismatch, []string{"has no attribute", "is not a function", "is not callable", "unexpected keyword argument", "required positional argument", "wrong number of arguments", "not enough arguments", "too many arguments", "undefined:"}},
	{StatusFormat, []string{"invalid character", "cannot unmarshal", "unexpected end of json", "invalid json", "malformed"}},
}

type legacyRule struct {
	status  ExecStatus
	needles []string
}

// classifyLegacy is the legacy text matcher: exception names, then an HTTP
// status code of 400 or more, then phrases; the first match wins, and
// [StatusUnknown] when nothing matches.
func classifyLegacy(msg string) ExecStatus {
	lower := strings.ToLower(msg)
	if s, ok := matchLegacy(lower, legacyNames); ok {
		return s
	}
	for _, m := range legacyHTTP.FindAllStringSubmatch(msg, -1) {
		if code, err := strconv.Atoi(m[1]); err == nil && code >= 400 {
			return statusForHTTP(code)
		}
	}
	if s, ok := matchLegacy(lower, legacyPhrases); ok {
		return s
	}
	return StatusUnknown
}

func matchLegacy(lower string, rules []legacyRule) (ExecStatus, bool) {
	for _, r := range rules {
		for _, n := range r.needles {
			if strings.Contains(lower, n) {
				return r.status, true
			}
		}
	}
	return "", false
}

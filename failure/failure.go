package failure

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxMessage bounds the bytes of a message a [Failure] keeps; longer
// messages are cut at a rune boundary and end in "…".
const maxMessage = 2048

// Failure is one typed execution failure: a status, the category the status
// table gives it, a message for the worker that will repair it, and whether
// the work may be tried again.
//
// A Failure is a value: its fields are unexported, every method has a value
// receiver, and the With methods return a changed copy. Nothing that
// receives a Failure can change the classification of the one it was given.
// It implements error, so it travels through error returns and is found
// again with errors.As (a Failure or a *Failure target). Compare failures by
// their accessors, not with ==: the wrapped cause may be of a type that ==
// cannot compare.
type Failure struct {
	status    ExecStatus
	category  Category
	message   string
	retryable bool
	legacy    bool
	cause     error
}

// New returns the failure with the given status and message. The category
// comes from the status table (categoryOf); a status the table does not
// hold, SUCCEEDED included, gets unknown and keeps the status as
// given. Retryable comes from the routing table's row for the category
// (see [RemedyFor]).
func New(status ExecStatus, message string) Failure {
	c, ok := categoryOf(status)
	if !ok {
		c = unknown
	}
	return Failure{
		status:    status,
		category:  c,
		message:   clip(message, maxMessage),
		retryable: rules[c].retryable,
	}
}

// Status is the execution status.
func (f Failure) Status() ExecStatus { return f.status }

// Category is the failure's category: what the repair router and the grant
// decide on.
func (f Failure) Category() Category { return f.category }

// Message describes the failure for whoever repairs it.
func (f Failure) Message() string { return f.message }

// Retryable reports whether the work may be attempted again. It starts as
// the routing table says for the category; [Failure.WithRetryable] lets the
// layer that saw the failure say otherwise. The router retries only when
// both the table and the failure allow it.
func (f Failure) Retryable() bool { return f.retryable }

// Legacy reports whether the failure came from an error that carried no
// type, so that its status was guessed from the error's text, or is
// [StatusUnknown] when the text matched nothing ([Classify]'s last resort).
// Every legacy failure points at an integration still to be typed.
func (f Failure) Legacy() bool { return f.legacy }

// isZero reports whether f is the zero Failure, which is what [Classify]
// returns for a nil error (its Status is "").
func (f Failure) isZero() bool { return f.status == "" && f.category == "" }

// WithRetryable returns a copy of f with Retryable set to r. Use it when the
// failing layer knows more than the category: a 429 whose quota does not
// reset, a write that failed half-way and must not be repeated.
func (f Failure) WithRetryable(r bool) Failure {
	f.retryable = r
	return f
}

// WithCause returns a copy of f that wraps err, so errors.Is and errors.As
// see through the failure to the error beneath it.
func (f Failure) WithCause(err error) Failure {
	f.cause = err
	return f
}

// Error renders the failure as "failure: <category> (<status>): <message>".
func (f Failure) Error() string {
	if f.isZero() {
		return "failure: none"
	}
	s := "failure: " + string(f.category) + " (" + string(f.status) + ")"
	if f.message != "" {
		s += ": " + f.message
	}
	return s
}

// Unwrap returns the cause given to [Failure.WithCause] or found by
// [Classify], or nil.
func (f Failure) Unwrap() error { return f.cause }

// Keys of the typed signal in a tool result ([Failure.Payload],
// [FromResult]).
const (
	keyStatus    = "execution_status" // the Status, as a string
	keyCategory  = "category"         // the Category, written for readers; never read back
	keyError     = "error"            // the message
	keyRetryable = "retryable"        // a bool
	keyLegacy    = "legacy"           // true when the category was guessed from text
)

// Payload renders f as the typed signal a tool result carries across a
// boundary: execution_status, category, error and retryable, and legacy
// when set. It returns a new map on every call; nil for the zero Failure.
// [FromResult] reads it back.
func (f Failure) Payload() map[string]any {
	if f.isZero() {
		return nil
	}
	p := map[string]any{
		keyStatus:    string(f.status),
		keyCategory:  string(f.category),
		keyError:     f.message,
		keyRetryable: f.retryable,
	}
	if f.legacy {
		p[keyLegacy] = true
	}
	return p
}

// FromResult reads the typed signal in a tool result. ok is false when the
// result reports no failure: no execution_status (or SUCCEEDED) and no
// error.
//
// The status decides the category, by the status table; the category key
// is not read. A retryable bool overrides the table's default. A result
// with an error but no execution_status is an untyped, legacy signal: its
// text goes to the legacy matcher (see [Classify]) and the Failure is
// marked [Failure.Legacy].
func FromResult(result map[string]any) (f Failure, ok bool) {
	msg := ""
	if e, present := result[keyError]; present && !empty(e) {
		if s, isString := e.(string); isString {
			msg = s
		} else {
			msg = fmt.Sprint(e)
		}
	}
	st, _ := result[keyStatus].(string)
	switch {
	case st != "" && ExecStatus(st) != statusSucceeded:
		f = New(ExecStatus(st), msg)
		if legacy, _ := result[keyLegacy].(bool); legacy {
			f.legacy = true
		}
	case st == "" && msg != "":
		f = legacyFailure(msg)
	default:
		return Failure{}, false
	}
	if r, isBool := result[keyRetryable].(bool); isBool {
		f.retryable = r
	}
	return f, true
}

// clip cuts s to at most n bytes at a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.ToValidUTF8(s[:cut], "\uFFFD") + mark
}

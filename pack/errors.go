package pack

import (
	"errors"
	"fmt"
)

// The errors callers branch on. Every error a [Compiler] returns for bad
// options or input wraps one of them in an [*Error].
var (
	// ErrEncoding: the encoding named is not one the compiler counts
	// tokens for (cl100k_base, o200k_base).
	ErrEncoding = errors.New("pack: unknown encoding")
	// ErrWindow: the window cannot hold what may never be cut (the
	// mission and the constraints), or is no window at all.
	ErrWindow = errors.New("pack: window too small")
	// ErrInvalid: an option or the input is malformed (shares that do not
	// sum to 1, no mission, no trace, an unknown safety mode, a progress
	// note of more than one line).
	ErrInvalid = errors.New("pack: invalid input")
)

// Error is the one typed error of the package: what failed (Op), the
// section it concerns when there is one, a reason, and the sentinel it
// wraps, so that both errors.Is and errors.As work.
type Error struct {
	Op      string // "new", "compile" or "record"
	Section string // the section concerned, if any
	Reason  string
	Err     error // one of the sentinels above
}

// Error says what failed, where and why.
func (e *Error) Error() string {
	if e.Section != "" {
		return fmt.Sprintf("%v: %s: section %s: %s", e.Err, e.Op, e.Section, e.Reason)
	}
	return fmt.Sprintf("%v: %s: %s", e.Err, e.Op, e.Reason)
}

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Err }

func newErr(op, section string, err error, format string, args ...any) *Error {
	return &Error{Op: op, Section: section, Reason: fmt.Sprintf(format, args...), Err: err}
}

package pack

import (
	"errors"
	"fmt"
)

// The errors callers branch on. Every error a [Compiler] returns for bad
// options or input wraps one of them, and says what failed (new, compile,
// govern, record), the section it concerns when there is one, and why.
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

// newErr is an error of op ("new", "compile", "govern" or "record"): it
// wraps err, one of the sentinels above, and names the section it
// concerns, if any, and why.
func newErr(op, section string, err error, format string, args ...any) error {
	reason := fmt.Sprintf(format, args...)
	if section != "" {
		return fmt.Errorf("%w: %s: section %s: %s", err, op, section, reason)
	}
	return fmt.Errorf("%w: %s: %s", err, op, reason)
}

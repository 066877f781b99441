package replay

import (
	"errors"
	"fmt"
)

// Errors [Trace] returns, each wrapped in an [*Error]. Nothing is written
// to the source store in any case: a replay only reads it.
var (
	// ErrNoTrace: the namespace holds no record of the trace.
	ErrNoTrace = errors.New("replay: no such trace")
	// ErrNoPolicy: a decision record names a policy snapshot that the
	// store does not hold in the namespace, or the trace names none.
	ErrNoPolicy = errors.New("replay: policy snapshot not found")
	// ErrTampered: a policy record's snapshot (its JSON as stored) does
	// not hash to the hash it is recorded under.
	ErrTampered = errors.New("replay: policy record does not match its hash")
	// ErrNotReproducible: the policy names validators that are code
	// (the snapshot's "opaque" list), which a replay from data alone cannot
	// run, or its snapshot was recorded in another shape than this
	// version's snapshot (a field this version does not know), or
	// it does not build.
	ErrNotReproducible = errors.New("replay: policy not reproducible from the store")
	// ErrInvalidOption: an option names a tool the policy does not hold,
	// or a rule or tool it gives does not compile.
	ErrInvalidOption = errors.New("replay: invalid option")
)

// Error is the error of a replay that could not run: the trace, the
// record at fault (a policy record, or "" when none), the policy hash
// concerned, and why. It wraps one of the package's sentinels, and a
// cause when there is one.
type Error struct {
	TraceID string
	Record  string
	Policy  string
	Reason  string
	Err     error // the sentinel
	Cause   error // what went wrong underneath, if anything
}

// Error says which trace, record and policy, and why.
func (e *Error) Error() string {
	s := fmt.Sprintf("%v: trace %q", e.Err, e.TraceID)
	if e.Policy != "" {
		s += ", policy " + e.Policy
	}
	if e.Record != "" {
		s += ", record " + e.Record
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Unwrap returns the sentinel and the cause.
func (e *Error) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Err, e.Cause}
	}
	return []error{e.Err}
}

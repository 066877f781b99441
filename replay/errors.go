package replay

import "errors"

// Errors [Trace] returns, each wrapped with the trace, the policy hash
// and the record at fault (when there are) and why. Nothing is written to
// the source store in any case: a replay only reads it.
var (
	// ErrNoTrace: the namespace holds no record of the trace.
	ErrNoTrace = errors.New("replay: no such trace")
	// ErrNoPolicyNamed: no decision record of the trace names a policy
	// snapshot (the trace was not run through a tool gate): there is
	// nothing to replay.
	ErrNoPolicyNamed = errors.New("replay: no decision record of the trace names a policy snapshot")
	// ErrNoPolicy: a decision record names a policy snapshot that the
	// store does not hold in the namespace.
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

package toolgate

import (
	"errors"
)

// Sentinel errors. Errors from [New] and from the gate's methods wrap one
// of these (or a kernel sentinel, for store failures) for errors.Is. A
// refusal is never an error: it is a [Result].
var (
	// ErrInvalidConfig: [New] or [Config.Validate] was given a tool it
	// cannot accept (a name that is not one, a duplicate, a bad parameters
	// schema or one [Func] could not make, an uncompilable approval or
	// derivation rule, a bad retry policy, bad bindings, a tool resting on
	// beliefs that declares neither Bindings nor Unbound, bad scope, or an
	// effectful tool that declares neither Scope nor Unscoped), a tool
	// that can never work (see [New]), a bad contract or intent (no name,
	// a tool that is not registered), a bad lease or mask key, a kernel
	// configuration the kernel refuses, a tool's action type also given as
	// a kernel action spec ([Config.Kernel]; the gate registers its tools'
	// types itself), or a fallback that is not a registered safe fallback,
	// or is a tool's. Each problem is a [*ConfigError]: its Tool names the
	// tool at fault ("" for a problem of the gate's own fields).
	ErrInvalidConfig = errors.New("toolgate: invalid configuration")
	// ErrInvalidCall: a call the gate cannot even record (no valid trace
	// id), or a [Gate.Surface] for a caller with no contract or an intent
	// that is not configured.
	ErrInvalidCall = errors.New("toolgate: invalid call")
	// ErrUnknownAction: [Gate.Execute] or [Gate.Resume] was given an id
	// that is not a committed action the gate proposed for one of its
	// tools (in that trace).
	ErrUnknownAction = errors.New("toolgate: not an action of the gate")
)

package toolgate

import (
	"errors"
	"fmt"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
)

// Errors. The gate's errors wrap a sentinel for errors.Is: its own two,
// [ErrInvalidConfig] and [ErrDecided], or one of the shared vocabulary's,
// which the kernel returns for the same conditions:
//
//   - [blackboard.ErrInvalidInput]: a call the gate cannot even record (no
//     valid trace id), a bad request for [Gate.RecordRequest], run
//     controls naming a tool the gate does not hold, or a [Gate.Surface]
//     for a caller with no contract or an intent that is not configured;
//   - [kernel.ErrInvalidReference]: [Gate.Execute] or [Gate.Resume] was
//     given an id that is not a committed action the gate proposed for
//     one of its tools (in that trace), or an [Approver] one that is not
//     a committed, active action of the trace;
//   - [blackboard.ErrPermission]: a [Gate.Restrict] that would loosen the
//     trace's run controls, or an approver deciding what it may not;
//   - [blackboard.ErrDuplicateKey]: a [Gate.RecordRequest] for a trace
//     whose request is recorded already and is another one (the once-key
//     a trace's request claims is taken);
//
// or a store's, or the context's. Each message starts "toolgate: " and
// says what happened. A refusal is never an error: it is a [Result].
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
)

// gateError is an error of the gate's that wraps a shared sentinel: its
// message is the gate's own, and errors.Is finds the sentinel.
type gateError struct {
	msg      string
	sentinel error
}

func (e *gateError) Error() string { return e.msg }

// Unwrap returns the sentinel.
func (e *gateError) Unwrap() error { return e.sentinel }

// errorf returns a *gateError wrapping sentinel whose message is
// "toolgate: " and the formatted text.
func errorf(sentinel error, format string, args ...any) error {
	return &gateError{msg: "toolgate: " + fmt.Sprintf(format, args...), sentinel: sentinel}
}

// invalidCall is the error of a call, request or controls the gate
// cannot take ([blackboard.ErrInvalidInput]).
func invalidCall(format string, args ...any) error {
	return errorf(blackboard.ErrInvalidInput, "invalid call: "+format, args...)
}

// notGated is the error of an id that is not a committed action the gate
// proposed ([kernel.ErrInvalidReference]); recover tells it apart from a
// kernel's with errors.As.
type notGated struct{ gateError }

// notAction returns the [notGated] error for actionID: why it is not the
// gate's.
func notAction(actionID, why string) error {
	return &notGated{gateError{msg: fmt.Sprintf("toolgate: not an action of the gate: %s: %s", actionID, why), sentinel: kernel.ErrInvalidReference}}
}

package toolgate

import (
	"fmt"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/kernel"
)

// The gate's errors and the sentinels they wrap: see the package doc,
// "Errors".

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

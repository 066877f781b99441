package toolgate

import (
	"context"
	"errors"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/blackboard"
)

// keyContext is the key under which a decision record's context names the
// compiled context of its call.
const keyContext = "context"

// contextRef checks the compiled context a call names: an evidence record
// of kind [audit.KindCompiledContext] in the call's trace, written with the
// kernel's role (through the Governor, which no model or tool holds). It
// returns why the reference is refused, or "" when it holds; err is a
// failure to read. One read by id, whatever the trace's length.
func (x *executor) contextRef(ctx context.Context, c Call) (detail string, err error) {
	if !contextRefChecked() {
		return "", nil
	}
	id := clip(c.Context)
	rec, err := x.reader.Get(ctx, c.Context)
	switch {
	case errors.Is(err, blackboard.ErrNotFound) || errors.Is(err, blackboard.ErrInvalidInput):
		return "the call's context " + quote(id) + " names no record", nil
	case err != nil:
		return "", err
	case rec.Slot != blackboard.Evidence || rec.Kind != audit.KindCompiledContext:
		return "the call's context " + quote(id) + " is no " + audit.KindCompiledContext + " record", nil
	case rec.Provenance.TraceID != c.TraceID:
		return "the call's context " + quote(id) + " is another trace's", nil
	case rec.Provenance.Role != blackboard.RoleKernel:
		return "the call's context " + quote(id) + " was not written by the kernel", nil
	}
	return "", nil
}

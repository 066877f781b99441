package kernel

import (
	"errors"
	"strings"

	"github.com/blackboardkernel/bk/reason"
)

// Sentinel errors of the kernel's own. A kernel also returns the
// blackboard package's sentinels ([blackboard.ErrInvalidInput],
// [blackboard.ErrPermission], [blackboard.ErrNotFound] and the others a
// store raises); most carry the record id, the stage and the reason code
// in their message, and the code for [CodeOf], so callers branch with
// errors.Is and CodeOf.
var (
	// ErrPayloadTooLarge: a payload whose JSON encoding exceeds the limit.
	ErrPayloadTooLarge = errors.New("kernel: payload too large")
	// ErrInvalidProposal: a malformed proposal, or a commit of something that
	// is not a pending proposal of the same trace.
	ErrInvalidProposal = errors.New("kernel: invalid proposal")
	// ErrInvalidReference: a reference to a record that does not exist in the
	// same trace or in persistent scope.
	ErrInvalidReference = errors.New("kernel: invalid reference")
)

// opError is the typed error the kernel returns. It wraps one of the
// sentinel errors, so errors.Is works, and carries a code, which [CodeOf]
// reads.
type opError struct {
	Op       string      // the operation: "write", "commit", "view", ...
	RecordID string      // the record concerned, if any
	Code     reason.Code // the reason code, if any
	Err      error       // the sentinel (or store error) it wraps
	Detail   string      // a human-readable explanation
}

func (e *opError) Error() string {
	var b strings.Builder
	b.WriteString("kernel: ")
	b.WriteString(e.Op)
	if e.RecordID != "" {
		b.WriteString(" ")
		b.WriteString(e.RecordID)
	}
	if e.Code != "" {
		b.WriteString(" [")
		b.WriteString(string(e.Code))
		b.WriteString("]")
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(strings.TrimPrefix(e.Err.Error(), "kernel: "))
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Unwrap returns the wrapped sentinel.
func (e *opError) Unwrap() error { return e.Err }

// CodeOf returns the reason code carried by err, or "" if it carries none.
func CodeOf(err error) reason.Code {
	var e *opError
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func newErr(op, id string, code reason.Code, sentinel error, detail string) *opError {
	return &opError{Op: op, RecordID: id, Code: code, Err: sentinel, Detail: detail}
}

package kernel

import (
	"errors"
	"strings"
)

// Sentinel errors. Every error the kernel and its stores return wraps one of
// these, so callers branch with errors.Is; most also come as an [*Error]
// carrying the record id, the stage and the reason code.
var (
	// ErrPermission: the handle's role may not write that slot in that mode.
	ErrPermission = errors.New("kernel: permission denied")
	// ErrInvalidInput: an unknown slot or mode, an empty kind or trace id,
	// a confidence outside [0,1] or not finite, a negative TTL.
	ErrInvalidInput = errors.New("kernel: invalid input")
	// ErrInvalidPayload: a payload that is not JSON-encodable (channels,
	// funcs, NaN, ±Inf, cycles, non-string map keys).
	ErrInvalidPayload = errors.New("kernel: invalid payload")
	// ErrPayloadTooLarge: a payload whose JSON encoding exceeds the limit.
	ErrPayloadTooLarge = errors.New("kernel: payload too large")
	// ErrInvalidProposal: a malformed proposal, or a commit of something that
	// is not a pending proposal of the same trace.
	ErrInvalidProposal = errors.New("kernel: invalid proposal")
	// ErrInvalidReference: a reference to a record that does not exist in the
	// same trace or in persistent scope.
	ErrInvalidReference = errors.New("kernel: invalid reference")
	// ErrNotFound: no record with that id (or of that kind).
	ErrNotFound = errors.New("kernel: record not found")
	// ErrDuplicateID: a store refused to append a record whose id it holds.
	ErrDuplicateID = errors.New("kernel: duplicate record id")
	// ErrDuplicateKey: a batch claimed a once-key that is already claimed
	// (see [Store]).
	ErrDuplicateKey = errors.New("kernel: once-key already claimed")
	// ErrNotActive: a status change of a record that is no longer ACTIVE.
	ErrNotActive = errors.New("kernel: record not active")
	// ErrConflict: a conditional batch found its trace changed since it was
	// read (see [Batch]); the kernel reads again and retries.
	ErrConflict = errors.New("kernel: trace changed concurrently")
	// ErrClosed: the store or kernel has been closed.
	ErrClosed = errors.New("kernel: closed")
)

// Error is the typed error the kernel returns. It wraps one of the sentinel
// errors, so both errors.Is and errors.As work:
//
//	var kerr *kernel.Error
//	if errors.As(err, &kerr) && kerr.Code == kernel.CodeInvalidReference { ... }
type Error struct {
	Op       string // the operation: "write", "commit", "view", ...
	RecordID string // the record concerned, if any
	Code     Code   // the reason code, if any
	Err      error  // the sentinel (or store error) it wraps
	Detail   string // a human-readable explanation
}

func (e *Error) Error() string {
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
func (e *Error) Unwrap() error { return e.Err }

// CodeOf returns the reason code carried by err, or "" if it carries none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func newErr(op, id string, code Code, sentinel error, detail string) *Error {
	return &Error{Op: op, RecordID: id, Code: code, Err: sentinel, Detail: detail}
}

package blackboard

import (
	"errors"
)

// Sentinel errors. Every error the kernel returns wraps one of these (or
// the context's error), so callers branch with errors.Is; a store returns
// them too, for the same conditions, beside the two only a store's
// callers see (store.ErrDuplicateID and store.ErrNotActive).
var (
	// ErrPermission: a write outside the writer's authority: a role that may
	// not write that slot in that mode, or a record whose namespace differs
	// from its trace's.
	ErrPermission = errors.New("blackboard: permission denied")
	// ErrInvalidInput: an unknown slot, mode, status, scope or role, an
	// empty id, kind or trace id, a confidence outside [0,1] or not finite,
	// a TTL out of range, a string that is not valid UTF-8.
	ErrInvalidInput = errors.New("blackboard: invalid input")
	// ErrInvalidPayload: a payload that is not JSON-encodable (channels,
	// funcs, NaN, ±Inf, cycles, non-string map keys, invalid UTF-8).
	ErrInvalidPayload = errors.New("blackboard: invalid payload")
	// ErrNotFound: no record with that id (or of that kind).
	ErrNotFound = errors.New("blackboard: record not found")
	// ErrDuplicateKey: a batch claimed a once-key that is already claimed
	// (see kernel.Governor and store.Store).
	ErrDuplicateKey = errors.New("blackboard: once-key already claimed")
	// ErrConflict: a conditional batch found its trace changed since it was
	// read (see store.Batch); the kernel reads again and retries.
	ErrConflict = errors.New("blackboard: trace changed concurrently")
	// ErrClosed: the store or kernel has been closed.
	ErrClosed = errors.New("blackboard: closed")
)

// DefaultNamespace is the namespace of a record stored with an empty one,
// and of a kernel without a namespace of its own: a record or claim
// written with namespace ns is kept in cmp.Or(ns, DefaultNamespace).
const DefaultNamespace = "default"

package store

import (
	"errors"
	"time"
)

// The errors only a store's callers see. A store also returns the
// blackboard's errors, each for the condition it names:
// [blackboard.ErrNotFound], [blackboard.ErrInvalidInput],
// [blackboard.ErrInvalidPayload], [blackboard.ErrDuplicateKey],
// [blackboard.ErrConflict] and [blackboard.ErrClosed] (see [Store]).
var (
	// ErrDuplicateID: a store refused to append a record whose id it holds.
	ErrDuplicateID = errors.New("store: duplicate record id")
	// ErrNotActive: a status change of a record that is no longer ACTIVE.
	ErrNotActive = errors.New("store: record not active")
)

// MaxTTL is the longest time to live a record may have (about a century):
// the kernel refuses a longer TTL, and a store refuses a record carrying
// one, so that timestamp plus TTL never overflows.
const MaxTTL = 100 * 365 * 24 * time.Hour

// maxTTLMS is [MaxTTL] in milliseconds, as stores check it.
const maxTTLMS = int64(MaxTTL / time.Millisecond)

package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/blackboardkernel/bk/blackboard"
)

// Errors of this package. Errors that have a kernel sentinel wrap it
// instead (a duplicate id is [store.ErrDuplicateID], a closed store
// [blackboard.ErrClosed], and so on), so that code written against
// [store.Store] branches the same way on every store.
var (
	// ErrSchemaTooNew is returned by [Open] and [New] for a schema whose
	// version is newer than this package knows: a later version of the
	// package migrated it and may have changed it.
	ErrSchemaTooNew = errors.New("pgstore: database schema is newer than this package supports")

	// ErrUnreachable is wrapped by the error of a call that could not reach
	// the server: no connection could be made, or the connection was lost
	// during the call. A write whose connection was lost while it
	// committed may or may not have landed; the error says so.
	ErrUnreachable = errors.New("pgstore: server unreachable")

	// ErrSerialization is wrapped by the error of a call whose transaction
	// the server kept aborting with a serialization failure or a deadlock
	// after the store had retried it (see [WithRetries]). It wraps
	// [blackboard.ErrConflict]: nothing of the batch landed, and the kernel
	// reads the trace again and retries its decision, as it does when a
	// concurrent writer changed the trace first.
	ErrSerialization = fmt.Errorf("pgstore: transaction aborted by a serialization failure: %w", blackboard.ErrConflict)
)

// SQLSTATE codes the store tells apart.
const (
	codeUniqueViolation       = "23505"
	codeSerializationFailure  = "40001"
	codeDeadlockDetected      = "40P01"
	codeUntranslatable        = "22P05" // a \u0000 escape in jsonb
	codeCharacterNotInCharset = "22021" // a NUL byte or invalid UTF-8 in text
	codeAdminShutdown         = "57P01"
	codeCrashShutdown         = "57P02"
	codeCannotConnectNow      = "57P03"

	// Raised by bk_require, the schema's assertion: a batch's trace
	// condition failed, or a status change found its record missing or no
	// longer active.
	codeConflict  = "BK409"
	codeNotFound  = "BK404"
	codeNotActive = "BK410"
)

// pgError returns err's PostgreSQL error, if it carries one.
func pgError(err error) *pgconn.PgError {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}

// retryable reports whether err aborted a transaction that may simply be
// run again: the server rolled it back whole because of a serialization
// failure or a deadlock, or ended the session before running it, or the
// call failed before anything reached the server.
func retryable(err error) bool {
	if err == nil || isContext(err) {
		return false
	}
	if pe := pgError(err); pe != nil {
		switch pe.Code {
		case codeSerializationFailure, codeDeadlockDetected, codeAdminShutdown, codeCrashShutdown, codeCannotConnectNow:
			return true
		}
		return false
	}
	return pgconn.SafeToRetry(err) || connectFailed(err)
}

// connectFailed reports whether err is a failure to connect, before any
// statement was sent.
func connectFailed(err error) bool {
	var ce *pgconn.ConnectError
	return errors.As(err, &ce) && pgError(err) == nil
}

// isContext reports whether err is a context's error.
func isContext(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// unreachable reports whether err means the server could not be reached or
// the connection to it was lost.
func unreachable(err error) bool {
	if isContext(err) { // a context's deadline error is also a net.Error
		return false
	}
	if pe := pgError(err); pe != nil {
		switch pe.Code {
		case codeAdminShutdown, codeCrashShutdown, codeCannotConnectNow:
			return true
		}
		return false // the server answered: it is reachable
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, net.ErrClosed)
}

// wrap turns an error from pgx into the error a method returns: a
// context's error stays recognisable with errors.Is, a lost server wraps
// [ErrUnreachable], an exhausted retry [ErrSerialization]. what names the
// call; committing says the error may have come after the server received
// a COMMIT, so the outcome is unknown.
func wrap(what string, err error, committing bool) error {
	switch {
	case err == nil:
		return nil
	case isContext(err):
		if committing {
			return fmt.Errorf("pgstore: %s: %w (the write may have landed)", what, err)
		}
		return fmt.Errorf("pgstore: %s: %w", what, err)
	case unreachable(err):
		if committing {
			return fmt.Errorf("pgstore: %s: %w: %v (the write may have landed)", what, ErrUnreachable, err)
		}
		return fmt.Errorf("pgstore: %s: %w: %v", what, ErrUnreachable, err)
	case pgError(err) != nil && (pgError(err).Code == codeSerializationFailure || pgError(err).Code == codeDeadlockDetected):
		return fmt.Errorf("pgstore: %s: %w: %v", what, ErrSerialization, err)
	}
	return fmt.Errorf("pgstore: %s: %w", what, err)
}

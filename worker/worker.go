package worker

import (
	"context"

	"github.com/blackboardkernel/bk/kernel"
)

// Worker is one component of an agent: it reads the blackboard through a
// view and writes through the single role-bound handle it was built with, so
// it can never write outside that role's authority.
//
// The orchestrator calls a worker's methods from one goroutine per run; a
// worker shared between concurrent runs must be safe for that.
type Worker interface {
	// ID names the worker in logs and step records.
	ID() string
	// Handle is the role-bound handle the worker writes through.
	Handle() kernel.Handle
	// Reads lists the slots the worker reads; Writes the slots it writes.
	// The orchestrator runs writers of a slot before its readers.
	Reads() []kernel.Slot
	Writes() []kernel.Slot
	// ShouldActivate reports whether the worker has something to do given
	// the current view of the trace.
	ShouldActivate(v kernel.View) bool
	// Step does one unit of work on the trace. produced reports whether it
	// wrote anything; the orchestrator stops when a round produces nothing.
	Step(ctx context.Context, traceID string, v kernel.View) (produced bool, err error)
}

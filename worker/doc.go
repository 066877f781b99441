// Package worker holds helpers for workers (the orchestrator package's
// Worker, paper §11.1: a component with an id, the role handle it acts
// through, the slots it reads and writes, an activation test and a step).
// Workers receive their handle at construction, so the kernel's
// permission table bounds what each one can write.
//
// The helpers serve workers that must not repeat themselves within a
// trace: [Own] streams the records a handle wrote in a trace (including
// proposals the kernel rejected, which a [kernel.View] no longer shows)
// and [LastOwn] finds the latest of one kind. Both read through any
// [kernel.Handle].
//
// The orchestrator package runs workers; the sim and adaptive packages
// provide two reusable ones.
//
// # Concurrency
//
// [Own] and [LastOwn] are safe for concurrent use when the handle is
// (kernel handles are).
package worker

// Package worker defines the [Worker] protocol (paper §11.1): a component
// with an id, the role handle it acts through, the slots it reads and
// writes, an activation test and a step. Workers receive their handle at
// construction, so the kernel's permission table bounds what each one can
// write.
//
// # Concurrency
//
// The orchestrator calls a worker from one goroutine per run. A worker
// value used by several concurrent runs must be safe for concurrent use.
package worker

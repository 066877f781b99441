// Package inspect is the bk inspector: the commands of `go run ./cmd/bk`
// as a library, so that they are tested and embeddable. It reads a kernel
// store and answers "why did the agent do this?" without writing a byte.
//
//	bk traces                 traces with their outcome and counts
//	bk timeline TRACE         a trace's events in order (--steps: led by the paper's t0-t9)
//	bk explain RECORD         a decision's provenance, down to the percepts
//	bk stats                  decisions by code, learned constraints, records per slot
//	bk approvals              approvals pending, with their age
//	bk effects                effect attempts and outcomes
//	bk export [--trace T]     records as JSON lines
//
// Every command takes --db FILE (default $BK_DB, else bk.db), --namespace
// NS (default: every namespace) and --json. The database is opened with
// [sqlitestore.OpenReadOnly]: no migration, no lock held beyond one short
// read at a time, so a process that is writing the store is not blocked;
// it is checked whole first ([sqlitestore.WithCheck]), so that a damaged
// file is reported as corrupt. [Main] returns [ExitOK], [ExitError] (the
// command failed: a missing, corrupt or foreign file, an unknown trace or
// record) or [ExitUsage]; -h prints the usage to stdout.
// The reports themselves ([Traces], [Timeline], [Explain], [Stats],
// [Approvals], [Effects], [Export]) take any [blackboard.Store] and only read
// it, so they are safe for concurrent use as far as the store is. They
// read the tool-call gate's effect records through [toolgate.EffectOf],
// and print every stored text through [Inert] (JSON through [InertJSON]),
// so that what a tool, a model or any writer stored cannot act on the
// operator's terminal.
package inspect

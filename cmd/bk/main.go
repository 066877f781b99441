// Command bk is the Blackboard Kernel inspector: it reads a kernel store
// (SQLite with --db or PostgreSQL with --dsn, read-only, beside a process
// that writes it) and shows its traces, timelines, explanations,
// statistics, pending approvals, effects, and exports records as JSON
// lines; bk approve and bk deny decide an action waiting for approval, as
// the NAME given (the terminal is trusted as whoever runs it); bk serve is
// the approvals console, a web page where a verified person approves or
// denies what waits (package inspect/console). bk verify checks the
// store's history: every trace's hash chain, the signed checkpoints
// (against the public keys given with --key) and the invariants (package
// invariant); bk export --trace T --bundle FILE writes trace T's evidence
// bundle (its chain, its policy trace's, the signed checkpoints covering
// them), which bk verify --bundle FILE --key PUB checks offline, with no
// store. A public key file holds the 32-byte Ed25519 public key as 64 hex
// digits. -h prints the usage; the exit code is
// 0 when the command did its work, 1 when it failed (a missing, corrupt or
// foreign database, an unknown trace or record, a history or bundle that
// does not verify) and 2 for a wrong command line.
//
//	go install ./cmd/bk   # in a clone (no version is published yet)
//	bk --db bk.db traces
//	bk --db bk.db timeline TRACE
//	bk --db bk.db explain RECORD
//	bk --dsn postgres://bk@db.internal/bk approvals
//	bk --db bk.db approve ACTION --as alice --digest sha256:...
//	bk --db bk.db serve --token-file tokens
//	bk --db bk.db verify --key signer.pub
//	bk --db bk.db export --trace TRACE --bundle evidence.json
//	bk verify --bundle evidence.json --key signer.pub
//
// Every command is described in package internal/inspect, its machinery.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/blackboardkernel/bk/internal/inspect"
	"github.com/blackboardkernel/bk/internal/inspect/serve"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := inspect.Main(ctx, os.Args[1:], os.Stdout, os.Stderr, inspect.WithServe(serve.Run))
	stop()
	os.Exit(code)
}

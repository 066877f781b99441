// Command bk is the Blackboard Kernel inspector: it reads a kernel store
// (SQLite, read-only, beside a process that writes it) and shows its
// traces, timelines, explanations, statistics, pending approvals, effects,
// and exports records as JSON lines.
//
//	go install github.com/blackboardkernel/bk/cmd/bk@latest
//	bk --db bk.db traces
//	bk --db bk.db timeline TRACE
//	bk --db bk.db explain RECORD
//
// See package inspect for every command.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/blackboardkernel/bk/inspect"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := inspect.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Command multi_episode is the paper's multi-episode demonstration (§11.6):
// a temperature monitor built from five workers on the blackboard kernel,
// run for several episodes, learning persistent constraints from its own
// failures between episodes.
//
//	go run ./examples/multi_episode [--episodes N] [--seed S] [--db FILE | --store postgres --dsn DSN]
//
// Each episode is one trace. The sensor (a tool) commits a temperature
// reading derived from the seed; the analyst (a planner) proposes the belief
// anomaly_detected resting on it, which the kernel commits only if the
// reading is fresh, unconflicted (or arbitrated) and confident enough; the
// simulator proposes a prediction for the alert action from two JSON rules
// (rules.json); the actuator proposes an alert once the belief is committed,
// which the kernel's prediction gate and the learned constraints may refuse,
// and falls back to queue_for_review; the adaptive learner, between
// episodes, counts the kernel's rejections by reason code and learns a
// persistent constraint once a code has been seen twice.
//
// With --db the records are kept in a SQLite file, with --store postgres
// --dsn DSN in PostgreSQL (the connection's current schema): a second run
// against the same file or database starts with the constraints the first
// one learned; a file SQLite cannot read whole is refused before anything
// is written into it. Exit codes: 0 done, 1 failed, 2 a wrong command
// line (-h prints the usage to standard output).
package main

import (
	"context"
	"io"
	"os"
	"os/signal"

	"github.com/blackboardkernel/bk/internal/cmdline"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	os.Exit(cmdline.Exit("multi_episode", err, os.Stderr, func(w io.Writer) { io.WriteString(w, usage()) }))
}

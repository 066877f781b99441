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
// one learned.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "multi_episode:", err)
		stop()
		os.Exit(1)
	}
}

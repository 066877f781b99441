// Command bench reproduces the paper's 1,200-episode Stripe refund study:
// six tasks × 50 seeds × the agents, one JSON line per episode, then Table 3
// and Table 4, what their figures mean, the files written and the run's
// wall and CPU time. Run `go run ./bench -h` for the flags;
// docs/benchmark.md explains the output. Exit codes: 0 done, 1 failed (an
// LLM endpoint that does not answer included: nothing is written then), 2
// a wrong command line.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"

	"github.com/blackboardkernel/bk/bench/cli"
	"github.com/blackboardkernel/bk/internal/cmdline"
)

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(cli.GCPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := cli.Run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(cmdline.Exit("bench", err, os.Stderr, nil))
}

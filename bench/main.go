// Command bench reproduces the paper's 1,200-episode Stripe refund study:
// six tasks × 50 seeds × the agents, one JSON line per episode, then Table 3
// and Table 4, what their figures mean, the files written and the run's
// wall and CPU time. Run `go run ./bench -h` for the flags;
// docs/benchmark.md explains the output.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"

	"github.com/blackboardkernel/bk/bench/cli"
)

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(cli.GCPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := cli.Run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		msg := err.Error()
		if !strings.HasPrefix(msg, "bench: ") { // usage errors say so already
			msg = "bench: " + msg
		}
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(1)
	}
}

// Command support_desk is a support agent behind the tool-call gate: a
// model that calls lookup_order, issue_refund and send_email against a
// simulated order system and payment API, with every call decided by the
// kernel and every refund paid exactly once. Its integration code (the
// gate, the agent and the supervisor, the restart wait, the ticket loop
// and the approval screen) is integration.go; the policy it hands the
// gate (the tools' definitions and the rules) is policy.go.
//
//	go run ./examples/support_desk [--db FILE] [--approver supervisor|person] [--crash-after N] [--seed S]
//	go run ./examples/support_desk --llm-url URL --llm-model NAME
//
// By default the model is scripted: an OpenAI-compatible server on
// loopback, inside the process, plays the model's tool calls for five
// tickets, so the agent loop (worker/llm) and the gate (toolgate) run as
// they would against a real model. With --llm-url (or BK_LLM_URL) a real
// endpoint plays the model instead.
//
// The program prints each decision record the tickets leave, with its
// code and reason and, for a refusal, the repair hint the model was given;
// then a summary and a ledger check of the payment API against the gate's
// records.
//
// With --db the records are kept in a SQLite file and the simulated world
// in a journal beside it. --crash-after N kills the process with SIGKILL
// inside a refund, after the payment API moved the money and before the
// gate recorded the result; running the program again against the same
// file lets the supervisor (package supervisor) recover the refund once
// the gate's lease ran out, finishes the tickets and shows that every
// refund was paid once.
//
// With --db the refunds that wait for approval are left to a person
// (--approver person, the default with --db): the program prints the bk
// serve and bk approve commands that decide them and leaves those tickets
// open; the next run against the same file applies the person's decisions
// and finishes them. In memory, or with --approver supervisor, a scripted
// supervisor decides them within the run.
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
	err := run(ctx, os.Args[1:], getenv, os.Stdout)
	stop()
	os.Exit(cmdline.Exit("support_desk", err, os.Stderr, func(w io.Writer) { io.WriteString(w, usage()) }))
}

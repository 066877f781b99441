// Command tracing runs one governed support-desk episode with
// OpenTelemetry's stdout exporter, so that a reader sees the spans the
// kernel and the tool-call gate emit and the links between them: the
// refused refund's decision span links to the span that wrote the stale
// order percept, under the lookup_order tool call that observed it.
//
//	go run ./examples/tracing            # one line per span, then the timeline
//	go run ./examples/tracing --verbose  # the exporter's JSON for each span instead
//
// The episode: lookup_order observes an order (valid for a minute); the
// analyst concludes a refund is due; two minutes later the model asks for
// the refund, and the kernel refuses it (STALE_EVIDENCE); the agent takes
// the safe fallback. The timeline and the explanation of the refusal are
// printed after the spans. Exit codes: 0 done, 1 failed, 2 a wrong
// command line (-h prints the usage to standard output).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/inspect"
	"github.com/blackboardkernel/bk/internal/cmdline"
	"github.com/blackboardkernel/bk/kernel"
	"github.com/blackboardkernel/bk/store/memstore"
	"github.com/blackboardkernel/bk/toolgate"
)

func main() {
	err := cli(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
	os.Exit(cmdline.Exit("tracing", err, os.Stderr, nil))
}

// cli parses the command line and runs the episode.
func cli(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tracing", flag.ContinueOnError)
	verbose := fs.Bool("verbose", false, "print each span as the OpenTelemetry stdout exporter writes it (indented JSON) instead of one line per span")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: tracing [--verbose]")
		fs.PrintDefaults()
	}
	if err := cmdline.Parse(fs, args, 0, stdout, stderr); err != nil {
		return err
	}
	return run(ctx, stdout, *verbose)
}

// run plays the episode and prints its spans (one line each, or verbose
// the exporter's JSON), the timeline and the refusal's explanation.
func run(ctx context.Context, w io.Writer, verbose bool) error {
	compact := !verbose
	// Spans go to the stdout exporter (or, compact, to an in-memory
	// recorder printed one line each).
	var opts []sdktrace.TracerProviderOption
	rec := tracetest.NewSpanRecorder()
	if compact {
		opts = append(opts, sdktrace.WithSpanProcessor(rec))
	} else {
		exp, err := stdouttrace.New(stdouttrace.WithWriter(w), stdouttrace.WithPrettyPrint())
		if err != nil {
			return err
		}
		opts = append(opts, sdktrace.WithSyncer(exp))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	defer tp.Shutdown(ctx)

	now := time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)
	tools := []toolgate.Tool{
		{ReadOnly: true, Name: "lookup_order", Description: "Look up an order.", Result: "order", ResultTTL: time.Minute,
			Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}},"required":["order_id"]}`),
			Effect: func(_ context.Context, inv toolgate.Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"order_id": inv.Args["order_id"], "amount": 89.0, "charged_twice": true}, nil
			}},
		// No request is recorded here, so the refund waives its scope
		// (toolgate.Gate.RecordRequest, Tool.Scope).
		{Unscoped: true, Name: "issue_refund", Description: "Refund an order.", Requires: []string{"refund_due"}, Result: "refund",
			Bindings:   []toolgate.Binding{{Arg: "order_id", Percept: "order", Op: "equal"}, {Arg: "amount", Percept: "order", Op: "at_most"}},
			Parameters: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"},"amount":{"type":"number"}},"required":["order_id","amount"]}`),
			Effect: func(context.Context, toolgate.Invocation) (blackboard.Payload, error) {
				return blackboard.Payload{"refund_id": "re_1"}, nil
			}},
	}
	store := memstore.New()
	defer store.Close() // the caller's store: closed after the gate, deferred below
	g, err := toolgate.New(ctx, toolgate.Config{
		Kernel: kernel.Config{Store: store, TracerProvider: tp, Clock: func() time.Time { return now },
			BeliefSpecs: []kernel.BeliefSpec{{Kind: "refund_due", DependsOn: []string{"order"}}}},
		Tools:     tools,
		Contracts: map[string][]string{"support": {"lookup_order", "issue_refund"}},
	})
	if err != nil {
		return err
	}
	defer g.Close()
	k := g.Kernel()
	const trace = "ticket-42"
	call := func(id, tool, args string) (toolgate.Result, error) {
		return g.Call(ctx, toolgate.Call{ID: id, Tool: tool, Args: json.RawMessage(args), Caller: "support", TraceID: trace})
	}
	if _, err := call("call_1", "lookup_order", `{"order_id":"A1"}`); err != nil {
		return err
	}
	if _, err := k.Proposer(blackboard.RolePlanner, "analyst").Submit(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Beliefs, Kind: "refund_due",
		Payload: blackboard.Payload{"value": true, "depends_on": []string{"order"}}}); err != nil {
		return err
	}
	now = now.Add(2 * time.Minute) // the order observation goes stale
	res, err := call("call_2", "issue_refund", `{"order_id":"A1","amount":89}`)
	if err != nil {
		return err
	}
	if _, err := k.Proposer(blackboard.RolePlanner, "agent").Submit(ctx, kernel.Entry{TraceID: trace, Slot: blackboard.Actions, Kind: kernel.FallbackQueueForReview,
		Payload: blackboard.Payload{"reason": string(res.Code)}}); err != nil {
		return err
	}
	if err := tp.ForceFlush(ctx); err != nil {
		return err
	}
	if compact {
		if err := printCompact(w, rec.Ended()); err != nil {
			return err
		}
	}

	fmt.Fprintln(w)
	tl, err := inspect.Timeline(ctx, store, blackboard.DefaultNamespace, trace)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprint(w, tl); err != nil {
		return err
	}
	for _, id := range tl.Refused() {
		r, err := store.Get(ctx, id)
		if err != nil {
			return err
		}
		if r.Slot != blackboard.Actions {
			continue
		}
		fmt.Fprintln(w)
		ex, err := inspect.Explain(ctx, store, id)
		if err != nil {
			return err
		}
		_, err = fmt.Fprint(w, ex)
		return err
	}
	return nil
}

// printCompact prints each span as "name [span id] <- parent  attrs  -> links".
func printCompact(w io.Writer, spans []sdktrace.ReadOnlySpan) error {
	for _, s := range spans {
		var attrs []string
		for _, a := range s.Attributes() {
			switch a.Key {
			case "bk.code", "bk.record_id", "bk.failed", "gen_ai.tool.name":
				attrs = append(attrs, string(a.Key)+"="+a.Value.String())
			}
		}
		line := fmt.Sprintf("%-28s span %s parent %s  %s", s.Name(), s.SpanContext().SpanID(), s.Parent().SpanID(), strings.Join(attrs, " "))
		for _, l := range s.Links() {
			line += "  -> link to span " + l.SpanContext.SpanID().String()
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

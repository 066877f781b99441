package inspect

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/internal/ledger"
	"github.com/blackboardkernel/bk/reason"
	"github.com/blackboardkernel/bk/replay"
	"github.com/blackboardkernel/bk/rules"
	"github.com/blackboardkernel/bk/store"
)

// ruleFlags collects the repeatable --rule NAME=EXPR of bk replay.
// noPolicyNamed is why a listed trace is not replayed: it was not run
// through a tool gate ([replay.ErrNoPolicyNamed]).
const noPolicyNamed = "no decision record of the trace names a policy snapshot"

type ruleFlags []rules.Spec

func (r *ruleFlags) String() string { return "" }

// Set parses NAME=EXPR: the recorded rule NAME, with EXPR as its
// expression.
func (r *ruleFlags) Set(v string) error {
	name, expr, ok := strings.Cut(v, "=")
	if !ok || strings.TrimSpace(name) == "" || strings.TrimSpace(expr) == "" {
		return fmt.Errorf("want NAME=EXPR, not %q", v)
	}
	*r = append(*r, rules.Spec{Name: strings.TrimSpace(name), Expr: expr})
	return nil
}

func replayFlags(fs *flag.FlagSet, e *env) {
	fs.StringVar(&e.trace, "trace", "", "replay only this trace (default: every trace of --namespace, or of every namespace)")
	fs.Var(&e.rules, "rule", "replay with the recorded rule `NAME=EXPR` given this CEL expression instead (repeatable)")
}

// Replayed is one trace of `bk replay`: its report, or why it was not
// replayed (its records name no policy snapshot: nothing the gate
// decided).
type Replayed struct {
	replay.Report
	Skipped string `json:"skipped,omitempty"`
}

// Replay replays trace (every trace of namespace, or of every namespace,
// when trace is empty) from s with the options (see package replay), and
// returns one [Replayed] per trace. A trace none of whose records names
// a policy snapshot is listed as skipped when trace is empty, and an
// error when it is the one asked for. Errors are replay's, and the
// store's.
func Replay(ctx context.Context, s store.Store, namespace, trace string, opts ...replay.Option) ([]Replayed, error) {
	type target struct{ ns, trace string }
	var targets []target
	if trace != "" {
		ns, err := traceNamespace(ctx, s, namespace, trace)
		if err != nil {
			return nil, err
		}
		targets = append(targets, target{ns, trace})
	} else {
		for ts, err := range store.ListTraces(ctx, s, namespace) {
			if err != nil {
				return nil, err
			}
			if !audit.IsPolicyTrace(ts.TraceID) && ts.TraceID != ledger.Trace { // the gate's and the kernel's own
				targets = append(targets, target{ts.Namespace, ts.TraceID})
			}
		}
	}
	out := []Replayed{}
	for _, t := range targets {
		rep, err := replay.Trace(ctx, s, t.ns, t.trace, opts...)
		if trace == "" && errors.Is(err, replay.ErrNoPolicyNamed) {
			out = append(out, Replayed{Report: replay.Report{Namespace: t.ns, TraceID: t.trace, First: -1}, Skipped: noPolicyNamed})
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Replayed{Report: rep})
	}
	return out, nil
}

// runReplay prints each trace's replay: a line of counts and the first
// divergence, then each decision (recorded and replayed), then the notes.
// A decision that differs is a finding, not an error: the exit code is 0.
func runReplay(ctx context.Context, e *env, _ []string) error {
	var opts []replay.Option
	if len(e.rules) > 0 {
		opts = append(opts, replay.WithRules(e.rules...))
	}
	reps, err := Replay(ctx, e.store, e.namespace, e.trace, opts...)
	if err != nil {
		return err
	}
	if e.json {
		return writeJSON(e.out, reps)
	}
	if len(reps) == 0 {
		_, err := fmt.Fprintln(e.out, "no traces")
		return err
	}
	for i, r := range reps {
		if i > 0 {
			fmt.Fprintln(e.out)
		}
		if r.Skipped != "" {
			fmt.Fprintf(e.out, "%s (%s): not replayed: %s\n", Inert(r.TraceID), Inert(r.Namespace), Inert(r.Skipped))
			continue
		}
		first := "none: every decision as recorded"
		if r.First >= 0 {
			d := r.Decisions[r.First]
			first = d.Record
			if first == "" {
				first = d.Replayed + " (replay only)"
			}
		}
		c := r.Counts
		fmt.Fprintf(e.out, "%s (%s, policy %s): %d decisions: %d same, %d changed, %d missing, %d extra; first divergence: %s\n",
			Inert(r.TraceID), Inert(r.Namespace), Inert(strings.Join(r.Policies, ", ")), len(r.Decisions), c[replay.Same], c[replay.Changed], c[replay.Missing], c[replay.Extra], Inert(first))
		tw := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  MATCH\tSTAGE\tKIND\tRECORD\tRECORDED\tREPLAYED")
		for _, d := range r.Decisions {
			cols := []string{string(d.Match), d.Stage, clip(d.Kind, 24), orElse(d.Record, "-"),
				replayOutcome(d.Recorded, d.RecordedCode), replayOutcome(d.Replay, d.ReplayCode) + " " + d.Replayed}
			for i := range cols {
				cols[i] = Inert(cols[i])
			}
			fmt.Fprintln(tw, "  "+strings.TrimSpace(strings.Join(cols, "\t")))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, n := range r.Notes {
			fmt.Fprintf(e.out, "  note: %s\n", Inert(n))
		}
	}
	return nil
}

func replayOutcome(o audit.Outcome, code reason.Code) string {
	if o == "" {
		return "-"
	}
	return string(o) + " " + string(code)
}

func orElse(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

package inspect

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/blackboardkernel/bk/audit"
	"github.com/blackboardkernel/bk/internal/ledger"

	"github.com/blackboardkernel/bk/blackboard"
	"github.com/blackboardkernel/bk/store"
)

// TraceRow is one line of `bk traces`: a trace's summary with its
// outcome and decision counts (from its [Timeline]).
type TraceRow struct {
	store.TraceSummary
	Decisions int `json:"decisions"`
	Refusals  int `json:"refusals"`
	// Outcome is what happened to the trace's actions, by type
	// ([TimelineReport.Outcome]); Actions the same as counts. A trace of
	// the gate's or the kernel's own, which holds no action, says what it
	// holds instead: "policy snapshots" or "signed checkpoints".
	Outcome string          `json:"outcome"`
	Actions []ActionOutcome `json:"actions,omitempty"`
}

// Traces lists the traces of s (of namespace, when not empty) with their
// outcome and counts, in the order the store lists them.
func Traces(ctx context.Context, s store.Store, namespace string) ([]TraceRow, error) {
	var out []TraceRow
	for ts, err := range store.ListTraces(ctx, s, namespace) {
		if err != nil {
			return nil, err
		}
		tl, err := Timeline(ctx, s, ts.Namespace, ts.TraceID)
		if err != nil {
			return nil, err
		}
		row := TraceRow{TraceSummary: ts, Decisions: tl.Decisions, Refusals: tl.Refusals, Outcome: tl.Outcome, Actions: tl.Actions}
		switch {
		case audit.IsPolicyTrace(ts.TraceID):
			row.Outcome = "policy snapshots"
		case ts.TraceID == ledger.Trace:
			row.Outcome = "signed checkpoints"
		}
		out = append(out, row)
	}
	return out, nil
}

func runTraces(ctx context.Context, e *env, _ []string) error {
	rows, err := Traces(ctx, e.store, e.namespace)
	if err != nil {
		return err
	}
	if rows == nil {
		rows = []TraceRow{} // JSON: [] rather than null
	}
	return writeList(e, rows, "no traces", "TRACE\tNAMESPACE\tRECORDS\tDECISIONS\tREFUSED\tLAST\tOUTCOME", func(r TraceRow) []string {
		return []string{clip(r.TraceID, 36), clip(r.Namespace, 16), strconv.Itoa(r.Records), strconv.Itoa(r.Decisions),
			strconv.Itoa(r.Refusals), stamp(r.LastMS), r.Outcome}
	})
}

func runTimeline(ctx context.Context, e *env, args []string) error {
	tl, err := Timeline(ctx, e.store, e.namespace, args[0])
	if err != nil {
		return err
	}
	if !e.inNamespace(tl.Namespace) {
		return fmt.Errorf("trace %q belongs to namespace %q, not %q", args[0], tl.Namespace, e.namespace)
	}
	if e.json {
		return tl.WriteJSON(e.out)
	}
	if e.steps {
		return tl.WriteSteps(e.out)
	}
	return tl.WriteText(e.out)
}

func runExplain(ctx context.Context, e *env, args []string) error {
	r, err := e.store.Get(ctx, args[0])
	if err != nil {
		return fmt.Errorf("no record %q (record ids look like actions:TRACE:N; bk timeline TRACE lists them)", args[0])
	}
	if !e.inNamespace(r.Namespace) {
		return fmt.Errorf("record %q belongs to namespace %q, not %q", args[0], r.Namespace, e.namespace)
	}
	ex, err := Explain(ctx, e.store, args[0])
	if err != nil {
		return err
	}
	if e.json {
		return ex.WriteJSON(e.out)
	}
	return ex.WriteText(e.out)
}

// traceNamespace resolves the namespace of trace traceID: namespace
// itself when it is set, else the one namespace that holds a trace of that
// id (one trace id in two namespaces is two traces). A trace no namespace
// holds resolves to the default namespace, where it is not found either;
// an id that several namespaces hold is [blackboard.ErrInvalidInput],
// naming them, so that the caller names one.
func traceNamespace(ctx context.Context, s store.Store, namespace, traceID string) (string, error) {
	if namespace != "" {
		return namespace, nil
	}
	var found []string
	for ts, err := range store.ListTraces(ctx, s, "") {
		if err != nil {
			return "", err
		}
		if ts.TraceID == traceID {
			found = append(found, ts.Namespace)
		}
	}
	switch len(found) {
	case 0:
		return blackboard.DefaultNamespace, nil
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("inspect: trace %q is in namespaces %s: name one: %w", traceID, strings.Join(found, ", "), blackboard.ErrInvalidInput)
}
